package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.exchange.FerryFrameTypeInfo;
import io.ferrystream.ferry.exchange.FrameKeySelector;
import io.ferrystream.ferry.operators.Batching;
import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.memory.ManagedMemoryUseCase;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.delegation.PlannerBase;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeConfig;
import org.apache.flink.table.planner.plan.nodes.exec.utils.ExecNodeUtil;
import org.apache.flink.table.planner.plan.nodes.exec.utils.TransformationMetadata;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.util.Optional;

/**
 * One translation of a {@link NativeExecNode}: what a kind's {@link NativeKind#translate} reads
 * (the planner, the node's configuration, its inputs and output) and the pieces every kind builds
 * alike: Go's verdict on the spec ({@link #check}), the batching ({@link #batching}), the
 * transformation of each operator shape ({@link #oneInput}, {@link #twoInput}) and the way back to
 * Flink's operator ({@link #fallback}).
 *
 * <p>Transformations are built as Flink builds its own operator's: Flink's transformation metadata
 * (name, description and, where the planner sets UIDs, the UID Flink's operator gets), the input's
 * parallelism, Flink's key selectors and key type over the same fields, so Flink's exchange and key
 * groups stay valid; and each declares the operator's weight for Flink's managed memory.
 */
public final class NativeTranslation {
    private final NativeExecNode node;
    private final PlannerBase planner;
    private final ExecNodeConfig config;

    NativeTranslation(NativeExecNode node, PlannerBase planner, ExecNodeConfig config) {
        this.node = node;
        this.planner = planner;
        this.config = config;
    }

    public PlannerBase planner() {
        return planner;
    }

    /** The node's configuration: the table configuration with the plan's persisted options. */
    public ExecNodeConfig config() {
        return config;
    }

    /** The node's description, the spec's name. */
    public String description() {
        return node.getDescription();
    }

    /** Flink's output row type of the node. */
    public RowType outputType() {
        return (RowType) node.getOutputType();
    }

    /** The row type of input {@code i} (for a columnar exchange, the rows its frames hold). */
    public RowType inputType(int i) {
        return (RowType) node.getInputEdges().get(i).getOutputType();
    }

    /** Input {@code i}, translated. Only once the node runs natively: a fallback translates its inputs itself. */
    @SuppressWarnings("unchecked")
    public Transformation<RowData> input(int i) {
        return (Transformation<RowData>) node.getInputEdges().get(i).translateToPlan(planner);
    }

    /** What the kind's candidate carried to translation ({@link Verdict#payload}); null in a loaded plan. */
    @Nullable
    @SuppressWarnings("unchecked")
    public <T> T payload() {
        return (T) node.payload();
    }

    /** Whether the node feeds Ferry's columnar exchange, so its operator writes frames ({@link NativeKind#writesFrames}). */
    public boolean writesFrames() {
        return node.writesFrames();
    }

    /** Whether an input of the node requires a singleton distribution (Flink then runs it at parallelism 1). */
    public boolean inputsContainSingleton() {
        return node.singletonInputs();
    }

    /** Empty when Go opens {@code spec}; otherwise why not ({@link NativeSupport#check}). */
    public Optional<String> check(NativeSpec spec) {
        return NativeSupport.check(spec);
    }

    /** As {@link #check(NativeSpec)}, and Go's output columns are the ones of {@code outputType}. */
    public Optional<String> check(NativeSpec spec, RowType outputType) {
        return NativeSupport.check(spec, outputType);
    }

    /**
     * Flink's own operator after all, for {@code reason}: logged at WARN, recorded as the node's
     * {@link NativeExecNode#fallbackReason}, and a columnar exchange feeding the node carries rows.
     * Returns Flink's transformation, which the kind returns.
     */
    public Transformation<?> fallback(String reason) {
        node.fallBack(this, reason);
        return node.translateFlinks(planner);
    }

    /** Flink's own transformation of the node, for a kind that takes Flink's operator apart (the lookup join). */
    public Transformation<?> flinkTransformation() {
        return node.translateFlinks(planner);
    }

    /**
     * Flink's transformation metadata for the operator named {@code operatorName} (Flink's
     * constant, e.g. {@code group-aggregate}): Ferry's display name, Flink's description and UID.
     */
    public TransformationMetadata meta(String operatorName) {
        return node.meta(operatorName, config);
    }

