package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.arrow.ArrowTypes;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.hint.HintStrategyTable;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalRel;
import org.apache.flink.table.planner.plan.optimize.program.FlinkOptimizeProgram;
import org.apache.flink.table.planner.plan.optimize.program.StreamOptimizeContext;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeFamily;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.BiFunction;

/**
 * One native operator kind: which of Flink's nodes it replaces, whether a given node runs natively
 * (and if not, why), and the transformation that runs it. It is the whole of a kind for the
 * planner; everything else is shared:
 *
 * <ul>
 *   <li>Planning: {@link FerryOptimizeProgram} asks the kind about every node of exactly its
 *       {@link #physicalClass} that it {@link #claims} ({@link #decide}: the checks every kind shares, then the kind's
 *       {@link #match}, which ends by asking the library about the exact spec, {@link
 *       NativeSupport}), and puts the kind's {@link #candidate} in the node's place: Flink's node
 *       with the {@link Verdict}, in EXPLAIN {@code ferry=[native]} or {@code ferry=[reason]}.
 *   <li>Translation: a native candidate's exec node is {@link NativeExecNode}, which wraps the exec
 *       node Flink's own code made of the candidate (of {@link #execClass}) and asks the kind to
 *       {@link #translate} it. So does {@link LoadedPlans} for every node of {@link #execClass} in
 *       a plan loaded from JSON: planned and compiled plans take one path.
 * </ul>
 *
 * <p>A kind registers one instance in {@link NativeKinds}. Its package holds, side by side, this
 * descriptor, its spec and, only where the kind behaves differently from the generic operator of
 * its shape, its operator; its candidate is the one of its Flink node class, in {@code
 * planner.candidates}.
 *
 * @param <R> Flink's physical node class the kind replaces
 * @param <E> Flink's exec node class that node translates to
 */
public abstract class NativeKind<R extends StreamPhysicalRel, E extends ExecNode<?>> {
    private final String name;
    private final Class<R> physicalClass;
    private final Class<E> execClass;
    private final ConfigOption<Boolean> killSwitch;
    private final BiFunction<R, Verdict, RelNode> candidates;

    /**
     * @param name the kind's name, the spec's ({@code NativeSpec#kind()}); keys the counters
     * @param physicalClass Flink's physical node the kind replaces (exactly this class: subclasses,
     *     the kinds' own candidates among them, are not matched)
     * @param execClass Flink's exec node of {@code physicalClass} (exactly this class, in loaded plans)
     * @param killSwitch the kind's switch, {@code ferry.<kind>.enabled} ({@link FerryOptions#killSwitch})
     * @param candidates the constructor of the candidate of {@code physicalClass}, Flink's node with a
     *     verdict, shared by the kinds of the class ({@code planner.candidates})
     */
    protected NativeKind(String name, Class<R> physicalClass, Class<E> execClass, ConfigOption<Boolean> killSwitch,
            BiFunction<R, Verdict, RelNode> candidates) {
        this.name = Objects.requireNonNull(name);
        this.physicalClass = Objects.requireNonNull(physicalClass);
        this.execClass = Objects.requireNonNull(execClass);
        this.killSwitch = Objects.requireNonNull(killSwitch);
        this.candidates = Objects.requireNonNull(candidates);
    }

    public final String name() {
        return name;
    }

    public final Class<R> physicalClass() {
        return physicalClass;
    }

    public final Class<E> execClass() {
        return execClass;
    }

    /** The kind's kill switch, {@code ferry.<kind>.enabled}. */
    public final ConfigOption<Boolean> killSwitch() {
        return killSwitch;
    }

    /**
     * Whether the kind is a preview: its switch defaults to false ({@link
     * FerryOptions#previewSwitch}). A preview kind claims no node while it is off ({@link
     * #isOff}), so its nodes stay exactly as Flink planned them (no {@code ferry=[…]} term, no
     * count); a kind switched on by default is marked with the reason instead.
     */
    public final boolean preview() {
        return !killSwitch.defaultValue();
    }

    /** Whether {@code ferry.enabled} or the kind's switch keeps the kind off under {@code config}. */
    public final boolean isOff(ReadableConfig config) {
        return disabledReason(config, killSwitch) != null;
    }

