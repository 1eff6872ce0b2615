package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.exchange.FerryFrameTypeInfo;
import io.ferrystream.ferry.exchange.FrameKeySelector;
import io.ferrystream.ferry.operators.Batching;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.memory.ManagedMemoryUseCase;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.delegation.PlannerBase;
import org.apache.flink.table.planner.plan.nodes.exec.utils.ExecNodeUtil;
import org.apache.flink.table.planner.plan.nodes.exec.utils.TransformationMetadata;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;

/** What the exec nodes of every native kind decide alike. */
final class NativeExecNodes {
    private NativeExecNodes() {}

    /**
     * The batching of a native operator: with {@code bundles} (the kind replaces Flink's mini-batch
     * operator, whose results depend on where a bundle ends) one batch per bundle of {@code
     * table.exec.mini-batch.size} rows; otherwise {@code ferry.batch.size} and {@code
     * ferry.batch.max-delay}.
     */
    static Batching batching(ReadableConfig config, boolean bundles) {
        return bundles
                ? Batching.bundles(MinibatchUtil.miniBatchSize(config))
                : Batching.of(config.get(FerryOptions.BATCH_SIZE), config.get(FerryOptions.BATCH_MAX_DELAY).toMillis());
    }

    /**
     * The transformation of a keyed one-input native operator, built as Flink builds its own
     * operator's: Flink's transformation metadata (hence its UID and operator ID), output type and
     * the input's parallelism, and Flink's key selector and key type over the fields {@code keys}
     * of the input rows, so Flink's exchange and key groups stay valid.
     */
    static OneInputTransformation<RowData, RowData> keyedTransformation(
            PlannerBase planner,
            ReadableConfig config,
            Transformation<?> input,
            TransformationMetadata meta,
            OneInputStreamOperator<RowData, RowData> operator,
            RowType outputType,
            int[] keys,
            RowType inputType) {
        return keyedTransformation(planner, config, input, meta, operator, InternalTypeInfo.of(outputType), keys, inputType);
    }

    /**
     * As {@link #keyedTransformation(PlannerBase, ReadableConfig, Transformation, TransformationMetadata,
     * OneInputStreamOperator, RowType, int[], RowType)}, of the output type {@code outputType}
     * ({@link FerryFrameTypeInfo} for an operator writing Ferry's columnar exchange). Behind the
     * columnar exchange (an input of {@link FerryFrameTypeInfo}) the key type stays Flink's, so the
     * subtask's key groups and savepoints keep Flink's shape, but the key selector is a {@link
     * FrameKeySelector}: a frame has no single key.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static OneInputTransformation<RowData, RowData> keyedTransformation(
            PlannerBase planner,
            ReadableConfig config,
            Transformation<?> input,
            TransformationMetadata meta,
            OneInputStreamOperator<RowData, RowData> operator,
            TypeInformation<?> outputType,
            int[] keys,
            RowType inputType) {
        OneInputTransformation transform = ExecNodeUtil.createOneInputTransformation(
                (Transformation) input, meta, operator, (TypeInformation) outputType, input.getParallelism(), false);
        RowDataKeySelector selector =
                KeySelectorUtil.getRowDataSelector(planner.getFlinkContext().getClassLoader(), keys, InternalTypeInfo.of(inputType));
        transform.setStateKeySelector(input.getOutputType() instanceof FerryFrameTypeInfo ? new FrameKeySelector<>(selector) : selector);
        transform.setStateKeyType(selector.getProducedType());
        return withManagedMemory(transform, config);
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
