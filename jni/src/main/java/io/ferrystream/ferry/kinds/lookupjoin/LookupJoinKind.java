package io.ferrystream.ferry.kinds.lookupjoin;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.Verdict;
import io.ferrystream.ferry.planner.candidates.LookupJoinCandidate;

import org.apache.calcite.plan.RelOptTable;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.JoinRelType;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.streaming.api.datastream.AsyncDataStream;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.async.AsyncFunction;
import org.apache.flink.streaming.api.operators.ProcessOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.operators.async.AsyncWaitOperatorFactory;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.streaming.util.retryable.AsyncRetryStrategies;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.delegation.PlannerBase;
import org.apache.flink.table.planner.plan.nodes.exec.common.CommonExecLookupJoin;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecLookupJoin;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLookupJoin;
import org.apache.flink.table.planner.plan.schema.LegacyTableSourceTable;
import org.apache.flink.table.planner.plan.utils.FunctionCallUtil;
import org.apache.flink.table.planner.plan.utils.LookupJoinUtil;
import org.apache.flink.table.planner.plan.utils.RexLiteralUtil;
import org.apache.flink.table.runtime.operators.join.FlinkJoinType;
import org.apache.flink.table.runtime.operators.join.lookup.LookupJoinRunner;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

import javax.annotation.Nullable;

import java.util.Map;
import java.util.stream.Collectors;

import scala.collection.JavaConverters;

/**
 * The lookup join kind ({@value FerryLookupJoinOperator#KIND}): Flink's lookup join run by {@link
 * FerryLookupJoinOperator}, Flink's own runner on batches of probe rows (and for a JDBC table on
 * PostgreSQL, the lookups in Go: {@link JdbcLookups}). Native: INNER and LEFT joins of an
 * insert-only probe on a {@code LookupTableSource}, sync or async (ordered or unordered), any
 * connector, any key, pre-filter, calc and residual condition (they stay Flink's generated code).
 * Flink's otherwise, with the reason: upsert materialization, an updating probe, key-ordered async
 * lookup, another join type, a legacy {@code LookupableTableSource}. The kind keeps no state, so
 * the state backend does not matter.
 *
 * <p>Translation lets Flink build its lookup join as always ({@code createJoinTransformation}:
 * validation, the lookup function with its cache and retry wrappers, the generated fetcher, calc,
 * collector and pre-filter, the runner, a custom shuffle), then takes Flink's runner out of the
 * operator factory (the {@code ProcessOperator}'s function, or the {@code
 * AsyncWaitOperatorFactory}'s function, timeout, capacity and output mode) and puts it into its own
 * operator, in a transformation with Flink's input, description, UID, parallelism, output type and
 * chaining, and Ferry's display name. Any other transformation (upsert materialization, key-ordered
 * async lookup) stays Flink's.
 */
public final class LookupJoinKind extends NativeKind<StreamPhysicalLookupJoin, StreamExecLookupJoin> {
    /** The kill switch of the native lookup join. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.killSwitch("lookup-join", "Ferry's lookup join operator (batches of probe rows through Flink's runners)");

    public static final String MATERIALIZE_REASON = "upsert-materialized lookup join (KeyedLookupJoinWrapper, under"
            + " table.optimizer.non-deterministic-update.strategy=TRY_RESOLVE): not native yet";

    public LookupJoinKind() {
        super(FerryLookupJoinOperator.KIND, StreamPhysicalLookupJoin.class, StreamExecLookupJoin.class, ENABLED,
                LookupJoinCandidate::new);
    }

    @Override
    protected boolean keepsNativeState() {
        return false;
    }

    /**
     * Flink's planner sets upsert materialization after Ferry's program decided (its
     * non-deterministic-update check runs on the optimized plan): such a node stays Flink's, with
     * that reason.
     */
    @Override
    protected Verdict verdictOfCopy(StreamPhysicalLookupJoin copy, Verdict verdict) {
        return copy.upsertMaterialize() ? verdict.fallback(MATERIALIZE_REASON) : verdict;
    }


    @Override
    protected Decision match(StreamPhysicalLookupJoin join, ReadableConfig config) {
        if (join.temporalTable() instanceof LegacyTableSourceTable) {
            return Decision.fallback("legacy table source (LookupableTableSource): not native");
        }
        String reason = shapeReason(join.joinType(), join.upsertMaterialize(), join.inputChangelogMode(),
                join.asyncOptions().isDefined() ? join.asyncOptions().get() : null);
        return reason == null ? Decision.nativeNode() : Decision.fallback(reason);
    }

