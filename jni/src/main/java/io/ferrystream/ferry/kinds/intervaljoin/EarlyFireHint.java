package io.ferrystream.ferry.kinds.intervaljoin;

import io.ferrystream.ferry.planner.candidates.IntervalJoinCandidate;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelShuttleImpl;
import org.apache.calcite.rel.core.Join;
import org.apache.calcite.rel.core.JoinRelType;
import org.apache.calcite.rel.hint.HintOptionChecker;
import org.apache.calcite.rel.hint.HintPredicates;
import org.apache.calcite.rel.hint.HintStrategy;
import org.apache.calcite.rel.hint.HintStrategyTable;
import org.apache.calcite.rel.hint.RelHint;
import org.apache.calcite.rex.RexNode;
import org.apache.calcite.util.Litmus;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.planner.plan.nodes.logical.FlinkLogicalJoin;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIntervalJoin;
import org.apache.flink.table.planner.plan.optimize.program.FlinkOptimizeProgram;
import org.apache.flink.table.planner.plan.optimize.program.StreamOptimizeContext;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec.WindowBounds;

/**
 * The {@code EARLY_FIRE} query hint of Flink's master branch (FLIP-497), which Flink 2.3 does not
 * have and Ferry brings: {@code /*+ EARLY_FIRE('delay'='5s'[, 'time-mode'='rowtime'|'proctime'][,
 * 'target'='interval_join']) *}{@code /} on the SELECT block of an outer interval join makes the
 * join pad an unmatched row once its delay has passed, and correct the pad ({@code -U}, {@code +U})
 * when a match arrives later (docs/operators/interval-join.md#early_fire).
 *
 * <p>Three parts: the hint's registration and option checks, with master's messages ({@link
 * #addTo}); a program that runs before Flink's physical optimization and records the hint of
 * each logical join ({@link #RECORDER}), because Flink's physical interval join keeps no hints;
 * and its resolution for one physical interval join ({@link #of}).
 */
public final class EarlyFireHint {
    /** The hint's name; hint names are matched case-insensitively. */
    static final String NAME = "EARLY_FIRE";

    /** The only operator the hint targets. */
    static final String INTERVAL_JOIN = "interval_join";

    static final ConfigOption<Duration> DELAY = ConfigOptions.key("delay").durationType().noDefaultValue();

    /** Which clock drives the delay. */
    enum TimeMode {
        ROWTIME,
        PROCTIME
    }

    static final ConfigOption<TimeMode> TIME_MODE =
            ConfigOptions.key("time-mode").enumType(TimeMode.class).noDefaultValue();

    static final ConfigOption<String> TARGET =
            ConfigOptions.key("target").stringType().defaultValue(INTERVAL_JOIN);

    private static final List<ConfigOption<?>> SUPPORTED = List.of(DELAY, TARGET, TIME_MODE);

    /** Name of the program that records hints, before Flink's physical optimization ({@link IntervalJoinKind#programsBeforePhysical}). */
    public static final String RECORDER_NAME = "ferry_early_fire_hints";

    /** The program that records each logical join's hint before Flink plans it physically. */
    static final FlinkOptimizeProgram<StreamOptimizeContext> RECORDER = EarlyFireHint::record;

    /** The hints recorded by the current optimization on this thread, by join signature. */
    private static final ThreadLocal<Map<String, Resolved>> RECORDED = ThreadLocal.withInitial(HashMap::new);

    private EarlyFireHint() {}

    /**
     * A resolved hint: the delay in milliseconds (at least 1) and the clock that drives it (null
     * until {@link #of} resolves it: the join's own).
     */
    record Resolved(long delayMs, TimeMode timeMode) {}

    // ---- registration ------------------------------------------------------------------------

