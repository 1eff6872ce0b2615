package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.kinds.regularjoin.RegularJoinKind;
import io.ferrystream.ferry.kinds.windowaggregate.WindowAggregateKind;
import io.ferrystream.ferry.nexmark.runner.PlanShape;
import io.ferrystream.ferry.planner.NativeCandidate;

import org.apache.calcite.plan.RelOptUtil;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rex.RexCall;
import org.apache.calcite.rex.RexNode;
import org.apache.calcite.rex.RexShuttle;
import org.apache.calcite.sql.SqlExplainLevel;
import org.apache.calcite.util.ImmutableBitSet;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedCatalogBaseTable;
import org.apache.flink.table.planner.plan.metadata.FlinkRelMetadataQuery;
import org.apache.flink.table.planner.plan.nodes.FlinkRelNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalMiniBatchAssigner;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalRel;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalSink;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalTableSourceScan;
import org.apache.flink.table.planner.plan.schema.TableSourceTable;
import org.apache.flink.table.planner.plan.trait.MiniBatchInterval;
import org.apache.flink.table.planner.plan.trait.MiniBatchIntervalTrait;
import org.apache.flink.table.planner.plan.trait.MiniBatchIntervalTraitDef;
import org.apache.flink.table.planner.plan.trait.MiniBatchMode;
import org.apache.flink.table.planner.plan.utils.ChangelogPlanUtils;
import org.apache.flink.table.planner.plan.utils.FlinkRelOptUtil;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;