    /** {@code ferry=[…]}, then, for a native join of a JDBC table, where its lookups run ({@code fetch=[…]}). */
    @Override
    protected RelWriter explainTerms(StreamPhysicalLookupJoin join, Verdict verdict, RelWriter pw) {
        super.explainTerms(join, verdict, pw);
        String fetch = null;
        if (verdict.isNative()) {
            int[] dims = JavaConverters.setAsJavaSet(join.allLookupKeys().keySet()).stream()
                    .mapToInt(k -> (Integer) k).sorted().toArray();
            fetch = new JdbcLookups(join.tableConfig(), join.retryOptions().isDefined()).explain(join.temporalTable(), dims);
        }
        return pw.itemIf("fetch", fetch, fetch != null);
    }

    @Override
    protected Transformation<?> translate(StreamExecLookupJoin flink, NativeTranslation t) {
        Class<?> c = CommonExecLookupJoin.class;
        FlinkJoinType joinType = FlinkFields.read(flink, c, "joinType");
        ChangelogMode probeChangelog = FlinkFields.read(flink, c, "inputChangelogMode");
        FunctionCallUtil.AsyncOptions asyncOptions = FlinkFields.read(flink, c, "asyncLookupOptions");
        boolean materialize = FlinkFields.<Boolean>read(flink, StreamExecLookupJoin.class, "upsertMaterialize");
        // FlinkJoinType and Calcite's JoinRelType name the same join types alike
        String reason = shapeReason(JoinRelType.valueOf(joinType.name()), materialize, probeChangelog, asyncOptions);
        if (reason != null) {
            return t.fallback(reason);
        }
        Transformation<?> flinks = t.flinkTransformation();
        if (!(flinks instanceof OneInputTransformation)) {
            return t.fallback("Flink built a " + flinks.getClass().getSimpleName() + ": not native");
        }
        @SuppressWarnings("unchecked")
        OneInputTransformation<RowData, RowData> join = (OneInputTransformation<RowData, RowData>) flinks;
        LookupJoinBatch batch = lookupBatch(flink, join.getOperatorFactory(), t);
        if (batch == null) {
            return t.fallback("Flink built " + join.getOperatorFactory().getClass().getSimpleName() + ": not native");
        }
        SimpleOperatorFactory<RowData> factory =
                SimpleOperatorFactory.of(new FerryLookupJoinOperator(batch, t.batching(false), t.description()));
        factory.setChainingStrategy(join.getOperatorFactory().getChainingStrategy());
        @SuppressWarnings("unchecked")
        Transformation<RowData> input = (Transformation<RowData>) join.getInputs().get(0);
        OneInputTransformation<RowData, RowData> ferry = new OneInputTransformation<>(input,
                t.meta(CommonExecLookupJoin.LOOKUP_JOIN_TRANSFORMATION).getName(), factory, join.getOutputType(),
                join.getParallelism(), join.isParallelismConfigured());
        ferry.setDescription(join.getDescription());
        if (join.getUid() != null) {
            ferry.setUid(join.getUid());
        }
        if (join.getMaxParallelism() > 0) {
            ferry.setMaxParallelism(join.getMaxParallelism());
        }
        return ferry;
    }

    /** Why the join's shape keeps it Flink's, or null; translation repeats it. */
    static String shapeReason(
            JoinRelType joinType,
            boolean upsertMaterialize,
            ChangelogMode probeChangelog,
            @Nullable FunctionCallUtil.AsyncOptions asyncOptions) {
        if (joinType != JoinRelType.INNER && joinType != JoinRelType.LEFT) {
            return "join type " + joinType + ": only INNER and LEFT lookup joins";
        }
        if (upsertMaterialize) {
            return MATERIALIZE_REASON;
        }
        if (asyncOptions != null && asyncOptions.keyOrdered) {
            return "key-ordered async lookup (table.exec.async-lookup.key-ordered-enabled on an updating probe): not native yet";
        }
        if (!probeChangelog.containsOnly(RowKind.INSERT)) {
            return "updating probe (changelog " + probeChangelog.getContainedKinds().stream().map(RowKind::shortString)
                    .collect(Collectors.joining(",")) + "): not native yet";
        }
        return null;
    }

