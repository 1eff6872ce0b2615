package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.FerryLookupJoinOperator;
import io.ferrystream.ferry.operators.lookup.AsyncLookupBatch;
import io.ferrystream.ferry.operators.lookup.BatchFetcher;
import io.ferrystream.ferry.operators.lookup.FetchingLookupBatch;
import io.ferrystream.ferry.operators.lookup.FlinkFields;
import io.ferrystream.ferry.operators.lookup.LookupJoinBatch;
import io.ferrystream.ferry.operators.lookup.LookupKeys;
import io.ferrystream.ferry.operators.lookup.SyncLookupBatch;

import org.apache.calcite.plan.RelOptTable;
import org.apache.calcite.rel.core.JoinRelType;
import org.apache.calcite.rex.RexNode;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.api.java.tuple.Tuple2;
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
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeConfig;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.exec.spec.TemporalTableSourceSpec;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecLookupJoin;
import org.apache.flink.table.planner.plan.utils.FunctionCallUtil;
import org.apache.flink.table.planner.plan.utils.LookupJoinUtil;
import org.apache.flink.table.planner.plan.utils.RexLiteralUtil;
import org.apache.flink.table.runtime.operators.join.FlinkJoinType;
import org.apache.flink.table.runtime.operators.join.lookup.LookupJoinRunner;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonIgnore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Flink's {@link StreamExecLookupJoin} translated to {@link FerryLookupJoinOperator}.
 *
 * <p>Flink builds its lookup join as always ({@code createJoinTransformation}: validation, the
 * lookup function with its cache and retry wrappers, the generated fetcher, calc, collector and
 * pre-filter, the runner, a custom shuffle); Ferry then takes Flink's runner out of the operator
 * factory (the {@code ProcessOperator}'s function, or the {@code AsyncWaitOperatorFactory}'s
 * function, timeout, capacity and output mode) and puts it into its own operator, in a
 * transformation with Flink's input, name ({@code lookup-join}), description, UID, parallelism,
 * output type and chaining. Any other transformation (upsert materialization, key-ordered async
 * lookup) stays Flink's, as does a join whose switches changed since planning.
 *
 * <p>With a {@link BatchFetcherFactory} that answers for the temporal table, a sync join runs
 * {@link FetchingLookupBatch} (one fetch per batch) instead of Flink's per-row runner.
 */
public class FerryStreamExecLookupJoin extends StreamExecLookupJoin {
    private static final Logger LOG = LoggerFactory.getLogger(FerryStreamExecLookupJoin.class);

    // Copies of Flink's private fields, named apart from them: a field of the same name, even one
    // Jackson ignores, hides Flink's JSON property, and COMPILE PLAN would leave it out.
    @JsonIgnore private final FlinkJoinType flinkJoinType;
    @JsonIgnore private final Map<Integer, FunctionCallUtil.FunctionParam> flinkKeys;
    @JsonIgnore private final boolean flinkMaterialize;
    @JsonIgnore private final ChangelogMode flinkProbeChangelog;
    @JsonIgnore @Nullable private final FunctionCallUtil.AsyncOptions flinkAsyncOptions;
    @JsonIgnore @Nullable private final BatchFetcherFactory flinkFetchers;
    /** Set when translation fell back to Flink's operator. */
    @JsonIgnore private String fallbackReason;

    /**
     * Flink's public constructor's arguments, plus {@code flinkFetchers}: where a sync join gets a
     * {@link BatchFetcher} for its temporal table; null runs Flink's per-row runner.
     */
    public FerryStreamExecLookupJoin(
            ReadableConfig tableConfig,
            FlinkJoinType joinType,
            @Nullable RexNode preFilterCondition,
            @Nullable RexNode remainingJoinCondition,
            TemporalTableSourceSpec temporalTableSourceSpec,
            Map<Integer, FunctionCallUtil.FunctionParam> lookupKeys,
            @Nullable List<RexNode> projectionOnTemporalTable,
            @Nullable RexNode filterOnTemporalTable,
            boolean lookupKeyContainsPrimaryKey,
            boolean upsertMaterialize,
            @Nullable FunctionCallUtil.AsyncOptions asyncLookupOptions,
            @Nullable LookupJoinUtil.RetryLookupOptions retryOptions,
            ChangelogMode inputChangelogMode,
            @Nullable int[] inputUpsertKey,
            InputProperty inputProperty,
            RowType outputType,
            String description,
            boolean preferCustomShuffle,
            @Nullable BatchFetcherFactory flinkFetchers) {
        super(tableConfig, joinType, preFilterCondition, remainingJoinCondition, temporalTableSourceSpec, lookupKeys,
                projectionOnTemporalTable, filterOnTemporalTable, lookupKeyContainsPrimaryKey, upsertMaterialize,
                asyncLookupOptions, retryOptions, inputChangelogMode, inputUpsertKey, inputProperty, outputType,
                description, preferCustomShuffle);
        this.flinkJoinType = joinType;
        this.flinkKeys = lookupKeys;
        this.flinkMaterialize = upsertMaterialize;
        this.flinkProbeChangelog = inputChangelogMode;
        this.flinkAsyncOptions = asyncLookupOptions;
        this.flinkFetchers = flinkFetchers;
    }

