package io.ferrystream.ferry.nativelib;

/**
 * The natives of libferry_jni.so, one per function of {@code include/ferry.h}; bound by
 * {@code RegisterNatives} when {@link NativeLibrary} loads the library. Every failure throws
 * {@link FerryException} with the native code and message. Addresses are those of arrow-java
 * {@code ArrowArray}/{@code ArrowSchema} structs ({@code memoryAddress()}); the glue zeroes
 * output structs before each call. Use {@link NativeOperator} rather than these.
 */
final class FerryNative {
    private FerryNative() {}

    static native int abiVersion();

    static native String version();

    /** ferry_init with a JSON options object. */
    static native void init(String optionsJson);

    /** Flag of the output natives: {@code outArrayAddr} was filled with a chunk. */
    static final int FILLED = 1;
    /** Flag of the output natives: more chunks follow; call {@link #next} until it is clear. */
    static final int MORE = 2;

    /**
     * ferry_operator_open; {@code secretsJson} is null or the secrets of a function kind (never
     * in a message); {@code inputSchemaAddrs} holds one ArrowSchema address per input (0: no check
     * of that input), or is null (no check). Every schema is consumed.
     */
    static native long open(String specJson, String secretsJson, long[] inputSchemaAddrs);

    static native void outputSchema(long handle, long schemaAddr);

    /**
     * ferry_operator_process of one batch, of input {@code input}: {@link #FILLED} | {@link #MORE}
     * flags. The input is always consumed.
     */
    static native int process(long handle, int input, long inArrayAddr, long nowMs, long outArrayAddr);

    /**
     * ferry_operator_process with runs: one ArrowArray address per input (0: no rows), {@code runs}
     * holds {@code nRuns} (input, rows) pairs in arrival order. Every batch is always consumed.
     */
    static native int processRuns(long handle, long[] inArrayAddrs, int[] runs, int nRuns, long nowMs, long outArrayAddr);

    static native int advance(long handle, long watermarkMs, long nowMs, long outArrayAddr);

    static native int flush(long handle, long nowMs, long outArrayAddr);

    /** ferry_operator_next: the next chunk of pending output. */
    static native int next(long handle, long outArrayAddr);

    /** The state blob of a key group, or null when the key group holds no state. */
    static native byte[] snapshot(long handle, int keyGroup);

    static native void restore(long handle, int keyGroup, byte[] blob);

    /** ferry_operator_freeze: the id of a frozen view of the state (never 0). */
    static native long freeze(long handle);

    /** ferry_operator_snapshot_view: as {@link #snapshot}, for a frozen view; any thread. */
    static native byte[] snapshotView(long handle, long view, int keyGroup);

    /** ferry_operator_release_view; any thread. */
    static native void releaseView(long handle, long view);

    /** ferry_operator_import: consumes the exported schema and array at the two addresses. */
    static native void importState(long handle, long schemaAddr, long arrayAddr);

    /** ferry_operator_export: output flags as {@link #advance}. */
    static native int exportState(long handle, long outArrayAddr);

    /**
     * ferry_operator_stats: {@code out[0]} keys, {@code out[1]} state bytes, {@code out[2]} the
     * earliest pending processing-time timer (epoch ms; Long.MAX_VALUE when none).
     */
    static native void stats(long handle, long[] out);

    static native void close(long handle);

    static native long outstandingBytes();

    /**
     * ferry_runtime_memory: {@code out[0]} bytes the Go runtime holds, {@code out[1]} live heap
     * bytes, {@code out[2]} the soft memory limit (Long.MAX_VALUE when none).
     */
    static native void runtimeMemory(long[] out);

    /**
     * The address of the glue's release callback for input batches whose struct tree Java owns
     * (InputExport): it only sets {@code release} of the struct and its children to NULL.
     */
    static native long inputRelease();

    /** Calls the release callback of the ArrowArray at {@code arrayAddr} if it is set. */
    static native void releaseArray(long arrayAddr);
}
