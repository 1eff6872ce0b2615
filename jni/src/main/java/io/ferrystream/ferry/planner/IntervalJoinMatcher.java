package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.IntervalJoinSpec;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.nodes.exec.spec.JoinSpec;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIntervalJoin;
import org.apache.flink.table.types.logical.RowType;

import org.apache.calcite.rel.RelNode;

import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec.WindowBounds;

/**
 * The interval join kind's matcher: decides whether one {@link StreamPhysicalIntervalJoin} runs
 * natively. Native: row-time and processing-time joins of every join type whose condition is the equi-join keys, the
 * time bounds and a residual condition libferry.so evaluates as Flink's generated code does
 * ({@link JoinConditions}), over fields that cross the Arrow boundary. Flink's otherwise, with the
 * reason: a residual condition beyond that subset, a negative window (Flink
 * plans no join operator there), and whatever libferry.so refuses.
 */
public final class IntervalJoinMatcher extends NativeMatcher<StreamPhysicalIntervalJoin> {
    /** The kill switch of the native interval join. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.killSwitch("interval-join", "the native interval join (row and processing time)");

    IntervalJoinMatcher() {
        super(IntervalJoinSpec.KIND, StreamPhysicalIntervalJoin.class, ENABLED, FerryStreamExecIntervalJoin.class);
    }

    @Override
    protected Decision match(StreamPhysicalIntervalJoin join, ReadableConfig config) {
        WindowBounds bounds = IntervalJoinSpecs.windowBounds(join);
        JoinSpec joinSpec = join.joinSpec();
        String reason = shapeReason(joinSpec, bounds, join.getRowType().getFieldNames());
        if (reason != null) {
            return Decision.fallback(reason);
        }
        RowType left = FlinkTypeFactory.toLogicalRowType(join.getLeft().getRowType());
        RowType right = FlinkTypeFactory.toLogicalRowType(join.getRight().getRowType());
        reason = joinFieldsReason(IntervalJoinSpecs.carried(left), "left field");
        if (reason == null) {
            reason = joinFieldsReason(IntervalJoinSpecs.carried(right), "right field");
        }
        if (reason != null) {
            return Decision.fallback(reason);
        }
        EarlyFireHint.Resolved earlyFire = EarlyFireHint.of(join);
        IntervalJoinSpec spec = IntervalJoinSpecs.build(join.getRelDetailedDescription(), left, right, joinSpec, bounds,
                config, EarlyFireHint.producesUpdates(join, earlyFire) ? earlyFire : null);
        Optional<String> refused = NativeSupport.check(spec);
        String prefix = "residual join condition: ";
        if (refused.isPresent() && joinSpec.getNonEquiCondition().isPresent() && refused.get().startsWith(prefix)) {
            // Go names the part by its types; say which condition it is in, with field names
            return Decision.fallback("non-equi join condition " + conditionText(joinSpec, join.getRowType().getFieldNames())
                    + ": " + refused.get().substring(prefix.length()) + " not native yet");
        }
        return refused.map(Decision::fallback).orElse(Decision.nativeNode());
    }

    /**
     * Why the join's shape is not native, or null; the exec node repeats it at translation.
     *
     * @param fieldNames the names of the left and right input fields, in the join's row order (for
     *     the residual condition in the reason), or null
     */
    static String shapeReason(JoinSpec joinSpec, WindowBounds bounds, List<String> fieldNames) {
        if (bounds.getLeftUpperBound() < bounds.getLeftLowerBound()) {
            return "negative window (leftUpperBound " + bounds.getLeftUpperBound() + " < leftLowerBound "
                    + bounds.getLeftLowerBound() + "): Flink plans no join operator, only filters and padding";
        }
        if (joinSpec.getNonEquiCondition().isPresent()) {
            try {
                JoinConditions.encode(joinSpec.getNonEquiCondition().get());
            } catch (JoinConditions.Unsupported e) {
                return "non-equi join condition " + conditionText(joinSpec, fieldNames) + ": "
                        + named(e.getMessage(), fieldNames) + " not native yet";
            }
        }
        return null;
    }

    private static String conditionText(JoinSpec joinSpec, List<String> fieldNames) {
        return named(joinSpec.getNonEquiCondition().get().toString(), fieldNames);
    }

    /** A RexNode's text with its input references ($i) replaced by the fields' names. */
    static String named(String rex, List<String> fieldNames) {
        if (fieldNames == null) {
            return rex;
        }
        Matcher m = Pattern.compile("\\$(\\d+)").matcher(rex);
        StringBuilder b = new StringBuilder();
        while (m.find()) {
            int i = Integer.parseInt(m.group(1));
            m.appendReplacement(b, Matcher.quoteReplacement(i < fieldNames.size() ? fieldNames.get(i) : m.group()));
        }
        return m.appendTail(b).toString();
    }

    @Override
    protected RelNode nativeNode(StreamPhysicalIntervalJoin join) {
        return FerryStreamPhysicalIntervalJoin.of(join, null);
    }

    @Override
    protected RelNode fallbackNode(StreamPhysicalIntervalJoin join, String reason) {
        return FerryStreamPhysicalIntervalJoin.of(join, reason);
    }
}
