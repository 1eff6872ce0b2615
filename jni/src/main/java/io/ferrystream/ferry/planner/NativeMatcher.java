package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.arrow.ArrowTypes;

import org.apache.calcite.rel.RelNode;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalRel;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeFamily;
import org.apache.flink.table.types.logical.RowType;

import java.util.Objects;

/**
 * The planner side of one native operator kind: which node of Flink's physical plan it replaces,
 * whether a given node runs natively (and if not, why), and the two nodes that take its place.
 * {@link FerryOptimizeProgram} asks every matcher in {@link NativeKinds} about the nodes of exactly
 * its class.
 *
 * <p>The Ferry node is a subclass of Flink's node whose {@code translateToExecNode()} returns the
 * kind's exec node, which builds the kind's operator; the fallback node only adds the reason to
 * EXPLAIN ({@code ferry=[reason]}) and translates to Flink's exec node. One subclass with a
 * nullable reason serves as both; it overrides {@code copy} (or the planner silently reverts it
 * to Flink's class) and {@code explainTerms}.
 *
 * <p>{@link #decide} makes the checks every kind shares (Ferry's switch and the kind's own, the
 * state backend), then the kind's {@link #match}, which ends by asking the library about the exact
 * spec the exec node will open ({@link NativeSupport}), so a node the planner picks is never
 * refused at run time.
 *
 * @param <R> the class of Flink's physical node
 */
public abstract class NativeMatcher<R extends StreamPhysicalRel> {
    private final String kind;
    private final Class<R> nodeClass;
    private final ConfigOption<Boolean> enabled;
    private final Class<? extends ExecNode<?>> execNodeClass;

    /**
     * @param kind the operator kind, the spec's ({@code NativeSpec#kind()}); keys the counters
     * @param nodeClass Flink's physical node the kind replaces (exactly this class: subclasses,
     *     Ferry's own nodes among them, are not matched)
     * @param enabled the kind's kill switch ({@link FerryOptions#killSwitch})
     * @param execNodeClass the kind's exec node, whose logger reports fallbacks at translation
     */
    protected NativeMatcher(
            String kind, Class<R> nodeClass, ConfigOption<Boolean> enabled, Class<? extends ExecNode<?>> execNodeClass) {
        this.kind = Objects.requireNonNull(kind);
        this.nodeClass = Objects.requireNonNull(nodeClass);
        this.enabled = Objects.requireNonNull(enabled);
        this.execNodeClass = Objects.requireNonNull(execNodeClass);
    }

    public final String kind() {
        return kind;
    }

    public final Class<R> nodeClass() {
        return nodeClass;
    }

    /** The kind's kill switch, {@code ferry.<kind>.enabled}. */
    public final ConfigOption<Boolean> enabledOption() {
        return enabled;
    }

    public final Class<? extends ExecNode<?>> execNodeClass() {
        return execNodeClass;
    }

    /**
     * @param node a node of the final physical plan (changelog traits set), of {@link #nodeClass()}
     * @param config the table configuration the query is planned with
     */
    public final Decision decide(R node, ReadableConfig config) {
        String off = disabledReason(config, enabled);
        if (off != null) {
            return Decision.fallback(off);
        }
        String backend = keepsNativeState() ? backendReason(config) : null;
        if (backend != null) {
            return Decision.fallback(backend);
        }
        return match(node, config);
    }

    /**
     * Whether the kind's operator keeps state in Go, checkpointed as raw keyed state (and so
     * refuses state backends that cannot checkpoint it, {@link #backendReason}); a stateless kind
     * (the lookup join) says no.
     */
    protected boolean keepsNativeState() {
        return true;
    }

    /**
     * The kind's own checks, once the shared ones passed: the cheap ones Java can make first, then
     * the library's verdict on the spec ({@link NativeSupport#check}).
     */
    protected abstract Decision match(R node, ReadableConfig config);