    /**
     * The batching of a native operator: with {@code bundles} (the kind replaces Flink's mini-batch
     * operator, whose results depend on where a bundle ends) one batch per bundle of {@code
     * table.exec.mini-batch.size} rows; otherwise {@code ferry.batch.size} and {@code
     * ferry.batch.max-delay}.
     */
    public Batching batching(boolean bundles) {
        return bundles
                ? Batching.bundles(MinibatchUtil.miniBatchSize(config))
                : Batching.of(config.get(FerryOptions.BATCH_SIZE), config.get(FerryOptions.BATCH_MAX_DELAY).toMillis());
    }

    /**
     * The one-input shape: {@code operator} over input 0, at its parallelism, emitting Flink's
     * output rows, or frames when the node feeds the columnar exchange ({@link #writesFrames}).
     * Keyed by the fields {@code keys} of the input rows as Flink keys its operator (Flink's key
     * selector and key type), or not keyed when {@code keys} is null. Behind the columnar exchange
     * (frames in) the key type stays Flink's, so the subtask's key groups and savepoints keep Flink's
     * shape, but the key selector is a {@link FrameKeySelector}: a frame has no single key.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public OneInputTransformation<RowData, RowData> oneInput(
            String operatorName, OneInputStreamOperator<RowData, ?> operator, @Nullable int[] keys) {
        Transformation<?> in = input(0);
        TypeInformation<?> out = writesFrames() ? FerryFrameTypeInfo.INSTANCE : InternalTypeInfo.of(outputType());
        OneInputTransformation transform = ExecNodeUtil.createOneInputTransformation(
                in, meta(operatorName), (StreamOperator) operator, (TypeInformation) out, in.getParallelism(), false);
        if (keys != null) {
            RowDataKeySelector selector = keySelector(keys, inputType(0));
            transform.setStateKeySelector(in.getOutputType() instanceof FerryFrameTypeInfo ? new FrameKeySelector<>(selector) : selector);
            transform.setStateKeyType(selector.getProducedType());
        }
        return withManagedMemory(transform, config);
    }

    /**
     * The keyed two-input shape: {@code operator} over inputs 0 and 1, at the left input's
     * parallelism, emitting Flink's output rows, keyed by Flink's key selectors over {@code
     * leftKeys} and {@code rightKeys}, with the left key's type as the key type.
     */
    public TwoInputTransformation<RowData, RowData, RowData> twoInput(
            String operatorName, TwoInputStreamOperator<RowData, RowData, RowData> operator, int[] leftKeys, int[] rightKeys) {
        Transformation<RowData> left = input(0);
        Transformation<RowData> right = input(1);
        TwoInputTransformation<RowData, RowData, RowData> transform = ExecNodeUtil.createTwoInputTransformation(
                left, right, meta(operatorName), operator, InternalTypeInfo.of(outputType()), left.getParallelism(), false);
        RowDataKeySelector leftSelect = keySelector(leftKeys, inputType(0));
        RowDataKeySelector rightSelect = keySelector(rightKeys, inputType(1));
        transform.setStateKeySelectors(leftSelect, rightSelect);
        transform.setStateKeyType(leftSelect.getProducedType());
        return withManagedMemory(transform, config);
    }

    private RowDataKeySelector keySelector(int[] keys, RowType rowType) {
        return KeySelectorUtil.getRowDataSelector(planner.getFlinkContext().getClassLoader(), keys, InternalTypeInfo.of(rowType));
    }

    /**
     * Declares a native operator's weight ({@code ferry.memory.weight}) for Flink's managed memory
     * (use case OPERATOR), as Flink's streaming window operators declare theirs (weight 1, from
     * {@code WINDOW_AGG_MEMORY_RATIO}): the operator's share of its slot's managed memory is then
     * its budget (docs/state.md#memory). Weight 0 declares nothing. Returns {@code transform}.
     */
    static <T extends Transformation<?>> T withManagedMemory(T transform, ReadableConfig config) {
        int weight = config.get(FerryOptions.MEMORY_WEIGHT);
        if (weight < 0) {
            throw new IllegalArgumentException(FerryOptions.MEMORY_WEIGHT.key() + " must not be negative: " + weight);
        }
        if (weight > 0) {
            transform.declareManagedMemoryUseCaseAtOperatorScope(ManagedMemoryUseCase.OPERATOR, weight);
        }
        return transform;
    }
}
