package io.ferrystream.ferry.nativelib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import java.util.List;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.TransferPair;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Ferry's own C Data path against the real libferry.so: the reusable input tree ({@link
 * InputExport}) and the output chunks loaded with one reference manager each ({@link
 * OutputChunk}): zero copy both ways, release by the library on every path, the chunk's lifetime
 * through reloads, clears and transfers, and malformed roots as exceptions.
 */
class CDataTest {
    @RegisterExtension
    final NativeTestAllocator lib = new NativeTestAllocator();

    private static long child(long root, int i) {
        return MemoryUtil.getLong(MemoryUtil.getLong(root + InputExport.CHILDREN) + 8L * i);
    }

    @Test
    void theInputTreeCarriesTheVectorsOwnBuffersAndTheLibraryReleasesIt() {
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 64);
                InputExport tree = new InputExport();
                ArrowArray out = ArrowArray.allocateNew(lib.allocator())) {
            w.write(Bids.row(RowKind.INSERT, 1L, null));
            Bids.write(w, 2, 9, 9);
            long addr = tree.fill(w.root());
            assertNotEquals(0, addr);
            assertEquals(10, MemoryUtil.getLong(addr + InputExport.LENGTH));
            assertEquals(3, MemoryUtil.getLong(addr + InputExport.N_CHILDREN));
            assertEquals(FerryNative.inputRelease(), MemoryUtil.getLong(addr + InputExport.RELEASE));
            for (int c = 0; c < 3; c++) {
                FieldVector v = w.root().getVector(c);
                long[] bufs = NativeOperatorTest.childBuffers(addr, c);
                assertEquals(2, bufs.length);
                assertEquals(v.getValidityBuffer().memoryAddress(), bufs[0], "column " + c + " validity");
                assertEquals(v.getDataBuffer().memoryAddress(), bufs[1], "column " + c + " data");
                assertEquals(v.getNullCount(), MemoryUtil.getLong(child(addr, c) + InputExport.NULL_COUNT));
                assertEquals(10, MemoryUtil.getLong(child(addr, c) + InputExport.LENGTH));
            }
            assertEquals(1, MemoryUtil.getLong(child(addr, 1) + InputExport.NULL_COUNT), "one NULL price");
            int refs = w.root().getVector(0).getDataBuffer().refCnt();
            assertEquals(FerryNative.FILLED, FerryNative.process(op.nativeHandle(), 0, addr, 0, out.memoryAddress()));
            assertTrue(tree.released(), "the library released the input before returning");
            for (int c = 0; c < 3; c++) {
                assertEquals(0, MemoryUtil.getLong(child(addr, c) + InputExport.RELEASE), "child " + c);
            }
            assertEquals(refs, w.root().getVector(0).getDataBuffer().refCnt(), "nothing retained");
            FerryNative.releaseArray(out.memoryAddress());

            // the same tree again, for a batch the library rejects: still released
            w.reset();
            Bids.write(w, 1, 4, 4);
            ((TinyIntVector) w.root().getVector(2)).set(1, 9); // RowKind byte 9
            assertEquals(addr, tree.fill(w.root()), "the tree is reused");
            FerryException e = assertThrows(FerryException.class,
                    () -> FerryNative.process(op.nativeHandle(), 0, addr, 0, out.memoryAddress()));
            assertEquals(FerryException.EDATA, e.code());
            assertTrue(tree.released(), "released on the error path too");
        }
    }

    @Test
    void outputChunksAreGoMemoryReleasedWithTheirLastBuffer() {
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 512);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator());
                VectorSchemaRoot other = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            Bids.write(w, 0, 500, 500);
            long javaBefore = lib.allocator().getAllocatedMemory();
            assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
            long first = NativeLibrary.outstandingBytes();
            assertTrue(first > 500 * (8 + 8 + 4), "the chunk is Go's memory: " + first);
            assertEquals(javaBefore, lib.allocator().getAllocatedMemory(), "no Java allocation for the output");
            for (FieldVector v : out.getFieldVectors()) {
                assertInstanceOf(OutputChunk.class, v.getDataBuffer().getReferenceManager(), v.getName());
                assertInstanceOf(OutputChunk.class, v.getValidityBuffer().getReferenceManager(), v.getName());
            }
            // bidder has no NULLs: Go sends no validity bitmap, the chunk supplies an all-valid one
            assertEquals(0, out.getVector(0).getNullCount());
            assertEquals(500, out.getRowCount());
            // a vector transferred out keeps the chunk alive after the root lets go of it
            TransferPair tp = out.getVector(1).makeTransferPair(other.getVector(1));
            tp.transfer();
            out.clear();
            assertEquals(first, NativeLibrary.outstandingBytes(), "the transferred vector holds the chunk");
            assertEquals(1L, ((BigIntVector) other.getVector(1)).get(499), "cnt of bidder 499");
            other.getVector(1).clear();
            assertEquals(0, NativeLibrary.outstandingBytes(), "released with its last buffer");

            // reloading the root releases the previous chunk
            w.reset();
            Bids.write(w, 0, 500, 500);
            assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
            long second = NativeLibrary.outstandingBytes();
            w.reset();
            Bids.write(w, 1000, 10, 10);
            assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
            assertTrue(NativeLibrary.outstandingBytes() < second, "the 1000-row chunk was released");
            assertEquals(List.of("+I[1000, 1, 0]", "+I[1001, 1, 1]"),
                    Bids.rows(new ArrowRowDataReader(out)).subList(0, 2));
        }
    }

    @Test
    void aVectorClaimingMoreValuesThanItsBuffersIsEdataBeforeTheCall() {
        Schema schema = ArrowTypes.schemaOf(Bids.INPUT);
        try (NativeOperator op = NativeOperator.open(Bids.spec(), schema, lib.allocator());
                VectorSchemaRoot in = VectorSchemaRoot.create(schema, lib.allocator());
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            in.allocateNew();
            for (int i = 0; i < 3; i++) {
                ((BigIntVector) in.getVector(0)).setSafe(i, i);
                ((IntVector) in.getVector(1)).setSafe(i, i);
                ((TinyIntVector) in.getVector(2)).setSafe(i, 0);
            }
            in.setRowCount(3);
            // a value count past the buffers' end, as a buggy writer could leave it
            BigIntVector bidder = (BigIntVector) in.getVector(0);
            long capacity = bidder.getValueCapacity();
            ArrowBuf validity = bidder.getValidityBuffer();
            ArrowBuf data = bidder.getDataBuffer();
            validity.getReferenceManager().retain();
            data.getReferenceManager().retain();
            bidder.loadFieldBuffers(new ArrowFieldNode(capacity + 1000, 0), List.of(validity, data));
            validity.getReferenceManager().release();
            data.getReferenceManager().release();
            assertTrue(bidder.getValueCount() > bidder.getValueCapacity());
            FerryException e = assertThrows(FerryException.class, () -> op.process(0, in, 0, out, c -> { }));
            assertEquals(FerryException.EDATA, e.code());
            assertTrue(e.getMessage().contains("input column 0 (bidder)"), e.getMessage());
            // the operator still works
            bidder.setValueCount(3);
            assertEquals(1, op.process(0, in, 0, out, c -> { }));
            assertEquals(3, out.getRowCount());
        }
    }

    @Test
    void anOutputRootOfTheWrongShapeIsAnExceptionAndTheChunkIsReleased() {
        Schema narrow = new Schema(op0().getFields().subList(0, 2));
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 16);
                VectorSchemaRoot out = VectorSchemaRoot.create(narrow, lib.allocator())) {
            Bids.write(w, 1, 3, 3);
            FerryException e = assertThrows(FerryException.class, () -> op.process(0, w.root(), 0, out, c -> { }));
            assertEquals(FerryException.EINVAL, e.code());
            assertTrue(e.getMessage().contains("output root"), e.getMessage());
            assertEquals(0, NativeLibrary.outstandingBytes(), "the chunk was released");
        }
    }

    private Schema op0() {
        try (NativeOperator op = Bids.open(lib.allocator())) {
            return op.outputSchema();
        }
    }
}