    /** Flink's node run by Ferry: the same rel, translating to the kind's exec node. */
    protected abstract RelNode nativeNode(R node);

    /** Flink's node unchanged, except that EXPLAIN shows {@code reason}. */
    protected abstract RelNode fallbackNode(R node, String reason);

    /**
     * Why {@code ferry.enabled} or the kind's switch keeps the kind off, or null. An exec node
     * repeats this at translation: the options may change between planning and translation.
     */
    public static String disabledReason(ReadableConfig config, ConfigOption<Boolean> killSwitch) {
        if (!config.get(FerryOptions.ENABLED)) {
            return "disabled by " + FerryOptions.ENABLED.key() + "=false";
        }
        if (!config.get(killSwitch)) {
            return "disabled by " + killSwitch.key() + "=false";
        }
        return null;
    }

    /**
     * Why a field of the given role ("key", "argument", "output field") cannot cross the Arrow
     * boundary, or null when it can.
     */
    protected static String carriedReason(String role, String field, LogicalType type) {
        try {
            ArrowTypes.arrowTypeOf(type);
            return null;
        } catch (UnsupportedOperationException e) {
            return role + " " + field + " of type " + type.asSummaryString() + ": not carried across the native boundary";
        }
    }

    /**
     * Why a join input's fields (role "left field" or "right field") keep the join Flink's: a type
     * that does not cross the Arrow boundary, or BINARY/VARBINARY, which crosses for the GROUP BY
     * but which the joins do not carry yet; null when every field can.
     */
    protected static String joinFieldsReason(RowType type, String role) {
        for (int i = 0; i < type.getFieldCount(); i++) {
            String field = type.getFieldNames().get(i);
            LogicalType t = type.getTypeAt(i);
            String r = carriedReason(role, field, t);
            if (r == null && t.is(LogicalTypeFamily.BINARY_STRING)) {
                r = role + " " + field + " of type " + t.asSummaryString() + ": BINARY/VARBINARY in a join: not native yet";
            }
            if (r != null) {
                return r;
            }
        }
        return null;
    }

    private static final ConfigOption<String> BACKEND =
            ConfigOptions.key("state.backend.type").stringType().defaultValue("hashmap");
    private static final ConfigOption<String> ROCKSDB_TIMERS =
            ConfigOptions.key("state.backend.rocksdb.timer-service.factory").stringType().defaultValue("ROCKSDB");
    private static final ConfigOption<String> FORST_TIMERS =
            ConfigOptions.key("state.backend.forst.timer-service.factory").stringType().defaultValue("ForStDB");

    /**
     * Whether Flink's async-state operators reach this job's backend through
     * {@code AsyncKeyedStateBackendAdaptor}: every backend but ForSt, the one with an asynchronous
     * backend of its own ({@code state.backend.type: forst} or its factory class).
     */
    static boolean asyncStateThroughAdaptor(ReadableConfig config) {
        return !config.get(BACKEND).toLowerCase(java.util.Locale.ROOT).contains("forst");
    }

    /**
     * Native state rides raw keyed state, which RocksDB and ForSt cannot checkpoint next to heap
     * timers; the operator would fail its first checkpoint (it checks again when it starts).
     */
    static String backendReason(ReadableConfig config) {
        String backend = config.get(BACKEND);
        if (backend.equalsIgnoreCase("rocksdb") && config.get(ROCKSDB_TIMERS).equalsIgnoreCase("HEAP")) {
            return "RocksDB with heap timers (state.backend.rocksdb.timer-service.factory=HEAP) cannot checkpoint"
                    + " native state next to them";
        }
        if (backend.equalsIgnoreCase("forst") && config.get(FORST_TIMERS).equalsIgnoreCase("HEAP")) {
            return "ForSt with heap timers (state.backend.forst.timer-service.factory=HEAP) cannot checkpoint"
                    + " native state next to them";
        }
        return null;
    }
}
