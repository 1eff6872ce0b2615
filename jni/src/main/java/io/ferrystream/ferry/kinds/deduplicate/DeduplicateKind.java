package io.ferrystream.ferry.kinds.deduplicate;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeSupport;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.candidates.RankCandidate;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.nodes.exec.StateMetadata;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecDeduplicate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalRank;
import org.apache.flink.table.planner.plan.utils.ChangelogPlanUtils;
import org.apache.flink.table.planner.plan.utils.RankUtil;
import org.apache.flink.table.runtime.typeutils.TypeCheckUtils;
import org.apache.flink.table.types.logical.RowType;

import java.util.List;
import java.util.Locale;

/**
 * The deduplication kind ({@value DeduplicateSpec#KIND}): Flink's {@code StreamExecDeduplicate},
 * every function its translation picks (processing or row time, first or last row, with or
 * without mini-batch), run by {@link FerryDeduplicateOperator}. Flink plans a deduplication as a
 * {@code StreamPhysicalRank} (ROW_NUMBER, rank 1 to 1, no rank number, one ORDER BY on a time
 * attribute, insert-only input: {@code RankUtil.canConvertToDeduplicate}); the kind claims only
 * those ranks, and every other one (a Top-N) stays Flink's node, untouched. Flink's operator
 * otherwise, with the reason (docs/operators/deduplicate.md). Flink's own state of the node crosses
 * savepoints both ways ({@link FlinkDeduplicateState}).
 */
public final class DeduplicateKind extends NativeKind<StreamPhysicalRank, StreamExecDeduplicate> {
    /** The kill switch of the native deduplication. */
    public static final ConfigOption<Boolean> ENABLED = FerryOptions.killSwitch("deduplicate", "the native deduplication");

    public DeduplicateKind() {
        super(DeduplicateSpec.KIND, StreamPhysicalRank.class, StreamExecDeduplicate.class, ENABLED, RankCandidate::new);
    }

    /** {@code StreamExecDeduplicate}'s description ({@link #description}), not the rank's. */
    @Override
    protected String candidateDescription(StreamPhysicalRank rank) {
        return description(rank);
    }

    /** The ranks Flink translates to {@code StreamExecDeduplicate}, as {@code StreamPhysicalRank} decides. */
    @Override
    protected boolean claims(StreamPhysicalRank rank) {
        return RankUtil.canConvertToDeduplicate(rank);
    }

    @Override
    protected Decision match(StreamPhysicalRank rank, ReadableConfig config) {
        RowType input = FlinkTypeFactory.toLogicalRowType(rank.getInput().getRowType());
        boolean rowtime = rank.sortOnRowTime();
        boolean keepLastRow = RankUtil.keepLastDeduplicateRow(rank.orderKey());
        boolean outputInsertOnly = ChangelogPlanUtils.isInsertOnly(rank);
        String reason = shapeReason(input, rowtime, outputInsertOnly, config);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        // as StreamPhysicalRank#translateToExecNode builds StreamExecDeduplicate, and its description
        long ttl = config.get(ExecutionConfigOptions.IDLE_STATE_RETENTION).toMillis();
        DeduplicateSpec spec = build(description(rank), input, rank.partitionKey().toArray(), rowtime, keepLastRow,
                outputInsertOnly, ChangelogPlanUtils.generateUpdateBefore(rank), ttl, config);
        RowType output = FlinkTypeFactory.toLogicalRowType(rank.getRowType());
        return NativeSupport.check(spec, output).map(Decision::fallback).orElse(Decision.nativeNode());
    }

    @Override
    protected Transformation<?> translate(StreamExecDeduplicate flink, NativeTranslation t) {
        Class<?> c = StreamExecDeduplicate.class;
        int[] keys = FlinkFields.read(flink, c, "uniqueKeys");
        boolean rowtime = FlinkFields.<Boolean>read(flink, c, "isRowtime");
        boolean keepLastRow = FlinkFields.<Boolean>read(flink, c, "keepLastRow");
        boolean outputInsertOnly = FlinkFields.<Boolean>read(flink, c, "outputInsertOnly");
        boolean generateUpdateBefore = FlinkFields.<Boolean>read(flink, c, "generateUpdateBefore");
        List<StateMetadata> stateMetadata = FlinkFields.read(flink, c, "stateMetadataList");
        RowType input = t.inputType(0);
        // what the planner checked; a plan loaded from JSON is decided here only
        String reason = shapeReason(input, rowtime, outputInsertOnly, t.config());
        DeduplicateSpec spec = null;
        if (reason == null) {
            long ttl = StateMetadata.getStateTtlForOneInputOperator(t.config(), stateMetadata);
            spec = build(t.description(), input, keys, rowtime, keepLastRow, outputInsertOnly, generateUpdateBefore, ttl,
                    t.config());
            reason = t.check(spec, t.outputType()).orElse(null);
        }
        if (reason != null) {
            return t.fallback(reason);
        }
        // mini-batch: a batch is a bundle of Flink's count trigger, cut by size, watermark, barrier
        FerryDeduplicateOperator operator = new FerryDeduplicateOperator(spec, t.batching(spec.miniBatch()));
        FlinkDeduplicateState.Form form = spec.outputInsertOnly() ? FlinkDeduplicateState.Form.WAITING
                : !rowtime && !keepLastRow ? FlinkDeduplicateState.Form.FLAG : FlinkDeduplicateState.Form.ROW;
        operator.importingFlinkState(new FlinkDeduplicateState(input, keys, form, spec.stateTtlMs() > 0));
        return t.oneInput(StreamExecDeduplicate.DEDUPLICATE_TRANSFORMATION, operator, keys);
    }

