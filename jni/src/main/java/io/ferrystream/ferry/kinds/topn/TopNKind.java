package io.ferrystream.ferry.kinds.topn;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.OneInputNativeOperator;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeSupport;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.candidates.RankCandidate;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.nodes.exec.StateMetadata;
import org.apache.flink.table.planner.plan.nodes.exec.spec.PartitionSpec;
import org.apache.flink.table.planner.plan.nodes.exec.spec.SortSpec;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecRank;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalRank;
import org.apache.flink.table.planner.plan.utils.ChangelogPlanUtils;
import org.apache.flink.table.planner.plan.utils.RankProcessStrategy;
import org.apache.flink.table.planner.plan.utils.RankUtil;
import org.apache.flink.table.planner.plan.utils.SortUtil;
import org.apache.flink.table.runtime.operators.rank.ConstantRankRange;
import org.apache.flink.table.runtime.operators.rank.ConstantRankRangeWithoutEnd;
import org.apache.flink.table.runtime.operators.rank.RankRange;
import org.apache.flink.table.runtime.operators.rank.RankType;
import org.apache.flink.table.runtime.operators.rank.VariableRankRange;
import org.apache.flink.table.runtime.typeutils.TypeCheckUtils;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeFamily;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;

import java.util.List;

import scala.collection.JavaConverters;

/**
 * The Top-N kind ({@value TopNSpec#KIND}): Flink's {@code StreamExecRank} (a {@code ROW_NUMBER}
 * with a constant rank range) in every function its translation picks: {@code
 * AppendOnlyTopNFunction}, {@code AppendOnlyFirstNFunction}, {@code FastTop1Function} (and their
 * async-state twins), {@code UpdatableTopNFunction} and {@code RetractableTopNFunction}, run by a
 * {@link OneInputNativeOperator} over the whole input row, keyed by the partition keys
 * (docs/operators/top-n.md). Flink plans a Top-N as a {@code StreamPhysicalRank}, as it plans a
 * deduplication; the kind claims every rank that is not one ({@code
 * RankUtil.canConvertToDeduplicate}: those are the deduplication kind's). What stays Flink's
 * operator, with the reason: a rank range read from a column, idle-state TTL but on the first N
 * (Flink's results then depend on its cache, or its states expire apart), FLOAT/DOUBLE sort keys
 * (and for the retracting function any FLOAT/DOUBLE field, for the updatable one a FLOAT/DOUBLE
 * row key), an offset without the rank number over retractions, and what Flink rejects.
 */
public final class TopNKind extends NativeKind<StreamPhysicalRank, StreamExecRank> {
    /** The kill switch of the native Top-N. */
    public static final ConfigOption<Boolean> ENABLED = FerryOptions.killSwitch("top-n", "the native Top-N");

    public TopNKind() {
        super(TopNSpec.KIND, StreamPhysicalRank.class, StreamExecRank.class, ENABLED, RankCandidate::new);
    }

    /**
     * The ranks Flink translates to {@code StreamExecRank}: every one {@code StreamPhysicalRank}
     * does not translate to a deduplication.
     */
    @Override
    protected boolean claims(StreamPhysicalRank rank) {
        return !RankUtil.canConvertToDeduplicate(rank);
    }

    @Override
    protected Decision match(StreamPhysicalRank rank, ReadableConfig config) {
        RowType input = FlinkTypeFactory.toLogicalRowType(rank.getInput().getRowType());
        RowType output = FlinkTypeFactory.toLogicalRowType(rank.getRowType());
        // as StreamPhysicalRank#translateToExecNode builds StreamExecRank
        SortSpec sortSpec = SortUtil.getSortSpec(JavaConverters.asScalaBuffer(rank.orderKey().getFieldCollations()));
        long ttl = config.get(ExecutionConfigOptions.IDLE_STATE_RETENTION).toMillis();
        Choice choice = choose(rank.rankType(), rank.rankRange(), rank.rankStrategy(), input, sortSpec, rank.outputRankNumber(),
                ttl);
        if (choice.reason != null) {
            return Decision.fallback(choice.reason);
        }
        TopNSpec spec = build(nativeDescription(rank), input, output, rank.partitionKey().toArray(), choice.function,
                rank.rankStrategy(), sortSpec, (ConstantRankRange) rank.rankRange(), rank.outputRankNumber(),
                ChangelogPlanUtils.generateUpdateBefore(rank), ttl);
        return NativeSupport.check(spec, output).map(Decision::fallback).orElse(Decision.nativeNode());
    }