    /**
     * The batch form of Flink's operator factory: its sync runner (or, with a fetcher for the
     * table, the fetching batch on its generated pieces) or its async function and options; null
     * for any other factory. A factory of the expected class whose fields Ferry cannot read fails
     * the translation with the field named.
     */
    @SuppressWarnings("unchecked")
    @Nullable
    private static LookupJoinBatch lookupBatch(StreamExecLookupJoin flink, StreamOperatorFactory<RowData> factory, NativeTranslation t) {
        PlannerBase planner = t.planner();
        try {
            if (factory instanceof SimpleOperatorFactory
                    && ((SimpleOperatorFactory<RowData>) factory).getOperator() instanceof ProcessOperator) {
                ProcessFunction<RowData, RowData> runner =
                        ((ProcessOperator<RowData, RowData>) ((SimpleOperatorFactory<RowData>) factory).getOperator())
                                .getUserFunction();
                if (runner instanceof LookupJoinRunner) {
                    RelOptTable table = flink.getTemporalTableSourceSpec().getTemporalTable(
                            planner.getFlinkContext(), (FlinkTypeFactory) planner.getTypeFactory());
                    LookupKeys lookupKeys = lookupKeys(FlinkFields.read(flink, CommonExecLookupJoin.class, "lookupKeys"), t.inputType(0));
                    boolean retryHint = FlinkFields.read(flink, CommonExecLookupJoin.class, "retryOptions") != null;
                    BatchFetcher fetcher = new JdbcLookups(t.config(), retryHint).create(table, lookupKeys);
                    if (fetcher != null) {
                        return new FetchingLookupBatch((LookupJoinRunner) runner, lookupKeys, fetcher);
                    }
                }
                return new SyncLookupBatch(runner);
            }
            if (factory instanceof AsyncWaitOperatorFactory) {
                // the lookup join's retries are inside the function (RetryableAsyncLookupFunctionDelegator);
                // Flink gives the operator none, and Ferry's batch has no operator-level retry
                Object retry = FlinkFields.read(factory, AsyncWaitOperatorFactory.class, "asyncRetryStrategy");
                if (retry != null && retry != AsyncRetryStrategies.NO_RETRY_STRATEGY) {
                    return null;
                }
                AsyncFunction<RowData, RowData> function =
                        FlinkFields.read(factory, AsyncWaitOperatorFactory.class, "asyncFunction");
                long timeout = FlinkFields.<Long>read(factory, AsyncWaitOperatorFactory.class, "timeout");
                int capacity = FlinkFields.<Integer>read(factory, AsyncWaitOperatorFactory.class, "capacity");
                AsyncDataStream.OutputMode mode = FlinkFields.read(factory, AsyncWaitOperatorFactory.class, "outputMode");
                return new AsyncLookupBatch(function, timeout, capacity, mode);
            }
            return null;
        } catch (IllegalStateException e) {
            throw new TableException("Ferry cannot take " + t.description() + " over from Flink: " + e.getMessage(), e);
        }
    }

    /** The join's lookup flinkKeys as Flink's fetcher builds them: dim-column order, constants as internal data. */
    static LookupKeys lookupKeys(Map<Integer, FunctionCallUtil.FunctionParam> flinkKeys, RowType probeType) {
        int[] dims = LookupJoinUtil.getOrderedLookupKeys(flinkKeys.keySet());
        int[] fields = new int[dims.length];
        LogicalType[] types = new LogicalType[dims.length];
        Object[] constants = new Object[dims.length];
        for (int i = 0; i < dims.length; i++) {
            FunctionCallUtil.FunctionParam p = flinkKeys.get(dims[i]);
            if (p instanceof FunctionCallUtil.FieldRef) {
                fields[i] = ((FunctionCallUtil.FieldRef) p).index;
                types[i] = probeType.getTypeAt(fields[i]);
            } else {
                FunctionCallUtil.Constant c = (FunctionCallUtil.Constant) p;
                fields[i] = -1;
                // as Flink's generated fetcher: the literal's internal value, of the literal's type
                Tuple2<Object, LogicalType> v = RexLiteralUtil.toFlinkInternalValue(c.literal);
                types[i] = v.f1;
                constants[i] = v.f0;
            }
        }
        return new LookupKeys(dims, fields, types, constants);
    }
}
