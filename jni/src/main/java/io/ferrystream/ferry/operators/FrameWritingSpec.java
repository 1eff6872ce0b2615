package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.exchange.ExchangeTarget;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.flink.runtime.state.KeyGroupRange;

/**
 * The spec of a kind whose operator can write Ferry's columnar exchange (the local aggregate, the
 * incremental aggregate): its output then is frames of its output rows, routed for the consumer's
 * channels and key groups (docs/abi.md#frames), which only the running task knows ({@link
 * ExchangeTarget}).
 */
public interface FrameWritingSpec {
    /**
     * Opens the library's operator writing frames for {@code target}, for {@code range} of the
     * task's {@code maxParallelism} key groups.
     */
    NativeOperator openWritingFrames(ExchangeTarget target, int maxParallelism, KeyGroupRange range, BufferAllocator allocator);
}