    /**
     * Why Flink's translation of the node would fail, or its rows cannot cross into Go, or null;
     * translation repeats it.
     */
    static String shapeReason(RowType input, boolean rowtime, boolean outputInsertOnly, ReadableConfig config) {
        boolean miniBatch = config.get(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ENABLED);
        if (rowtime && rowtimeIndex(input) < 0) {
            return "row-time deduplication without a row-time field in its input: Flink rejects it at translation";
        }
        if (miniBatch && outputInsertOnly) {
            return "insert-only deduplication under mini-batch: Flink rejects it at translation";
        }
        if (miniBatch && config.get(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_SIZE) <= 0) {
            return ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_SIZE.key() + " is not positive: Flink rejects it at translation";
        }
        return fieldsReason("input field", input);
    }

    /** The first row-time field of {@code input}, as {@code StreamExecDeduplicate} picks it; -1 if none. */
    static int rowtimeIndex(RowType input) {
        for (int i = 0; i < input.getFieldCount(); i++) {
            if (TypeCheckUtils.isRowTime(input.getTypeAt(i))) {
                return i;
            }
        }
        return -1;
    }

    /**
     * The spec of the function {@code StreamExecDeduplicate} builds from its fields and {@code
     * config} (the node's configuration).
     */
    static DeduplicateSpec build(
            String name,
            RowType input,
            int[] keys,
            boolean rowtime,
            boolean keepLastRow,
            boolean outputInsertOnly,
            boolean generateUpdateBefore,
            long stateTtlMs,
            ReadableConfig config) {
        boolean miniBatch = config.get(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ENABLED);
        // RowTimeDeduplicateKeepFirstRowFunction: timers, late rows dropped, +I only
        boolean insertOnlyFirstRow = rowtime && !keepLastRow && outputInsertOnly && !miniBatch;
        boolean compactChanges = rowtime && miniBatch
                && config.get(ExecutionConfigOptions.TABLE_EXEC_DEDUPLICATE_MINIBATCH_COMPACT_CHANGES_ENABLED);
        boolean asyncState = rowtime && !miniBatch && !insertOnlyFirstRow
                && config.get(ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED);
        return new DeduplicateSpec(
                name,
                input,
                keys,
                keepLastRow,
                rowtime,
                rowtime ? rowtimeIndex(input) : 0,
                generateUpdateBefore,
                config.get(ExecutionConfigOptions.TABLE_EXEC_DEDUPLICATE_INSERT_UPDATE_AFTER_SENSITIVE_ENABLED),
                insertOnlyFirstRow,
                miniBatch,
                compactChanges,
                keepsRowObjects(config),
                effectiveStateTtlMs(stateTtlMs, asyncState, config));
    }

    /**
     * The retention Flink's function actually applies. With async state on, a row-time
     * deduplication that is not the insert-only first row runs {@code
     * AsyncStateRowTimeDeduplicateFunction}; on the heap and RocksDB backends its state goes
     * through {@code AsyncKeyedStateBackendAdaptor}, whose descriptor conversion drops the TTL: that
     * function never expires state, so Ferry's keeps it too (0). ForSt applies the TTL.
     */
    static long effectiveStateTtlMs(long stateTtlMs, boolean asyncState, ReadableConfig config) {
        return asyncState && asyncStateThroughAdaptor(config) ? 0 : stateTtlMs;
    }

    /**
     * Whether the configured state backend keeps row objects (the heap backend, {@code
     * state.backend.type: hashmap}, the default), so a stored row takes the kind Flink's function
     * sets on it after storing it. The operator checks the backend it runs on
     * ({@link FerryDeduplicateOperator}).
     */
    static boolean keepsRowObjects(ReadableConfig config) {
        String backend = config.get(StateBackendOptions.STATE_BACKEND).toLowerCase(Locale.ROOT);
        return backend.equals("hashmap") || backend.contains("hashmapstatebackend");
    }

    /**
     * {@code StreamExecDeduplicate}'s description, as {@code StreamPhysicalRank} gives it: the
     * name of the native operator's spec, so the spec checked while planning is the one
     * translation checks (from the cache), and the key the node's opened operators count under.
     */
    static String description(StreamPhysicalRank rank) {
        List<String> names = rank.getRowType().getFieldNames();
        StringBuilder keys = new StringBuilder();
        for (int k : rank.partitionKey().toArray()) {
            keys.append(keys.length() == 0 ? "" : ", ").append(names.get(k));
        }
        return "Deduplicate(keep=[" + (RankUtil.keepLastDeduplicateRow(rank.orderKey()) ? "LastRow" : "FirstRow")
                + "], key=[" + keys + "], order=[" + (rank.sortOnRowTime() ? "ROWTIME" : "PROCTIME")
                + "], outputInsertOnly=[" + ChangelogPlanUtils.isInsertOnly(rank) + "])";
    }
}
