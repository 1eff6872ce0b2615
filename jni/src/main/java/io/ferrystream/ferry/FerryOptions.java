package io.ferrystream.ferry;


import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;

import java.time.Duration;

/**
 * Ferry's configuration, read from the table config (SET, config.yaml, TableConfig#set). The kill
 * switch of each operator kind is declared by the kind ({@link #killSwitch}).
 */
public final class FerryOptions {
    private FerryOptions() {}

    public static final ConfigOption<Boolean> ENABLED =
            ConfigOptions.key("ferry.enabled")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Run supported operators natively once Ferry is installed. When false,"
                                    + " every operator is Flink's own.");

    /**
     * A native operator kind's kill switch, {@code ferry.<kind>.enabled} (default true). Each kind
     * declares its own (e.g. {@code GroupAggregateKind.ENABLED}, {@code
     * ferry.group-aggregate.enabled}); it applies on top of {@link #ENABLED}.
     *
     * @param kind the kind's name in option keys, e.g. {@code group-aggregate}
     * @param what what the switch turns off, for the description, e.g. "the native GROUP BY"
     */
    public static ConfigOption<Boolean> killSwitch(String kind, String what) {
        return ConfigOptions.key("ferry." + kind + ".enabled")
                .booleanType()
                .defaultValue(true)
                .withDescription("Kill switch for " + what + ".");
    }

    /**
     * The switch of a preview kind, {@code ferry.<kind>.enabled} (default false): a kind not yet
     * complete enough to be on by default. While it is off, the kind claims no node: EXPLAIN shows
     * Flink's plan unchanged and the node is not a candidate ({@code NativeKind#preview}).
     *
     * @param kind the kind's name in option keys, e.g. {@code regular-join}
     * @param what what the switch turns on, for the description, e.g. "the native regular join"
     */
    public static ConfigOption<Boolean> previewSwitch(String kind, String what) {
        return ConfigOptions.key("ferry." + kind + ".enabled")
                .booleanType()
                .defaultValue(false)
                .withDescription("Switch for " + what + ", a preview: off by default; while off, Flink plans"
                        + " the node as without Ferry and it is not a candidate.");
    }

    public static final ConfigOption<Integer> BATCH_SIZE =
            ConfigOptions.key("ferry.batch.size")
                    .intType()
                    .defaultValue(1024)
                    .withDescription(
                            "Rows a native operator collects before it calls Go. Results do not"
                                    + " depend on it; larger batches amortise the JNI crossing.");

    public static final ConfigOption<Duration> BATCH_MAX_DELAY =
            ConfigOptions.key("ferry.batch.max-delay")
                    .durationType()
                    .defaultValue(Duration.ofMillis(100))
                    .withDescription(
                            "Longest time a row waits in a partly filled batch before the batch is"
                                    + " processed (processing time). 0 processes every row at once.");

    public static final ConfigOption<Boolean> EXCHANGE_COLUMNAR =
            ConfigOptions.key("ferry.exchange.columnar.enabled")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Carry the partial rows between the native aggregates of a two-phase plan"
                                    + " (local to global; with split DISTINCT local to incremental to"
                                    + " global) as Arrow frames instead of Flink's rows (not with"
                                    + " unaligned checkpoints). Results do not depend on it.");

    public static final ConfigOption<Boolean> JOIN_NULL_KEY_EMIT_IMMEDIATELY =
            ConfigOptions.key("ferry.join.null-key.emit-immediately")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Native interval and window joins: pad a row of the padded side whose join"
                                    + " key has a NULL in an '=' position (it can never match) when it"
                                    + " arrives, instead of at its cleanup time or window end as Flink does"
                                    + " (a window ANTI join emits the row itself), and store none of it."
                                    + " The same rows, earlier and in another order"
                                    + " (docs/operators/interval-join.md#null-keys,"
                                    + " docs/operators/window-join.md#null-keys).");

    public static final ConfigOption<Boolean> LOOKUP_JDBC_NATIVE =
            ConfigOptions.key("ferry.lookup.jdbc.native")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Lookup joins against a JDBC PostgreSQL table: Go does the lookups, one"
                                    + " statement per batch of probe rows, instead of Flink's JDBC lookup"
                                    + " function (one statement per probe row). Same rows"
                                    + " (docs/operators/lookup-join.md).");

    public static final ConfigOption<Integer> MEMORY_WEIGHT =
            ConfigOptions.key("ferry.memory.weight")
                    .intType()
                    .defaultValue(1)
                    .withDescription(
                            "Managed-memory weight of each native operator (use case OPERATOR): the"
                                    + " operators of a slot that use managed memory share the slot's"
                                    + " OPERATOR share in proportion to their weights. Flink's streaming"
                                    + " window operators weigh 1 each. A native operator reserves its"
                                    + " share and its state must fit it, else the task fails saying so"
                                    + " (docs/state.md#memory). 0 runs native operators outside Flink's"
                                    + " memory budget, unchecked.");

    /** What a native operator does when its memory does not fit its share of managed memory. */
    public enum OverBudget {
        /** Keep running with the state in memory, and log once what to raise. */
        WARN,
        /** Fail the task with {@code FerryException [ENOMEM]}, naming what to raise. */
        FAIL
    }

    public static final ConfigOption<OverBudget> MEMORY_OVER_BUDGET =
            ConfigOptions.key("ferry.memory.over-budget")
                    .enumType(OverBudget.class)
                    .defaultValue(OverBudget.WARN)
                    .withDescription(
                            "What a native operator does when its state and batches outgrow its share"
                                    + " of the slot's managed memory, or when its slot has no managed memory"
                                    + " for it: WARN keeps the state in memory beyond the share (as Flink's"
                                    + " heap state backend keeps its state regardless of managed memory),"
                                    + " logs a warning naming what to raise and lifts the Go runtime's soft"
                                    + " limit; FAIL fails the task saying what to raise (docs/state.md#memory)."
                                    + " Read from the job's configuration, else the TaskManager's.");
}
