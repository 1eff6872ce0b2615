package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.FerryLookupJoinOperator;

import org.apache.calcite.plan.RelOptCluster;
import org.apache.calcite.plan.RelOptTable;
import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.JoinInfo;
import org.apache.calcite.rel.core.JoinRelType;
import org.apache.calcite.rel.hint.RelHint;
import org.apache.calcite.rex.RexNode;
import org.apache.calcite.rex.RexProgram;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.metadata.FlinkRelMetadataQuery;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.exec.spec.TemporalTableSourceSpec;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLookupJoin;
import org.apache.flink.table.planner.plan.utils.FlinkRexUtil;
import org.apache.flink.table.planner.plan.utils.FunctionCallUtil;
import org.apache.flink.table.planner.plan.utils.JoinTypeUtil;
import org.apache.flink.table.planner.plan.utils.UpsertKeyUtil;

import javax.annotation.Nullable;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import scala.Option;
import scala.Tuple2;
import scala.collection.JavaConverters;

/**
 * Flink's lookup join node as Ferry's optimizer program leaves it: the same rel plus {@code
 * ferry=[native]}, translating to {@link FerryStreamExecLookupJoin}; or, for a node that stays
 * Flink's, plus {@code ferry=[reason]}, translating to Flink's own {@code StreamExecLookupJoin}.
 */
public class FerryStreamPhysicalLookupJoin extends StreamPhysicalLookupJoin implements NativeCandidate {
    /** Flink's own name, so EXPLAIN prints {@code LookupJoin(...)}. */
    static final String REL_TYPE_NAME = "StreamPhysicalLookupJoin";

    /** Why the node stays Flink's; null when it runs natively. */
    @Nullable private final String fallbackReason;

    public FerryStreamPhysicalLookupJoin(
            RelOptCluster cluster,
            RelTraitSet traitSet,
            RelNode input,
            RelOptTable temporalTable,
            Option<RexProgram> tableCalcProgram,
            JoinInfo joinInfo,
            JoinRelType joinType,
            Option<RelHint> lookupHint,
            boolean upsertMaterialize,
            boolean enableLookupShuffle,
            boolean preferCustomShuffle,
            @Nullable String fallbackReason) {
        super(cluster, traitSet, input, temporalTable, tableCalcProgram, joinInfo, joinType, lookupHint,
                upsertMaterialize, enableLookupShuffle, preferCustomShuffle);
        this.fallbackReason = fallbackReason;
    }

    /** The Ferry twin of Flink's node: native when {@code reason} is null. */
    static FerryStreamPhysicalLookupJoin of(StreamPhysicalLookupJoin join, @Nullable String reason) {
        return new FerryStreamPhysicalLookupJoin(join.getCluster(), join.getTraitSet(), join.getInput(),
                join.temporalTable(), join.calcOnTemporalTable(), join.joinInfo(), join.joinType(), join.lookupHint(),
                join.upsertMaterialize(), join.enableLookupShuffle(), join.preferCustomShuffle(), reason);
    }

    @Override
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    public String nativeKind() {
        return FerryLookupJoinOperator.KIND;
    }

    @Override
    public String nativeDescription() {
        return getRelDetailedDescription();
    }

    /** Keeps the substitution: the inherited copy would build Flink's plain node. */
    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new FerryStreamPhysicalLookupJoin(getCluster(), traitSet, inputs.get(0), temporalTable(),
                calcOnTemporalTable(), joinInfo(), joinType(), lookupHint(), upsertMaterialize(), enableLookupShuffle(),
                preferCustomShuffle(), fallbackReason);
    }

    /**
     * As Flink's. Flink's planner sets upsert materialization after Ferry's program decided (its
     * non-deterministic-update check runs on the optimized plan): such a node stays Flink's, with
     * that reason.
     */
    @Override
    public StreamPhysicalLookupJoin copy(boolean upsertMaterialize) {
        String reason = upsertMaterialize ? LookupJoinMatcher.MATERIALIZE_REASON : fallbackReason;
        return new FerryStreamPhysicalLookupJoin(getCluster(), getTraitSet(), getInput(), temporalTable(),
                calcOnTemporalTable(), joinInfo(), joinType(), lookupHint(), upsertMaterialize, enableLookupShuffle(),
                preferCustomShuffle(), reason);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        String fetch = fallbackReason == null ? jdbcLookups().explain(temporalTable(), lookupDims()) : null;
        return super.explainTerms(pw)
                .item("ferry", fallbackReason == null ? "native" : fallbackReason)
                .itemIf("fetch", fetch, fetch != null);
    }

    /** Where the join's JDBC temporal table, if any, is looked up. */
    private JdbcLookups jdbcLookups() {
        return new JdbcLookups(tableConfig(), retryOptions().isDefined());
    }

    /** The lookup keys' dim columns, ascending. */
    private int[] lookupDims() {
        return JavaConverters.setAsJavaSet(allLookupKeys().keySet()).stream()
                .mapToInt(k -> (Integer) k).sorted().toArray();
    }

    @Override
    public String getRelTypeName() {
        return REL_TYPE_NAME;
    }

    /** Flink's {@code translateToExecNode}, building Ferry's exec node; Flink's own for a fallback. */
    @Override
    public ExecNode<?> translateToExecNode() {
        if (fallbackReason != null) {
            return super.translateToExecNode();
        }
        List<RexNode> projection = null;
        RexNode filter = null;
        if (calcOnTemporalTable().isDefined()) {
            Tuple2<List<RexNode>, Option<RexNode>> expanded = FlinkRexUtil.expandRexProgram(calcOnTemporalTable().get());
            projection = expanded._1();
            filter = expanded._2().isDefined() ? expanded._2().get() : null;
        }
        Map<Integer, FunctionCallUtil.FunctionParam> keys = new LinkedHashMap<>();
        JavaConverters.mapAsJavaMap(allLookupKeys()).forEach((k, v) -> keys.put((Integer) k, v));
        Optional<int[]> upsertKey = UpsertKeyUtil.smallestKey(
                FlinkRelMetadataQuery.reuseOrCreate(getCluster().getMetadataQuery()).getUpsertKeys(getInput()));
        return new FerryStreamExecLookupJoin(
                tableConfig(),
                JoinTypeUtil.getFlinkJoinType(joinType()),
                finalPreFilterCondition().isDefined() ? finalPreFilterCondition().get() : null,
                finalRemainingCondition().isDefined() ? finalRemainingCondition().get() : null,
                new TemporalTableSourceSpec(temporalTable()),
                keys,
                projection,
                filter,
                lookupKeyContainsPrimaryKey(),
                upsertMaterialize(),
                asyncOptions().isDefined() ? asyncOptions().get() : null,
                retryOptions().isDefined() ? retryOptions().get() : null,
                inputChangelogMode(),
                upsertKey.orElse(null),
                InputProperty.DEFAULT,
                FlinkTypeFactory.toLogicalRowType(getRowType()),
                getRelDetailedDescription(),
                preferCustomShuffle(),
                jdbcLookups());
    }
}