    @Override
    protected Transformation<?> translate(StreamExecRank flink, NativeTranslation t) {
        Class<?> c = StreamExecRank.class;
        RankType rankType = FlinkFields.read(flink, c, "rankType");
        PartitionSpec partitionSpec = FlinkFields.read(flink, c, "partitionSpec");
        SortSpec sortSpec = FlinkFields.read(flink, c, "sortSpec");
        RankRange rankRange = FlinkFields.read(flink, c, "rankRange");
        RankProcessStrategy strategy = FlinkFields.read(flink, c, "rankStrategy");
        boolean outputRankNumber = FlinkFields.<Boolean>read(flink, c, "outputRankNumber");
        boolean generateUpdateBefore = FlinkFields.<Boolean>read(flink, c, "generateUpdateBefore");
        List<StateMetadata> stateMetadata = FlinkFields.read(flink, c, "stateMetadataList");
        RowType input = t.inputType(0);
        int[] keys = partitionSpec.getFieldIndices();
        long ttl = StateMetadata.getStateTtlForOneInputOperator(t.config(), stateMetadata);
        // what the planner checked; a plan loaded from JSON is decided here only
        Choice choice = choose(rankType, rankRange, strategy, input, sortSpec, outputRankNumber, ttl);
        String reason = choice.reason;
        TopNSpec spec = null;
        if (reason == null) {
            spec = build(t.description(), input, t.outputType(), keys, choice.function, strategy, sortSpec,
                    (ConstantRankRange) rankRange, outputRankNumber, generateUpdateBefore, ttl);
            reason = t.check(spec, t.outputType()).orElse(null);
        }
        if (reason != null) {
            return t.fallback(reason);
        }
        // Flink's function emits per row; a batch boundary changes nothing
        OneInputNativeOperator<TopNSpec> operator = new OneInputNativeOperator<>(spec, spec.outputType(), t.batching(false));
        // Flink's state of the node, imported from a savepoint taken with Ferry off, written into one taken with it on
        operator.importingFlinkState(new FlinkTopNState(input, keys, spec.function(), sortSpec.getFieldIndices(),
                sortSpec.getAscendingOrders(), sortSpec.getNullsIsLast(), spec.rowKeys(), spec.stateTtlMs() > 0));
        return t.oneInput(StreamExecRank.RANK_TRANSFORMATION, operator, keys);
    }

    /** The function Flink's translation picks, or why the rank stays Flink's. */
    static final class Choice {
        final TopNSpec.Function function;
        final String reason;

        private Choice(TopNSpec.Function function, String reason) {
            this.function = function;
            this.reason = reason;
        }

        static Choice of(TopNSpec.Function function) {
            return new Choice(function, null);
        }

        static Choice fallback(String reason) {
            return new Choice(null, reason);
        }
    }

    /**
     * The function {@code StreamExecRank#translateToPlanInternal} builds from the node's fields,
     * and the reasons it stays Flink's, in the order Flink's translation meets them: the rank
     * function, the rank range (checked by every Top-N function's constructor), the strategy and
     * then Ferry's own limits. Planning and translation both decide with it.
     *
     * @param stateTtlMs the idle-state retention the function gets (0: none)
     */
    static Choice choose(RankType rankType, RankRange rankRange, RankProcessStrategy strategy, RowType input,
            SortSpec sortSpec, boolean outputRankNumber, long stateTtlMs) {
        if (rankType != RankType.ROW_NUMBER) {
            return Choice.fallback(rankType + "() on a streaming table: Flink rejects it at translation");
        }
        if (rankRange instanceof ConstantRankRangeWithoutEnd) {
            return Choice.fallback("a Top-N without a rank end (" + rankRange + " only): Flink rejects it at translation");
        }
        if (rankRange instanceof VariableRankRange) {
            String column = input.getFieldNames().get(((VariableRankRange) rankRange).getRankEndIndex());
            return Choice.fallback("a Top-N whose rank end is the column " + column + " (a variable rank range): not native yet");
        }
        if (!(rankRange instanceof ConstantRankRange)) {
            return Choice.fallback("rank range " + rankRange + ": not native");
        }
        ConstantRankRange range = (ConstantRankRange) rankRange;
        int[] sortFields = sortSpec.getFieldIndices();
        TopNSpec.Function function;
        if (strategy instanceof RankProcessStrategy.AppendFastStrategy) {
            if (sortFields.length == 1 && TypeCheckUtils.isProcTime(input.getTypeAt(sortFields[0]))
                    && sortSpec.getFieldSpec(0).getIsAscendingOrder()) {
                function = TopNSpec.Function.APPEND_ONLY_FIRST_N;
            } else if (RankUtil.isTop1(range)) {
                function = TopNSpec.Function.FAST_TOP1;
            } else {
                function = TopNSpec.Function.APPEND_ONLY_TOP_N;
            }
        } else if (strategy instanceof RankProcessStrategy.UpdateFastStrategy) {
            function = RankUtil.isTop1(range) ? TopNSpec.Function.FAST_TOP1 : TopNSpec.Function.UPDATABLE_TOP_N;
        } else if (strategy instanceof RankProcessStrategy.RetractStrategy) {
            function = TopNSpec.Function.RETRACTABLE_TOP_N;
        } else {
            return Choice.fallback("rank strategy " + strategy + ": not native");
        }
        if (stateTtlMs > 0 && function != TopNSpec.Function.APPEND_ONLY_FIRST_N) {
            return Choice.fallback(ttlReason(function));
        }
        for (int f : sortFields) {
            LogicalType type = input.getTypeAt(f);
            if (isFloatingPoint(type)) {
                return Choice.fallback("ORDER BY " + input.getFieldNames().get(f) + " of type " + type.asSummaryString()
                        + ": a FLOAT/DOUBLE sort key is not native yet (Flink's comparator takes NaN as equal to every"
                        + " value)");
            }
        }
        if (function == TopNSpec.Function.RETRACTABLE_TOP_N) {
            if (range.getRankStart() > 1 && !outputRankNumber) {
                return Choice.fallback("a Top-N over an updating input (RetractableTopNFunction) with an offset (rank "
                        + range.getRankStart() + " to " + range.getRankEnd() + ") and without the rank number selected:"
                        + " not native yet (Flink's function then stores rows with the row kind it emitted them with,"
                        + " which its retractions compare)");
            }
            for (int i = 0; i < input.getFieldCount(); i++) {
                LogicalType type = input.getTypeAt(i);
                if (isFloatingPoint(type)) {
                    return Choice.fallback("input field " + input.getFieldNames().get(i) + " of type " + type.asSummaryString()
                            + " in a Top-N over an updating input (RetractableTopNFunction): not native yet (Flink's"
                            + " equaliser compares FLOAT/DOUBLE by value or by bits, depending on the form a row arrives in)");
                }
            }
        }
        if (function == TopNSpec.Function.UPDATABLE_TOP_N) {
            for (int k : ((RankProcessStrategy.UpdateFastStrategy) strategy).getPrimaryKeys()) {
                LogicalType type = input.getTypeAt(k);
                if (isFloatingPoint(type)) {
                    return Choice.fallback("row key field " + input.getFieldNames().get(k) + " of type " + type.asSummaryString()
                            + " of a Top-N over an upsert input (UpdatableTopNFunction): a FLOAT/DOUBLE row key is not"
                            + " native yet");
                }
            }
        }
        String fields = fieldsReason("input field", input);
        if (fields != null) {
            return Choice.fallback(fields);
        }
        for (int i = 0; i < input.getFieldCount(); i++) {
            LogicalType type = input.getTypeAt(i);
            if (type.is(LogicalTypeFamily.BINARY_STRING)) {
                return Choice.fallback("input field " + input.getFieldNames().get(i) + " of type " + type.asSummaryString()
                        + ": BINARY/VARBINARY in a Top-N: not native yet");
            }
        }
        return Choice.of(function);
    }