    // ---- planning ------------------------------------------------------------------------------

    /**
     * Whether the kind takes {@code node}, a node of its {@link #physicalClass}: every one by
     * default. A kind that replaces only the nodes of its class that Flink translates to its
     * {@link #execClass} (the deduplication among {@code StreamPhysicalRank}s, the rest being
     * Top-N) claims those; a node no kind claims is left as it is: no candidate, no {@code ferry}
     * term in EXPLAIN, not counted.
     */
    protected boolean claims(R node) {
        return true;
    }

    /**
     * The checks every kind shares (Ferry's switch and the kind's own, the state backend), then the
     * kind's {@link #match}.
     *
     * @param node a node of the final physical plan (changelog traits set), of {@link #physicalClass()}
     * @param config the table configuration the query is planned with
     */
    public final Decision decide(R node, ReadableConfig config) {
        String off = disabledReason(config, killSwitch);
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

    /**
     * {@code node} marked with Ferry's decision: the kind's candidate, built from Flink's node with
     * the kind's {@link #verdict}. A kind that carries a payload to translation, or whose node
     * cannot stay Flink's under some decision (the interval join with the {@code EARLY_FIRE} hint,
     * which throws here), overrides it.
     */
    protected RelNode candidate(R node, Decision decision) {
        return candidate(node, verdict(decision));
    }

    /** {@code node} marked with {@code verdict}: the kind's candidate. */
    protected final RelNode candidate(R node, Verdict verdict) {
        return candidates.apply(node, verdict);
    }

    /** The verdict of this kind for {@code decision}, without payload. */
    protected final Verdict verdict(Decision decision) {
        return new Verdict(this, decision, null);
    }

    /** The verdict of this kind for {@code decision}, carrying {@code payload} to EXPLAIN and translation. */
    protected final Verdict verdict(Decision decision, @Nullable Object payload) {
        return new Verdict(this, decision, payload);
    }

    /**
     * The description the exec node of {@code node}'s native candidate gets ({@link
     * #candidateDescription}): the spec's name, so a spec checked while planning is byte for byte
     * the spec translation checks again, from the cache.
     */
    protected final String nativeDescription(R node) {
        return candidateDescription(physicalClass.cast(candidate(node, Decision.nativeNode())));
    }

    /**
     * The description of the exec node {@code candidate} translates to: by default its detailed
     * description ({@code ferry=[…]} included), which Flink's node hands to its exec node; a kind
     * whose exec node Flink describes otherwise (the deduplication's {@code Deduplicate(…)})
     * overrides it.
     */
    protected String candidateDescription(R candidate) {
        return candidate.getRelDetailedDescription();
    }

    /**
     * The verdict of {@code copy}, made by Flink's planner after Ferry's program from a candidate
     * with {@code verdict} and a changed parameter ({@link Verdict#ofCopy}): {@code verdict} by
     * default. The lookup join turns it into a fallback for a copy Flink made upsert-materialized.
     */
    protected Verdict verdictOfCopy(R copy, Verdict verdict) {
        return verdict;
    }

    /**
     * The candidate's EXPLAIN terms after Flink's ({@code pw} holds them): {@code ferry=[…]}, and
     * whatever else the kind shows.
     */
    protected RelWriter explainTerms(R candidate, Verdict verdict, RelWriter pw) {
        return pw.item("ferry", verdict.term());
    }

    // ---- capabilities ---------------------------------------------------------------------------

    /**
     * Whether the kind's operator can write Ferry's columnar exchange: its output then is frames of
     * its output rows ({@link ColumnarExchanges}; {@link NativeTranslation#writesFrames}).
     */
    public boolean writesFrames() {
        return false;
    }

    /**
     * The fields of its input rows a native candidate of this kind is keyed by when it can read
     * Ferry's columnar exchange (the exchange must hash exactly these), or null when it cannot.
     */
    @Nullable
    protected int[] frameKeys(R candidate) {
        return null;
    }

    /**
     * The plan after every candidate was decided: a kind whose native operator changes what the
     * plan around it must say (the interval join's {@code EARLY_FIRE} changelog) rewrites it here.
     */
    public RelNode rewritePlan(RelNode root) {
        return root;
    }

    /** Flink's hint strategies with the hints the kind adds (the interval join's {@code EARLY_FIRE}). */
    public HintStrategyTable withHints(HintStrategyTable hints) {
        return hints;
    }

    /**
     * Programs the kind needs before Flink's {@code physical} program, by name (the interval join
     * records its hints there: Flink's physical node keeps none).
     */
    public Map<String, FlinkOptimizeProgram<StreamOptimizeContext>> programsBeforePhysical() {
        return Map.of();
    }

    // ---- translation ---------------------------------------------------------------------------

    /**
     * Ferry's transformation for Flink's exec node {@code flink}: the spec from Flink's fields, the
     * checks again (the options, and for a plan loaded from JSON everything the planner checks, end
     * with Go's verdict on the spec, {@link NativeTranslation#check}), the operator, and the
     * transformation of its shape ({@link NativeTranslation#oneInput}, {@link
     * NativeTranslation#twoInput}). Where it cannot run natively, it returns {@link
     * NativeTranslation#fallback}: Flink's operator, with the reason logged. The kill switches
     * are checked before.
     */
    protected abstract Transformation<?> translate(E flink, NativeTranslation t);

    /**
     * Called before a native node falls back to Flink's operator at translation: a kind whose node
     * cannot run Flink's operator (the interval join with early fire) throws, naming {@code reason}.
     */
    protected void checkFallback(E flink, NativeTranslation t, String reason) {}

    // ---- untyped entry points of the shared code ------------------------------------------------

    /** {@link #claims}, and nothing while a {@link #preview} kind is off under {@code config}. */
    final boolean claimsNode(RelNode node, ReadableConfig config) {
        if (preview() && isOff(config)) {
            return false;
        }
        return claims(physicalClass.cast(node));
    }

    final Decision decideNode(RelNode node, ReadableConfig config) {
        return decide(physicalClass.cast(node), config);
    }

    final RelNode candidateOf(RelNode node, Decision decision) {
        return candidate(physicalClass.cast(node), decision);
    }

    final String candidateDescriptionOf(RelNode candidate) {
        return candidateDescription(physicalClass.cast(candidate));
    }

    final Verdict verdictOfCopyOf(RelNode copy, Verdict verdict) {
        return verdictOfCopy(physicalClass.cast(copy), verdict);
    }

    final RelWriter explain(RelNode candidate, Verdict verdict, RelWriter pw) {
        return explainTerms(physicalClass.cast(candidate), verdict, pw);
    }

    @Nullable
    final int[] frameKeysOf(RelNode candidate) {
        return frameKeys(physicalClass.cast(candidate));
    }

    final Transformation<?> translateNode(ExecNode<?> flink, NativeTranslation t) {
        return translate(execClass.cast(flink), t);
    }

    final void checkFallbackOf(ExecNode<?> flink, NativeTranslation t, String reason) {
        checkFallback(execClass.cast(flink), t, reason);
    }

    // ---- reasons every kind may give -----------------------------------------------------------

    /**
     * Why {@code ferry.enabled} or the kind's switch keeps the kind off, or null. Translation
     * repeats it: the options may change between planning and translation.
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
    public static String carriedReason(String role, String field, LogicalType type) {
        try {
            ArrowTypes.arrowTypeOf(type);
            return null;
        } catch (UnsupportedOperationException e) {
            return role + " " + field + " of type " + type.asSummaryString() + ": not carried across the native boundary";
        }
    }

    /** Why a field of {@code row} (of the given role) cannot cross the Arrow boundary, or null. */
    public static String fieldsReason(String role, RowType row) {
        for (int i = 0; i < row.getFieldCount(); i++) {
            String r = carriedReason(role, row.getFieldNames().get(i), row.getTypeAt(i));
            if (r != null) {
                return r;
            }
        }
        return null;
    }

    /**
     * Why a join input's fields (role "left field" or "right field") keep the join Flink's: a type
     * that does not cross the Arrow boundary, or BINARY/VARBINARY, which crosses for the GROUP BY
     * but which the joins do not carry yet; null when every field can.
     */
    public static String joinFieldsReason(RowType type, String role) {
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
    public static boolean asyncStateThroughAdaptor(ReadableConfig config) {
        return !config.get(BACKEND).toLowerCase(Locale.ROOT).contains("forst");
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
