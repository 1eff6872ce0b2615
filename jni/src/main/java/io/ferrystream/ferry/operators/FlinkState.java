package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.table.data.RowData;

import org.apache.arrow.memory.BufferAllocator;

import javax.annotation.Nullable;

import java.io.Serializable;
import java.util.List;

/**
 * The managed keyed state Flink's own operator keeps where a native operator runs, which the native
 * operator imports when restored from a checkpoint or savepoint taken with Ferry off, and writes
 * into a savepoint so that Flink's operator can restore it (docs/state.md, "Switching Ferry on or
 * off"). One implementation per operator kind that carries Flink's state: {@code FlinkAccState}
 * for the group aggregates, {@code FlinkIntervalJoinState} for the interval join. {@link
 * ForeignStateGuard} refuses every state outside {@link #names}.
 */
public interface FlinkState extends Serializable {
    /** The names of Flink's key-value states this form reads and writes. */
    List<String> names();

    /** Why the state cannot be imported or written, or null. */
    @Nullable
    String refusal();

    /**
     * Imports every key of Flink's states in {@code backend} into {@code op}, clearing each value
     * once handed over.
     *
     * @return the number of keys imported
     */
    long importInto(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator) throws Exception;

    /**
     * Writes every key {@code op} holds into Flink's states of {@code backend}, as Flink's own
     * operator keeps them, adding each key to {@code keys} as it writes it, for {@link #clear}. On
     * failure the caller clears {@code keys}, so that nothing is left behind.
     */
    void exportFrom(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator, List<RowData> keys)
            throws Exception;

    /**
     * Clears {@code keys} from Flink's states again, once the savepoint has its copy or the export
     * failed.
     */
    void clear(KeyedStateBackend<?> backend, List<RowData> keys) throws Exception;
}