    private static boolean isFloatingPoint(LogicalType type) {
        return type.is(LogicalTypeRoot.FLOAT) || type.is(LogicalTypeRoot.DOUBLE);
    }

    /** Why idle-state TTL keeps {@code function} (not the first N, which runs with it) Flink's. */
    private static String ttlReason(TopNSpec.Function function) {
        String ttl = "idle-state TTL (" + ExecutionConfigOptions.IDLE_STATE_RETENTION.key() + ") on a Top-N kept by ";
        String cache = ExecutionConfigOptions.TABLE_EXEC_RANK_TOPN_CACHE_SIZE.key();
        switch (function) {
            case RETRACTABLE_TOP_N:
                return ttl + "RetractableTopNFunction: its sorted-map and data-state then expire separately; not native";
            case UPDATABLE_TOP_N:
                return ttl + "UpdatableTopNFunction: Flink's results then depend on which partitions its cache (" + cache
                        + ") holds; not native";
            case FAST_TOP1:
                return ttl + "FastTop1Function: Flink's results then depend on which partitions its cache (" + cache
                        + ") holds; not native";
            default:
                return ttl + "AppendOnlyTopNFunction: Flink's results then depend on which partitions its cache (" + cache
                        + ") holds; not native";
        }
    }

    /** The spec of {@code function} over the node's fields. */
    static TopNSpec build(
            String name,
            RowType input,
            RowType output,
            int[] keys,
            TopNSpec.Function function,
            RankProcessStrategy strategy,
            SortSpec sortSpec,
            ConstantRankRange range,
            boolean outputRankNumber,
            boolean generateUpdateBefore,
            long stateTtlMs) {
        return new TopNSpec(
                name,
                input,
                output,
                keys,
                function,
                sortSpec.getFieldIndices(),
                // UpdatableTopNFunction's row key selector: the strategy's primary keys
                function == TopNSpec.Function.UPDATABLE_TOP_N
                        ? ((RankProcessStrategy.UpdateFastStrategy) strategy).getPrimaryKeys() : new int[0],
                sortSpec.getAscendingOrders(),
                sortSpec.getNullsIsLast(),
                range.getRankStart(),
                range.getRankEnd(),
                outputRankNumber,
                generateUpdateBefore,
                function == TopNSpec.Function.APPEND_ONLY_FIRST_N ? stateTtlMs : 0);
    }
}
