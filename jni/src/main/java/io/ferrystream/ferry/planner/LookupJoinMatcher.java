package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.FerryLookupJoinOperator;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.core.JoinRelType;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLookupJoin;
import org.apache.flink.table.planner.plan.schema.LegacyTableSourceTable;
import org.apache.flink.table.planner.plan.utils.FunctionCallUtil;
import org.apache.flink.types.RowKind;

import javax.annotation.Nullable;

import java.util.stream.Collectors;

/**
 * The lookup join kind's matcher: decides whether one {@link StreamPhysicalLookupJoin} runs as
 * {@link FerryLookupJoinOperator}. Native: INNER and LEFT joins of an insert-only probe on a
 * {@code LookupTableSource}, sync or async (ordered or unordered), any connector, any key,
 * pre-filter, calc and residual condition (they stay Flink's generated code). Flink's otherwise,
 * with the reason: upsert materialization, an updating probe, key-ordered async lookup, another
 * join type, a legacy {@code LookupableTableSource}. The kind keeps no state, so the state
 * backend does not matter.
 */
public final class LookupJoinMatcher extends NativeMatcher<StreamPhysicalLookupJoin> {
    /** The kill switch of the native lookup join. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.killSwitch("lookup-join", "Ferry's lookup join operator (batches of probe rows through Flink's runners)");

    static final String MATERIALIZE_REASON = "upsert-materialized lookup join (KeyedLookupJoinWrapper, under"
            + " table.optimizer.non-deterministic-update.strategy=TRY_RESOLVE): not native yet";

    LookupJoinMatcher() {
        super(FerryLookupJoinOperator.KIND, StreamPhysicalLookupJoin.class, ENABLED, FerryStreamExecLookupJoin.class);
    }

    @Override
    protected boolean keepsNativeState() {
        return false;
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

    /** Why the join's shape keeps it Flink's, or null; the exec node repeats it at translation. */
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

    @Override
    protected RelNode nativeNode(StreamPhysicalLookupJoin join) {
        return FerryStreamPhysicalLookupJoin.of(join, null);
    }

    @Override
    protected RelNode fallbackNode(StreamPhysicalLookupJoin join, String reason) {
        return FerryStreamPhysicalLookupJoin.of(join, reason);
    }
}
