package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.operators.RescaleSupport.Changelog;
import io.ferrystream.ferry.operators.RescaleSupport.Planned;

import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.CheckpointStateOutputStream;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.streaming.api.operators.OperatorSnapshotFinalizer;
import org.apache.flink.streaming.api.operators.OperatorSnapshotFutures;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.ferrystream.ferry.operators.RescaleSupport.MAX_PARALLELISM;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A checkpoint of a native operator writes its state in Flink's asynchronous phase: while that
 * part is held up (its checkpoint stream blocks), the task processes rows, and the checkpoint
 * still holds the state at the synchronous phase, not those rows.
 */
class AsyncCheckpointTest {
    @Test
    void theTaskProcessesRowsWhileTheCheckpointIsWritten() throws Exception {
        Planned p = RescaleSupport.plan(RescaleSupport.AGGS, true, 64);
        Changelog c = new Changelog(7, 300);
        List<RowData> before = c.next(3000);
        List<RowData> after = c.next(3000);
        var h = RescaleSupport.harness(p, MAX_PARALLELISM, 1, 0, null);
        for (RowData r : before) {
            h.processElement(new StreamRecord<>(r));
        }
        h.prepareSnapshotPreBarrier(1);
        RescaleSupport.drain(h, p.outputType());

        BlockingFactory storage = new BlockingFactory();
        AbstractNativeOperator<?> op = (AbstractNativeOperator<?>) h.getOperator();
        OperatorSnapshotFutures futures = op.snapshotState(1, 1, CheckpointOptions.forCheckpointWithDefaultLocation(), storage);
        CompletableFuture<OperatorSubtaskState> written = CompletableFuture.supplyAsync(() -> {
            try { // what Flink's AsyncCheckpointRunnable does on the task's asynchronous pool
                return OperatorSnapshotFinalizer.create(futures).getJobManagerOwnedState();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        assertTrue(storage.opened.await(60, TimeUnit.SECONDS), "the asynchronous part never opened its stream");

        for (RowData r : after) { // the task goes on: the rows change the frozen keys and add others
            h.processElement(new StreamRecord<>(r));
        }
        h.prepareSnapshotPreBarrier(2);
        List<String> live = RescaleSupport.drain(h, p.outputType());
        assertFalse(written.isDone(), "the checkpoint was written before the stream was released");
        storage.proceed.countDown();
        OperatorSubtaskState state = written.get(60, TimeUnit.SECONDS);
        h.close();

        assertTrue(storage.bytes > 0, "nothing was written");
        List<KeyGroupsStateHandle> raw = RescaleSupport.rawKeyed(state);
        assertEquals(1, raw.size());
        // Restored, the checkpoint continues exactly as the operator did after the freeze.
        var restored = RescaleSupport.harness(p, MAX_PARALLELISM, 1, 0, state);
        for (RowData r : after) {
            restored.processElement(new StreamRecord<>(r));
        }
        restored.prepareSnapshotPreBarrier(2);
        SnapshotRestoreTest.assertSameOutput(live, RescaleSupport.drain(restored, p.outputType()), "restored from the asynchronous checkpoint");
        restored.close();
    }

    /** In-memory checkpoint storage whose stream opens only once the test lets it. */
    static final class BlockingFactory implements CheckpointStreamFactory {
        final CountDownLatch opened = new CountDownLatch(1);
        final CountDownLatch proceed = new CountDownLatch(1);
        final MemCheckpointStreamFactory memory = new MemCheckpointStreamFactory(256 << 20);
        volatile long bytes;

        @Override
        public CheckpointStateOutputStream createCheckpointStateOutputStream(CheckpointedStateScope scope) throws IOException {
            opened.countDown();
            try {
                if (!proceed.await(60, TimeUnit.SECONDS)) {
                    throw new IOException("never released");
                }
            } catch (InterruptedException e) {
                throw new InterruptedIOException();
            }
            CheckpointStateOutputStream out = memory.createCheckpointStateOutputStream(scope);
            return new CheckpointStateOutputStream() {
                @Override
                public StreamStateHandle closeAndGetHandle() throws IOException {
                    bytes = out.getPos();
                    return out.closeAndGetHandle();
                }

                @Override
                public long getPos() throws IOException {
                    return out.getPos();
                }

                @Override
                public void write(int b) throws IOException {
                    out.write(b);
                }

                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    out.write(b, off, len);
                }

                @Override
                public void flush() throws IOException {
                    out.flush();
                }

                @Override
                public void sync() throws IOException {
                    out.sync();
                }

                @Override
                public void close() throws IOException {
                    out.close();
                }
            };
        }

        @Override
        public boolean canFastDuplicate(StreamStateHandle handle, CheckpointedStateScope scope) {
            return false;
        }

        @Override
        public List<StreamStateHandle> duplicate(List<StreamStateHandle> handles, CheckpointedStateScope scope) {
            throw new UnsupportedOperationException();
        }
    }
}
