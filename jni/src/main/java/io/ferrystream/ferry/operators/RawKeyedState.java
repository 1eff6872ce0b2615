package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.runtime.state.AsyncSnapshotCallable;
import org.apache.flink.runtime.state.CheckpointStateOutputStream;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeOffsets;
import org.apache.flink.runtime.state.KeyGroupStatePartitionStreamProvider;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateCheckpointOutputStream;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.StreamStateHandle;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.util.Arrays;
import java.util.concurrent.RunnableFuture;
import java.util.zip.CRC32C;

/**
 * A native operator's state in Flink's raw keyed state: per non-empty key group of the subtask, the
 * sequence of self-delimiting, checksummed, compressed chunks the library writes (about 128 KiB of
 * state each, the last one flagged), so Flink's rescaling redistributes it and no key group needs
 * one huge buffer. A key group without state writes nothing. The library writes every key group's
 * chunks on the first call of a checkpoint ({@code ferry_operator_snapshot}), so the key groups are
 * asked for in a row. A checkpoint writes a frozen view of the state in Flink's asynchronous phase
 * instead ({@link #writeAsync}): the same bytes in the same handle.
 */
final class RawKeyedState {
    /** Bytes of a state chunk's header (snapshot/blob.go): flags at 6, stored length at 36. */
    private static final int CHUNK_HEADER = 48;

    private static final int FLAG_LAST = 1;

    /** Largest stored chunk the library writes: its 1 GiB payload limit plus zstd's overhead. */
    private static final long MAX_STORED = (1L << 30) + (1 << 20);

    private RawKeyedState() {}

    /** Hands every chunk of every key group in {@code inputs} to the operator, in stream order. */
    static void restore(Iterable<KeyGroupStatePartitionStreamProvider> inputs, NativeOperator op) throws IOException {
        for (KeyGroupStatePartitionStreamProvider p : inputs) {
            DataInputStream in = new DataInputStream(p.getStream());
            byte[] chunk;
            do {
                chunk = readChunk(in, p.getKeyGroupId(), op);
                op.restore(p.getKeyGroupId(), chunk);
            } while ((chunk[6] & FLAG_LAST) == 0);
        }
    }

    /** Writes the chunks of every key group of {@code out} that holds state. */
    static void snapshot(KeyedStateCheckpointOutputStream out, NativeOperator op) throws IOException {
        for (int keyGroup : out.getKeyGroupList()) {
            byte[] chunk = op.snapshot(keyGroup);
            if (chunk == null) {
                continue; // no state: nothing is written for this key group
            }
            out.startNewKeyGroup(keyGroup);
            do {
                out.write(chunk);
                chunk = op.snapshot(keyGroup);
            } while (chunk != null);
        }
    }

    /**
     * The raw keyed state future of a checkpoint: run in Flink's asynchronous phase, it writes the
     * frozen view {@code view} of {@code op} into an exclusive stream of {@code factory}, key group
     * by key group as {@link #snapshot} does, and returns the same {@link KeyGroupsStateHandle}.
     * The view is released when the future ends, is cancelled, or the task closes it
     * ({@code taskRegistry}), which also closes the stream.
     */
    static RunnableFuture<SnapshotResult<KeyedStateHandle>> writeAsync(NativeOperator op, long view,
            CheckpointStreamFactory factory, KeyGroupRange range, CloseableRegistry taskRegistry) throws IOException {
        AsyncSnapshotCallable<SnapshotResult<KeyedStateHandle>> write = new AsyncSnapshotCallable<>() {
            @Override
            protected SnapshotResult<KeyedStateHandle> callInternal() throws Exception {
                CheckpointStateOutputStream out = factory.createCheckpointStateOutputStream(CheckpointedStateScope.EXCLUSIVE);
                snapshotCloseableRegistry.registerCloseable(out);
                long[] offsets = new long[range.getNumberOfKeyGroups()];
                Arrays.fill(offsets, KeyedStateCheckpointOutputStream.NO_OFFSET_SET);
                for (int keyGroup : range) {
                    byte[] chunk = op.snapshotView(view, keyGroup);
                    if (chunk == null) {
                        continue; // no state: nothing is written for this key group
                    }
                    offsets[keyGroup - range.getStartKeyGroup()] = out.getPos();
                    do {
                        out.write(chunk);
                        chunk = op.snapshotView(view, keyGroup);
                    } while (chunk != null);
                }
                if (!snapshotCloseableRegistry.unregisterCloseable(out)) {
                    throw new IOException("the checkpoint stream of the native state was closed");
                }
                StreamStateHandle handle = out.closeAndGetHandle();
                return handle == null ? SnapshotResult.empty()
                        : SnapshotResult.of(new KeyGroupsStateHandle(new KeyGroupRangeOffsets(range, offsets), handle));
            }

            @Override
            protected void cleanupProvidedResources() {
                op.releaseView(view);
            }
        };
        return write.toAsyncSnapshotFutureTask(taskRegistry);
    }

    /** Reads one self-delimiting state chunk: the fixed header, then the bytes it announces. */
    private static byte[] readChunk(DataInputStream in, int keyGroup, NativeOperator op) throws IOException {
        byte[] header = new byte[CHUNK_HEADER];
        try {
            in.readFully(header);
        } catch (EOFException e) {
            throw truncated(keyGroup, "in a chunk header", e);
        }
        // Trust the length only once the header is known to be Ferry's and intact: otherwise let
        // the library say what is wrong with it (magic, version, header checksum).
        CRC32C crc = new CRC32C();
        crc.update(header, 0, 44);
        if (header[0] != 'F' || header[1] != 'R' || header[2] != 'Y' || header[3] != 'S'
                || (int) crc.getValue() != le32(header, 44)) {
            op.restore(keyGroup, header); // throws FerryException(EDATA)
            throw new FerryException(FerryException.EDATA, "Ferry state of key group " + keyGroup + ": invalid chunk header");
        }
        long stored = le32(header, 36) & 0xffffffffL;
        if (stored > MAX_STORED) {
            throw new FerryException(FerryException.EDATA,
                    "Ferry state of key group " + keyGroup + ": chunk length " + stored + " is invalid");
        }
        byte[] chunk = new byte[CHUNK_HEADER + (int) stored];
        System.arraycopy(header, 0, chunk, 0, CHUNK_HEADER);
        try {
            in.readFully(chunk, CHUNK_HEADER, (int) stored);
        } catch (EOFException e) {
            throw truncated(keyGroup, "in a chunk of " + stored + " bytes", e);
        }
        return chunk;
    }

    private static int le32(byte[] b, int at) {
        return (b[at] & 0xff) | (b[at + 1] & 0xff) << 8 | (b[at + 2] & 0xff) << 16 | (b[at + 3] & 0xff) << 24;
    }

    private static FerryException truncated(int keyGroup, String where, EOFException e) {
        return new FerryException(FerryException.EDATA,
                "Ferry state of key group " + keyGroup + " is truncated: the stream ends " + where, e);
    }
}
