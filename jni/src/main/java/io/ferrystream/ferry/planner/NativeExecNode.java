package io.ferrystream.ferry.planner;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.streaming.api.transformations.PartitionTransformation;
import org.apache.flink.streaming.runtime.partitioner.GlobalPartitioner;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.delegation.PlannerBase;
import org.apache.flink.table.planner.plan.nodes.exec.ExecEdge;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeBase;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeConfig;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeContext;
import org.apache.flink.table.planner.plan.nodes.exec.SingleTransformationTranslator;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.utils.TransformationMetadata;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonValue;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The one exec node of every native kind: Flink's own exec node of the plan node (the delegate,
 * as Flink's code made it from the physical node, or as a plan loaded from JSON holds it) and the
 * kind that translates it ({@link NativeKind#translate}).
 *
 * <p>It is Flink's node in all but the translation: the delegate's id, context (so the
 * transformation's UID is the one Flink's operator gets, {@code <id>_<transformation name>}),
 * persisted configuration, input properties, output type and description; its input edges are
 * the delegate's too. Written as JSON ({@code COMPILE PLAN}) it is the delegate, field for field.
 * Only the display name of the transformation Ferry builds says Ferry ({@code Ferry} and Flink's
 * simplified name, e.g. {@code FerryGroupAggregate[3]}).
 *
 * <p>Translation checks the kill switches, then asks the kind; where the kind cannot run the node
 * natively (options or Go's verdict changed since planning, or the plan was loaded from JSON and
 * never planned by Ferry) the delegate translates to Flink's own operator, and the reason is logged
 * at WARN ({@link #fallbackReason}).
 */
public final class NativeExecNode extends ExecNodeBase<RowData> implements StreamExecNode<RowData> {
    private static final Logger LOG = LoggerFactory.getLogger(NativeExecNode.class);

    private final NativeKind<?, ?> kind;
    private final ExecNodeBase<?> flink;
    @Nullable private final Object payload;
    /** Set by the columnar exchange it feeds, before translation: the operator writes frames. */
    private boolean writesFrames;
    /** Set when translation fell back to Flink's operator. */
    @Nullable private String fallbackReason;
    /** Translated while its kind, a {@link NativeKind#preview}, was off: Flink's node, no candidate. */
    private boolean previewOff;

    /**
     * @param flink Flink's exec node of the kind's {@link NativeKind#execClass}; its input edges,
     *     if it has any, become this node's
     * @param payload what the kind's candidate carries to translation ({@link Verdict#payload}), or null
     */
    NativeExecNode(NativeKind<?, ?> kind, ExecNodeBase<?> flink, @Nullable Object payload) {
        super(
                flink.getId(),
                FlinkFields.<ExecNodeContext>read(flink, ExecNodeBase.class, "context"),
                flink.getPersistedConfig(),
                flink.getInputProperties(),
                flink.getOutputType(),
                flink.getDescription());
        this.kind = Objects.requireNonNull(kind);
        this.flink = flink;
        this.payload = payload;
        super.setCompiled(FlinkFields.<Boolean>read(flink, ExecNodeBase.class, "isCompiled"));
        List<ExecEdge> edges = FlinkFields.read(flink, ExecNodeBase.class, "inputEdges");
        if (edges != null) {
            List<ExecEdge> own = new ArrayList<>(edges.size());
            for (ExecEdge e : edges) {
                own.add(ExecEdge.builder().from(e).target(this).build());
            }
            super.setInputEdges(own);
        }
    }

    public NativeKind<?, ?> kind() {
        return kind;
    }

    /** Flink's exec node this one runs natively; what a compiled plan records in its place. */
    @JsonValue
    public ExecNodeBase<?> flinkNode() {
        return flink;
    }

    /**
     * Whether the node is a candidate: false once it translated while its kind, a {@link
     * NativeKind#preview}, was off, as planned SQL leaves such a node Flink's, no candidate.
     */
    public boolean isCandidate() {
        return !previewOff;
    }

    /** Why translation built Flink's operator after all; empty when it built Ferry's (or before translation). */
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    public void setCompiled(boolean compiled) {
        super.setCompiled(compiled);
        flink.setCompiled(compiled);
    }

    @Override
    public void setInputEdges(List<ExecEdge> inputEdges) {
        super.setInputEdges(inputEdges);
        flink.setInputEdges(retargeted(inputEdges));
    }

    @Override
    public void replaceInputEdge(int index, ExecEdge newInputEdge) {
        super.replaceInputEdge(index, newInputEdge);
        flink.replaceInputEdge(index, ExecEdge.builder().from(newInputEdge).target(flink).build());
    }

    private List<ExecEdge> retargeted(List<ExecEdge> edges) {
        List<ExecEdge> out = new ArrayList<>(edges.size());
        for (ExecEdge e : edges) {
            out.add(ExecEdge.builder().from(e).target(flink).build());
        }
        return out;
    }

    /** Feeds Ferry's columnar exchange: the operator writes frames when native. Before translation. */
    void writeFrames() {
        if (kind.writesFrames()) {
            writesFrames = true;
        }
    }

    boolean writesFrames() {
        return writesFrames;
    }

    /** {@code Ferry} and Flink's simplified name: the display name of Ferry's transformation. */
    @Override
    protected String getSimplifiedName() {
        return "Ferry" + flink.getClass().getSimpleName().replace("StreamExec", "");
    }

    @Override
    protected Transformation<RowData> translateToPlanInternal(PlannerBase planner, ExecNodeConfig config) {
        NativeTranslation t = new NativeTranslation(this, planner, config);
        String off = NativeKind.disabledReason(config, kind.killSwitch());
        Transformation<?> result;
        if (off != null && kind.preview()) {
            // a preview kind that is off is Flink's node as planned (only a plan loaded from JSON
            // gets here: the planner makes no candidate of it), not a fallback worth a warning
            fallbackReason = off;
            previewOff = true;
            result = translateFlinks(planner);
        } else {
            result = off != null ? t.fallback(off) : kind.translateNode(flink, t);
        }
        if (fallbackReason == null && flink instanceof SingleTransformationTranslator && singletonInputs(result)) {
            // what ExecNodeBase#translateToPlan does for Flink's node of this kind
            result.setParallelism(1);
            result.setMaxParallelism(1);
        }
        @SuppressWarnings("unchecked")
        Transformation<RowData> rows = (Transformation<RowData>) result;
        return rows;
    }

    /** Flink's translation of the delegate: its own operator. */
    Transformation<?> translateFlinks(PlannerBase planner) {
        return flink.translateToPlan(planner);
    }

    /** Records that translation {@code t} falls back to Flink's operator, for {@code reason}. */
    void fallBack(NativeTranslation t, String reason) {
        kind.checkFallbackOf(flink, t, reason);
        fallbackReason = reason;
        LOG.warn("Ferry: {} runs Flink's operator at translation ({}): the plan was loaded from JSON, or changed"
                + " since planning", getDescription(), reason);
        for (ExecEdge e : getInputEdges()) {
            if (e.getSource() instanceof ColumnarExchangeExecNode) {
                ((ColumnarExchangeExecNode) e.getSource()).carryRows("the " + kind.name() + " fell back at translation");
            }
        }
    }

    @Nullable
    Object payload() {
        return payload;
    }

    TransformationMetadata meta(String operatorName, ExecNodeConfig config) {
        return createTransformationMeta(operatorName, config);
    }

    boolean singletonInputs() {
        return inputsContainSingleton();
    }

    /** ExecNodeBase's rule for a {@link SingleTransformationTranslator}: a singleton input, or a global partitioner. */
    private boolean singletonInputs(Transformation<?> transformation) {
        return inputsContainSingleton()
                || transformation.getInputs().stream().anyMatch(input -> input instanceof PartitionTransformation
                        && ((PartitionTransformation<?>) input).getPartitioner() instanceof GlobalPartitioner);
    }
}