import org.apache.flink.util.TimeUtils;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What one query's physical plan says, read from the plan itself (the root Ferry's optimizer
 * program produced, {@code Ferry.capturePlans()}), never from EXPLAIN text:
 *
 * <ul>
 *   <li>its <b>candidate nodes</b>: the nodes a registered native kind decided ({@link
 *       NativeCandidate}), native or with the reason they stay Flink's;
 *   <li>its <b>other stateful operators</b> (joins, windows, OVER, ...):
 *       nodes no native kind replaces yet, each with that as its reason; with the candidates they
 *       make the operators whose native share {@code ferry qualify} estimates;
 *   <li>why the changelog it produces is <b>not deterministic</b>, at three levels: its order
 *       ({@link #orderReasons}), its intermediate updates ({@link #contentReasons}), or even its
 *       final result ({@link #resultReasons}).
 * </ul>
 */
final class PlanAnalysis {
    /** A candidate node: {@code reason} null when it runs natively. */
    record Candidate(String kind, String operator, String description, String reason) {
        boolean isNative() {
            return reason == null;
        }
    }

    /** A stateful operator no native kind replaces yet, with the reason a report shows. */
    record Other(String operator, String description, String reason) {}

    final List<Candidate> candidates = new ArrayList<>();
    final List<Other> others = new ArrayList<>();
    /** The changelog's row order depends on timing; its rows do not. */
    final Set<String> orderReasons = new LinkedHashSet<>();
    /** The changelog's intermediate updates depend on timing; its final result does not. */
    final Set<String> contentReasons = new LinkedHashSet<>();
    /** Even the final result depends on timing or on non-deterministic inputs. */
    final Set<String> resultReasons = new LinkedHashSet<>();
    /** The plan as EXPLAIN prints its "Optimized Physical Plan" section. */
    final String planText;
    /**
     * The result's upsert key (field indexes), or null when it has none. A changelog of updates
     * without {@code -U} (an upsert changelog: the collecting sink takes the changelog its input
     * produces) materializes by this key ({@link Changelogs.Materializer}).
     */
    final int[] upsertKey;

    private final ReadableConfig config;
    private final int parallelism;
    private final Map<RelNode, Boolean> arrivalOrder = new IdentityHashMap<>();

    private PlanAnalysis(List<RelNode> roots, ReadableConfig config, int parallelism) {
        this.config = config;
        this.parallelism = parallelism;
        // as EXPLAIN prints its "Optimized Physical Plan" section
        planText = FlinkRelOptUtil.toString(
                JavaScalaConversionUtil.toScala(roots), SqlExplainLevel.EXPPLAN_ATTRIBUTES, false, false).strip();
        for (RelNode root : roots) {
            visit(root);
        }
        upsertKey = roots.size() == 1 ? upsertKey(roots.get(0)) : null;
        if (parallelism > 1) {
            orderReasons.add("parallelism " + parallelism + ": the subtasks' rows reach the result interleaved by arrival");
            if (!candidates.isEmpty() || !others.isEmpty()) {
                contentReasons.add(
                        "parallelism " + parallelism + ": each keyed operator receives the rows of several upstream"
                                + " subtasks in arrival order");
            }
        }
        Duration ttl = config.get(ExecutionConfigOptions.IDLE_STATE_RETENTION);
        if (!ttl.isZero() && (!candidates.isEmpty() || !others.isEmpty())) {
            resultReasons.add("idle state TTL (" + ExecutionConfigOptions.IDLE_STATE_RETENTION.key() + " = " + TimeUtils.formatWithHighestUnit(ttl)
                    + ") expires state on the wall clock");
        }
    }

    /**
     * The narrowest upsert key of the result {@code root} produces (of its sink's input, where the
     * plan ends in a sink), as Flink's metadata gives it; null when it has none.
     */
    private static int[] upsertKey(RelNode root) {
        RelNode result = root instanceof StreamPhysicalSink ? root.getInput(0) : root;
        Set<ImmutableBitSet> keys = FlinkRelMetadataQuery.reuseOrCreate(result.getCluster().getMetadataQuery()).getUpsertKeys(result);
        if (keys == null || keys.isEmpty()) {
            return null;
        }
        return keys.stream().min(Comparator.comparingInt(ImmutableBitSet::cardinality).thenComparing(ImmutableBitSet::toString))
                .orElseThrow().toArray();
    }

    /** Analyses the plans of one statement (usually one root). */
    static PlanAnalysis of(List<RelNode> roots, ReadableConfig config, int parallelism) {
        return new PlanAnalysis(roots, config, parallelism);
    }

    /** Whether nothing in the plan makes its changelog depend on timing. */
    boolean deterministic() {
        return orderReasons.isEmpty() && contentReasons.isEmpty() && resultReasons.isEmpty();
    }

    long nativeCandidates() {
        return candidates.stream().filter(Candidate::isNative).count();
    }

    /** Visits {@code node} once (shared sub-plans count once); returns whether its output order depends on arrival. */
    private boolean visit(RelNode node) {
        Boolean done = arrivalOrder.get(node);
        if (done != null) {
            return done;
        }
        boolean inputArrival = false;
        for (RelNode input : node.getInputs()) {
            inputArrival |= visit(input);
        }
        String op = operatorName(node);
        boolean stateful = false;
        if (node instanceof NativeCandidate c) {
            candidates.add(new Candidate(c.nativeKind(), op, c.nativeDescription(), c.fallbackReason().orElse(null)));
            stateful = true;
        } else {
            String reason = otherStatefulReason(op);
            if (reason != null) {
                others.add(new Other(op, description(node), reason));
                stateful = true;
            }
        }
        boolean arrival = inputArrival;
        if (node.getInputs().size() > 1) {
            arrival = true;
            orderReasons.add(op + " reads " + node.getInputs().size() + " inputs, interleaved by arrival");
            if (node instanceof StreamPhysicalRel rel && !ChangelogPlanUtils.isInsertOnly(rel)) {
                contentReasons.add(op + " emits updates whose sequence depends on how its inputs interleave");
            }
        }
        if (stateful && inputArrival) {
            contentReasons.add(op + " folds its input in arrival order, so its intermediate updates follow it");
        }
        if (node instanceof StreamPhysicalMiniBatchAssigner) {
            MiniBatchIntervalTrait t = node.getTraitSet().getTrait(MiniBatchIntervalTraitDef.INSTANCE());
            MiniBatchInterval interval = t == null ? null : t.getMiniBatchInterval();
            if (interval != null && interval.getMode() == MiniBatchMode.ProcTime) {
                contentReasons.add("processing-time mini-batch (" + ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ALLOW_LATENCY.key()
                        + " = " + TimeUtils.formatWithHighestUnit(config.get(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ALLOW_LATENCY))
                        + "): a bundle also closes on the wall clock");
            }
        }
        if (TIME_DRIVEN.contains(op) && PlanShape.readsProcessingTime(node)) {
            resultReasons.add(op + " fires on processing time");
        }
        if (node instanceof StreamPhysicalTableSourceScan scan) {
            String random = randomSource(scan);
            if (random != null) {
                resultReasons.add(random);
            }
        }
        nonDeterministicCalls(node);
        arrivalOrder.put(node, arrival);
        return arrival;
    }

    /** The node as one EXPLAIN line: its name and attributes, without its inputs. */
    static String description(RelNode node) {
        return node instanceof FlinkRelNode f ? f.getRelDetailedDescription() : RelOptUtil.toString(node).strip();
    }

    /** Flink's name of the node's operator, as EXPLAIN prints it ({@code GroupAggregate}, {@code Join}, ...). */
    static String operatorName(RelNode node) {
        String name = node.getRelTypeName();
        return name.startsWith("StreamPhysical") ? name.substring("StreamPhysical".length()) : name;
    }

    /**
     * Operators whose output depends on time attributes (windows, time-bounded joins, OVER, time
     * sort, CEP). Not a Rank: a deduplication or Top-N ordered by processing time keeps rows in
     * arrival order and reads no clock (its idle-state TTL counts on its own).
     */
    private static final Set<String> TIME_DRIVEN = Set.of(
            "GroupWindowAggregate", "GroupWindowTableAggregate", "WindowAggregate", "LocalWindowAggregate",
            "GlobalWindowAggregate", "WindowTableFunction", "WindowJoin", "WindowRank", "WindowDeduplicate",
            "IntervalJoin", "TemporalJoin", "OverAggregate", "TemporalSort", "Match");

    /**
     * Why a stateful operator that no native kind replaces stays Flink's, or null for a node that
     * is not one (stateless nodes, exchanges, sources, sinks). {@code op} is Flink's name of a
     * physical node or of an exec node ({@link CompiledPlanAnalysis}). Lookup joins are candidates
     * of their own kind ({@code lookup_join}), native or with their fallback reason.
     */
    static String otherStatefulReason(String op) {
        return switch (op) {
            case "Join" -> "regular join: its native kind is a preview, off by default (SET '"
                    + RegularJoinKind.ENABLED.key() + "' = 'true' switches it on)";
            case "TemporalJoin" -> "temporal join: no native operator kind yet";
            case "MultiJoin" -> "multi-way join: no native operator kind yet";
            case "DeltaJoin" -> "delta join: no native operator kind yet";
            case "WindowAggregate" -> "window aggregate: its native kind is a preview, off by default (SET '"
                    + WindowAggregateKind.ENABLED.key() + "' = 'true' switches it on; single-phase only)";
            case "GroupWindowAggregate", "GlobalWindowAggregate" -> "window aggregate: no native operator kind yet";
            case "GroupTableAggregate", "GroupWindowTableAggregate" -> "table aggregate: no native operator kind yet";
            case "WindowRank" -> "window Top-N: no native operator kind yet";
            case "WindowDeduplicate" -> "window deduplication: no native operator kind yet";
            case "OverAggregate" -> "OVER aggregate: no native operator kind yet";
            case "TemporalSort", "Sort", "SortLimit", "Limit" -> "streaming sort / LIMIT: no native operator kind yet";
            case "Match" -> "MATCH_RECOGNIZE: no native operator kind yet";
            case "ChangelogNormalize" -> "changelog normalization (upsert source): no native operator kind yet";
            case "ProcessTableFunction" -> "process table function: no native operator kind yet";
            case "PythonGroupAggregate", "PythonGroupWindowAggregate", "PythonGroupTableAggregate", "PythonOverAggregate" ->
                    "Python aggregate: not native";
            default -> null;
        };
    }

    /** A datagen source whose fields are random: each run reads other rows. */
    private static String randomSource(StreamPhysicalTableSourceScan scan) {
        TableSourceTable table = scan.getTable().unwrap(TableSourceTable.class);
        if (table == null) {
            return null;
        }
        ResolvedCatalogBaseTable<?> resolved = table.contextResolvedTable().getResolvedTable();
        Map<String, String> options = resolved.getOptions();
        if (!"datagen".equals(options.get("connector"))) {
            return null;
        }
        List<String> random = new ArrayList<>();
        for (Column c : resolved.getResolvedSchema().getColumns()) {
            if (c.isPhysical() && !"sequence".equals(options.getOrDefault("fields." + c.getName() + ".kind", "random"))) {
                random.add(c.getName());
            }
        }
        if (random.isEmpty()) {
            return null;
        }
        return "datagen table " + table.contextResolvedTable().getIdentifier().getObjectName() + " generates random "
                + String.join(", ", random) + ": every run reads other rows ('fields.<name>.kind' = 'sequence' makes"
                + " them repeatable)";
    }

    /** Calls whose value changes from run to run (RAND, UUID, NOW, CURRENT_TIMESTAMP, PROCTIME(), ...). */
    private void nonDeterministicCalls(RelNode node) {
        node.accept(new RexShuttle() {
            @Override
            public RexNode visitCall(RexCall call) {
                if (!call.getOperator().isDeterministic() || call.getOperator().isDynamicFunction()) {
                    String name = call.getOperator().getName();
                    if (!name.equals("PROCTIME")) { // a time attribute; TIME_DRIVEN covers its use
                        resultReasons.add("non-deterministic function " + name + " in " + operatorName(node));
                    }
                }
                return super.visitCall(call);
            }
        });
    }
}