    /**
     * {@code flinks} with {@code EARLY_FIRE} registered on joins. Calcite's table has no copy
     * builder: its strategies are read from its one private field.
     */
    @SuppressWarnings("unchecked")
    static HintStrategyTable addTo(HintStrategyTable flinks) {
        HintStrategyTable.Builder b = HintStrategyTable.builder().errorHandler(Litmus.THROW);
        try {
            Field strategies = HintStrategyTable.class.getDeclaredField("strategies");
            strategies.setAccessible(true);
            Field name = Class.forName(HintStrategyTable.class.getName() + "$Key").getDeclaredField("name");
            name.setAccessible(true);
            for (Map.Entry<Object, HintStrategy> e : ((Map<Object, HintStrategy>) strategies.get(flinks)).entrySet()) {
                b.hintStrategy((String) name.get(e.getKey()), e.getValue());
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Calcite's HintStrategyTable has changed: " + e, e);
        }
        return b.hintStrategy(NAME, HintStrategy.builder(HintPredicates.JOIN).optionChecker(CHECKER).build())
                .build();
    }

    /** Master's checks of the hint's options, in its order and with its messages. */
    static final HintOptionChecker CHECKER =
            (hint, litmus) -> {
                litmus.check(
                        hint.listOptions.isEmpty(),
                        "Invalid list options in EARLY_FIRE hint, only support key-value options.");
                Configuration conf = Configuration.fromMap(hint.kvOptions);
                litmus.check(conf.contains(DELAY), "Invalid EARLY_FIRE hint: incomplete required option(s): {}", Set.of(DELAY));
                Set<String> supported = new TreeSet<>();
                SUPPORTED.forEach(o -> supported.add(o.key()));
                Set<String> unknown = new TreeSet<>(hint.kvOptions.keySet());
                unknown.removeAll(supported);
                litmus.check(
                        unknown.isEmpty(),
                        "Unsupported EARLY_FIRE hint option(s) {}, supported options are {}.",
                        unknown,
                        supported);
                litmus.check(
                        hint.kvOptions.size() <= SUPPORTED.size(),
                        "Too many EARLY_FIRE hint options {} beyond max number of supported options {}",
                        hint.kvOptions.size(),
                        SUPPORTED.size());
                Duration delay;
                String target;
                try {
                    delay = conf.get(DELAY);
                    conf.get(TIME_MODE);
                    target = conf.get(TARGET);
                } catch (IllegalArgumentException e) {
                    return litmus.fail("Invalid EARLY_FIRE hint options: {}", e.getMessage());
                }
                litmus.check(
                        delay.toMillis() >= 1,
                        "Invalid EARLY_FIRE hint option: {} value should be at least 1 millisecond but was {}",
                        DELAY.key(),
                        delay);
                return litmus.check(
                        INTERVAL_JOIN.equalsIgnoreCase(target),
                        "Invalid EARLY_FIRE hint option: target value '{}' is not supported, only '{}' is supported currently",
                        target,
                        INTERVAL_JOIN);
            };

    // ---- carrying the hint from the logical join to the physical one -------------------------

    private static RelNode record(RelNode root, StreamOptimizeContext context) {
        Map<String, Resolved> recorded = RECORDED.get();
        recorded.clear();
        root.accept(
                new RelShuttleImpl() {
                    @Override
                    public RelNode visit(RelNode other) {
                        if (other instanceof FlinkLogicalJoin) {
                            Resolved hint = parse(((Join) other).getHints());
                            if (hint != null) {
                                Join join = (Join) other;
                                String key = signature(join.getJoinType(), join.getCondition(), join.getLeft(), join.getRight());
                                Resolved before = recorded.putIfAbsent(key, hint);
                                if (before != null && !before.equals(hint)) {
                                    throw new ValidationException(
                                            "Ferry: two joins of one query with the same inputs and condition carry"
                                                    + " different EARLY_FIRE hints; Ferry cannot tell them apart after"
                                                    + " physical planning: " + key);
                                }
                            }
                        }
                        return super.visit(other);
                    }
                });
        return root;
    }

    /** The first {@code EARLY_FIRE} hint of {@code hints} (options already checked), or null. */
    private static Resolved parse(List<RelHint> hints) {
        for (RelHint h : hints) {
            if (NAME.equals(h.hintName.toUpperCase(Locale.ROOT))) {
                Configuration conf = Configuration.fromMap(h.kvOptions);
                return new Resolved(conf.get(DELAY).toMillis(), conf.get(TIME_MODE));
            }
        }
        return null;
    }

    /**
     * What identifies a join before and after physical planning: Flink's interval join keeps the
     * logical join's type, condition and inputs' row types ({@code originalCondition}).
     */
    private static String signature(JoinRelType type, RexNode condition, RelNode left, RelNode right) {
        return type + "|" + condition + "|" + left.getRowType().getFullTypeString() + "|"
                + right.getRowType().getFullTypeString();
    }

    /**
     * The hint of {@code join} as the current optimization recorded it, its time mode resolved
     * (the join's own by default), or null when the join has none. Throws master's {@link
     * ValidationException} for row-time triggering on a processing-time join.
     */
    static Resolved of(StreamPhysicalIntervalJoin join) {
        Resolved hint = RECORDED.get()
                .get(signature(join.getJoinType(), join.originalCondition(), join.getLeft(), join.getRight()));
        if (hint == null) {
            return null;
        }
        WindowBounds bounds = IntervalJoinCandidate.windowBounds(join);
        TimeMode own = bounds.isEventTime() ? TimeMode.ROWTIME : TimeMode.PROCTIME;
        if (hint.timeMode() == TimeMode.ROWTIME && own == TimeMode.PROCTIME) {
            throw new ValidationException(
                    "EARLY_FIRE hint requested row-time triggering on a processing-time interval join. Row-time"
                            + " triggering requires a row-time interval join.");
        }
        return new Resolved(hint.delayMs(), hint.timeMode() == null ? own : hint.timeMode());
    }

    /**
     * Whether the hint changes {@code join} at all: master fires early only on outer joins with a
     * non-negative window; on others the hint is accepted and ignored (the join stays insert-only).
     */
    static boolean producesUpdates(StreamPhysicalIntervalJoin join, Resolved hint) {
        return producesUpdates(join.getJoinType() != JoinRelType.INNER, IntervalJoinCandidate.windowBounds(join), hint);
    }

    /** {@link #producesUpdates(StreamPhysicalIntervalJoin, Resolved)} of an outer join or not, with these bounds. */
    static boolean producesUpdates(boolean outer, WindowBounds bounds, Resolved hint) {
        return hint != null && outer && bounds.getLeftUpperBound() >= bounds.getLeftLowerBound();
    }
}