    /** Why translation built Flink's operator after all; empty when it built Ferry's. */
    @JsonIgnore
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    protected String getSimplifiedName() {
        return fallbackReason == null ? "FerryLookupJoin" : "LookupJoin";
    }

    @SuppressWarnings("unchecked")
    @Override
    protected Transformation<RowData> createJoinTransformation(
            PlannerBase planner, ExecNodeConfig config, boolean upsertMaterialize, boolean lookupKeyContainsPrimaryKey) {
        Transformation<RowData> flink =
                super.createJoinTransformation(planner, config, upsertMaterialize, lookupKeyContainsPrimaryKey);
        String reason = NativeMatcher.disabledReason(config, LookupJoinMatcher.ENABLED);
        if (reason == null) {
            // FlinkJoinType and Calcite's JoinRelType name the same join types alike
            reason = LookupJoinMatcher.shapeReason(
                    JoinRelType.valueOf(flinkJoinType.name()), flinkMaterialize, flinkProbeChangelog, flinkAsyncOptions);
        }
        LookupJoinBatch batch = null;
        if (reason == null) {
            if (!(flink instanceof OneInputTransformation)) {
                reason = "Flink built a " + flink.getClass().getSimpleName() + ": not native";
            } else {
                StreamOperatorFactory<RowData> factory = ((OneInputTransformation<RowData, RowData>) flink).getOperatorFactory();
                batch = lookupBatch(factory, planner, (RowType) getInputEdges().get(0).getOutputType());
                if (batch == null) {
                    reason = "Flink built " + factory.getClass().getSimpleName() + ": not native";
                }
            }
        }
        if (reason != null) {
            fallbackReason = reason;
            LOG.warn("Ferry: {} changed since planning ({}); using Flink's operator", getDescription(), reason);
            return flink;
        }
        OneInputTransformation<RowData, RowData> t = (OneInputTransformation<RowData, RowData>) flink;
        FerryLookupJoinOperator operator =
                new FerryLookupJoinOperator(batch, NativeExecNodes.batching(config, false), getDescription());
        SimpleOperatorFactory<RowData> factory = SimpleOperatorFactory.of(operator);
        factory.setChainingStrategy(t.getOperatorFactory().getChainingStrategy());
        OneInputTransformation<RowData, RowData> ferry = new OneInputTransformation<>(
                (Transformation<RowData>) t.getInputs().get(0), t.getName(), factory, t.getOutputType(),
                t.getParallelism(), t.isParallelismConfigured());
        ferry.setDescription(t.getDescription());
        if (t.getUid() != null) {
            ferry.setUid(t.getUid());
        }
        if (t.getMaxParallelism() > 0) {
            ferry.setMaxParallelism(t.getMaxParallelism());
        }
        return ferry;
    }

    /**
     * The batch form of Flink's operator factory: its sync runner (or, with a fetcher for the
     * table, the fetching batch on its generated pieces) or its async function and options; null
     * for any other factory. A factory of the expected class whose fields Ferry cannot read fails
     * the translation with the field named.
     */
    @SuppressWarnings("unchecked")
    @Nullable
    private LookupJoinBatch lookupBatch(StreamOperatorFactory<RowData> factory, PlannerBase planner, RowType probeType) {
        try {
            if (factory instanceof SimpleOperatorFactory
                    && ((SimpleOperatorFactory<RowData>) factory).getOperator() instanceof ProcessOperator) {
                ProcessFunction<RowData, RowData> runner =
                        ((ProcessOperator<RowData, RowData>) ((SimpleOperatorFactory<RowData>) factory).getOperator())
                                .getUserFunction();
                if (flinkFetchers != null && runner instanceof LookupJoinRunner) {
                    RelOptTable table = getTemporalTableSourceSpec().getTemporalTable(
                            planner.getFlinkContext(), (FlinkTypeFactory) planner.getTypeFactory());
                    LookupKeys lookupKeys = lookupKeys(flinkKeys, probeType);
                    BatchFetcher fetcher = flinkFetchers.create(table, lookupKeys);
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
            throw new TableException("Ferry cannot take " + getDescription() + " over from Flink: " + e.getMessage(), e);
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
