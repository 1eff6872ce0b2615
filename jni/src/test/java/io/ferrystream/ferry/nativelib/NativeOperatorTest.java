package io.ferrystream.ferry.nativelib;

import static io.ferrystream.ferry.nativelib.Bids.row;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import java.lang.ref.WeakReference;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** NativeOperator against the real libferry.so: changelog, zero copy, release timing, errors. */
class NativeOperatorTest {
    @RegisterExtension
    final NativeTestAllocator lib = new NativeTestAllocator();

    @Test
    void libraryLoadsOnce() throws Exception {
        NativeLibrary lib = NativeLibrary.load();
        assertSame(lib, NativeLibrary.load());
        assertTrue(NativeLibrary.isLoaded());
        assertEquals(NativeLibrary.ABI_VERSION, FerryNative.abiVersion());
        assertTrue(lib.version().startsWith("ferry ") && lib.version().endsWith("(abi " + NativeLibrary.ABI_VERSION + ")"), lib.version());
        assertEquals(Runtime.getRuntime().availableProcessors(), lib.options().maxProcs());
        assertTrue(Files.isRegularFile(lib.directory().resolve("libferry.so")));
        assertTrue(Files.exists(Paths.get(lib.options().crashOutput())), "ferry_init opened the crash file");
        assertTrue(lib.options().crashOutput().endsWith("ferry-crash-" + ProcessHandle.current().pid() + ".log"));
        lib.reconfigure(lib.options().withGcPercent(150)); // ferry_init may be called again
        lib.reconfigure(lib.options());
        FerryException e = assertThrows(FerryException.class, () -> FerryNative.init("{\"max_procs\":-1}"));
        assertEquals(FerryException.EINVAL, e.code());
        e = assertThrows(FerryException.class, () -> FerryNative.init("{\"bogus\":1}"));
        assertEquals(FerryException.EINVAL, e.code());
        assertTrue(e.getMessage().startsWith("ferry_init: "), e.getMessage());
    }

    @Test
    void docsExampleChangelog() {
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 16);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            RowKind pI = RowKind.INSERT, mU = RowKind.UPDATE_BEFORE, pU = RowKind.UPDATE_AFTER, mD = RowKind.DELETE;
            List<RowData> in = List.of(row(pI, 1L, 10), row(pI, 2L, null), row(pI, 1L, 5), row(mU, 1L, 10),
                    row(pU, 1L, 7), row(mD, 2L, null), row(mD, 3L, 1), row(mD, 1L, 5), row(mD, 1L, 7), row(pI, 1L, 1),
                    row(pI, null, 4));
            in.forEach(w::write);
            w.finish();
            assertEquals(1, op.process(0, w.root(), 1000, out, c -> { }));
            ArrowRowDataReader r = new ArrowRowDataReader(out);
            assertEquals(List.of("+I[1, 1, 10]", "+I[2, 1, null]", "-U[1, 1, 10]", "+U[1, 2, 15]", "-U[1, 2, 15]",
                    "+U[1, 1, 5]", "-U[1, 1, 5]", "+U[1, 2, 12]", "-D[2, 1, null]", "-U[1, 2, 12]", "+U[1, 1, 7]",
                    "-D[1, 1, 7]", "+I[1, 1, 1]", "+I[null, 1, 4]"), Bids.rows(r));
            Schema s = op.outputSchema();
            assertEquals(List.of("bidder", "cnt", "total", ArrowTypes.ROW_KIND_FIELD),
                    s.getFields().stream().map(f -> f.getName()).toList());
            assertFalse(s.getFields().get(1).isNullable(), "COUNT is BIGINT NOT NULL");
        }
    }

    @Test
    void inputIsReleasedBeforeProcessReturnsAndMayBeReused() {
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 1024);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            ArrowRowDataReader r = new ArrowRowDataReader(out);
            long exportBaseline = op.exportAllocator().getAllocatedMemory();
            for (int batch = 0; batch < 5; batch++) {
                Bids.write(w, batch * 1000L, 1000, 1000); // 1000 new bidders per batch
                ArrowBuf data = w.root().getVector(0).getDataBuffer();
                int refs = data.refCnt(); // per allocation: validity and data share one
                assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
                // Go released the export before returning: no extra reference, no export memory
                assertEquals(refs, data.refCnt(), "batch " + batch);
                assertEquals(exportBaseline, op.exportAllocator().getAllocatedMemory(), "batch " + batch);
                // overwrite the input in place right away (as Flink's ArrowWriter.reset does)
                w.reset();
                for (int i = 0; i < 1000; i++) {
                    w.write(row(RowKind.INSERT, -1L, -1));
                }
                w.finish();
                r.load();
                assertEquals(1000, r.rowCount());
                for (int i = 0; i < 1000; i++) {
                    RowData o = r.read(i);
                    assertEquals(RowKind.INSERT, o.getRowKind());
                    assertEquals(batch * 1000L + i, o.getLong(0));
                    assertEquals(1L, o.getLong(1));
                    assertEquals(i, o.getInt(2));
                }
                w.reset();
            }
        }
    }

    @Test
    void bothDirectionsAreZeroCopy() {
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 4096);
                BufferAllocator importer = lib.allocator().newChildAllocator("import", 0, Long.MAX_VALUE);
                ArrowArray in = ArrowArray.allocateNew(lib.allocator());
                ArrowArray outArr = ArrowArray.allocateNew(lib.allocator())) {
            Bids.write(w, 0, 4096, 4096);
            Data.exportVectorSchemaRoot(lib.allocator(), w.root(), null, in);
            // Java → C: the exported pointers are the vectors' own buffers
            for (int c = 0; c < 3; c++) {
                FieldVector v = w.root().getVector(c);
                long[] bufs = childBuffers(in.memoryAddress(), c);
                assertEquals(v.getDataBuffer().memoryAddress(), bufs[1], "input column " + c + " data");
                if (bufs[0] != 0) {
                    assertEquals(v.getValidityBuffer().memoryAddress(), bufs[0], "input column " + c + " validity");
                }
            }
            long goBefore = FerryNative.outstandingBytes();
            assertEquals(FerryNative.FILLED, FerryNative.process(op.nativeHandle(), 0, in.memoryAddress(), 0, outArr.memoryAddress()));
            assertEquals(0, MemoryUtil.getLong(in.memoryAddress() + 64), "Go released the input");
            long goBytes = FerryNative.outstandingBytes() - goBefore;
            assertTrue(goBytes > 4096 * (8 + 8 + 4), "output lives in Go's C memory: " + goBytes);
            int cols = op.outputSchema().getFields().size();
            long[][] goBufs = new long[cols][];
            for (int c = 0; c < cols; c++) {
                goBufs[c] = childBuffers(outArr.memoryAddress(), c);
            }
            long before = importer.getAllocatedMemory();
            try (VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), importer)) {
                Data.importIntoVectorSchemaRoot(importer, outArr, out, null);
                long javaAllocated = 0;
                for (int c = 0; c < cols; c++) {
                    FieldVector v = out.getVector(c);
                    // C → Java: the imported vectors point at Go's buffers
                    assertEquals(goBufs[c][1], v.getDataBuffer().memoryAddress(), "output column " + c + " data");
                    if (goBufs[c][0] != 0) {
                        assertEquals(goBufs[c][0], v.getValidityBuffer().memoryAddress(), "output column " + c);
                    } else { // arrow-java materialises an absent validity bitmap
                        javaAllocated += 1024;
                    }
                }
                long growth = importer.getAllocatedMemory() - before;
                System.out.printf("zero-copy: Go output %d bytes, Java import lib.allocator() +%d bytes%n", goBytes, growth);
                assertTrue(growth <= goBytes + 80 + javaAllocated,
                        "import copied: +" + growth + " bytes for a " + goBytes + "-byte native batch");
                assertEquals(4096, out.getRowCount());
            }
            assertEquals(goBefore, FerryNative.outstandingBytes(), "closing the root released Go's batch");
        }
    }

    @Test
    void theGlueZeroesOutputStructsFilledWithGarbage() {
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 16);
                ArrowArray in = ArrowArray.allocateNew(lib.allocator());
                ArrowArray o = ArrowArray.allocateNew(lib.allocator());
                org.apache.arrow.c.ArrowSchema s = org.apache.arrow.c.ArrowSchema.allocateNew(lib.allocator())) {
            MemoryUtil.setMemory(s.memoryAddress(), 72, (byte) 0xFF);
            FerryNative.outputSchema(op.nativeHandle(), s.memoryAddress());
            Schema schema = Data.importSchema(lib.allocator(), s, null);
            Bids.write(w, 1, 3, 3);
            Data.exportVectorSchemaRoot(lib.allocator(), w.root(), null, in);
            MemoryUtil.setMemory(o.memoryAddress(), 80, (byte) 0xFF);
            assertEquals(FerryNative.FILLED, FerryNative.process(op.nativeHandle(), 0, in.memoryAddress(), 0, o.memoryAddress()));
            try (VectorSchemaRoot out = VectorSchemaRoot.create(schema, lib.allocator())) {
                Data.importIntoVectorSchemaRoot(lib.allocator(), o, out, null, false); // keep o for reuse
                assertEquals(List.of("+I[1, 1, 0]", "+I[2, 1, 1]", "+I[3, 1, 2]"), Bids.rows(new ArrowRowDataReader(out)));
            }
            MemoryUtil.setMemory(o.memoryAddress(), 80, (byte) 0xFF);
            assertEquals(0, FerryNative.flush(op.nativeHandle(), 0, o.memoryAddress()), "nothing buffered");
            assertEquals(0, MemoryUtil.getLong(o.memoryAddress() + 64), "zeroed, and left untouched by Go");
        }
    }

    /** The buffer pointers of child {@code c} of a struct ArrowArray at {@code addr}. */
    static long[] childBuffers(long addr, int c) {
        long child = MemoryUtil.getLong(MemoryUtil.getLong(addr + 48) + 8L * c);
        int n = (int) MemoryUtil.getLong(child + 24);
        long bufs = MemoryUtil.getLong(child + 40);
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            out[i] = MemoryUtil.getLong(bufs + 8L * i);
        }
        return out;
    }

    @Test
    void reimportingIntoARootReleasesThePreviousBatch() {
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 512);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            Bids.write(w, 0, 500, 500);
            assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
            long first = NativeLibrary.outstandingBytes();
            assertTrue(first > 0);
            w.reset();
            Bids.write(w, 0, 500, 500); // same keys: -U/+U pairs, twice the rows
            assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
            long second = NativeLibrary.outstandingBytes();
            assertTrue(second > first && second < 3 * first, first + " then " + second);
            assertEquals(1000, out.getRowCount());
            out.clear();
            assertEquals(0, NativeLibrary.outstandingBytes(), "clearing the root released the batch");
        }
    }

    @Test
    void outputOutlivesTheOperator() {
        VectorSchemaRoot out;
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 16)) {
            out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator());
            Bids.write(w, 7, 3, 3);
            assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
        }
        try (out) {
            ArrowRowDataReader r = new ArrowRowDataReader(out);
            assertEquals(List.of("+I[7, 1, 0]", "+I[8, 1, 1]", "+I[9, 1, 2]"), Bids.rows(r));
        }
    }

    @Test
    void emptyBatchAdvanceAndFlushProduceNothing() {
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 16);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            w.finish();
            assertEquals(0, op.process(0, w.root(), 0, out, c -> { }));
            assertEquals(0, op.advance(Long.MAX_VALUE, 10, out, c -> { }));
            assertEquals(0, op.flush(10, out, c -> { }));
            assertEquals(0, out.getRowCount());
        }
    }

    @Test
    void snapshotAndRestoreEveryKeyGroup() {
        List<byte[]> blobs = new ArrayList<>();
        List<Integer> groups = new ArrayList<>();
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 256);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            Bids.write(w, 0, 200, 50);
            assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
            for (int kg = 0; kg < 128; kg++) {
                byte[] b = op.snapshot(kg);
                if (b != null) {
                    assertTrue(b.length > 0);
                    blobs.add(b);
                    groups.add(kg);
                }
            }
            FerryException e = assertThrows(FerryException.class, () -> op.snapshot(128));
            assertEquals(FerryException.EINVAL, e.code());
        }
        assertTrue(groups.size() > 10 && groups.size() < 51, "50 keys over 128 key groups: " + groups.size());
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 256);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            for (int i = 0; i < groups.size(); i++) {
                op.restore(groups.get(i), blobs.get(i));
            }
            for (int i = 0; i < groups.size(); i++) {
                assertArrayEquals(blobs.get(i), op.snapshot(groups.get(i)), "key group " + groups.get(i));
            }
            FerryException e = assertThrows(FerryException.class, () -> op.restore(groups.get(0), blobs.get(0)));
            assertEquals(FerryException.EINVAL, e.code(), "restoring a non-empty key group: " + e);
            int free = 0;
            while (groups.contains(free)) {
                free++;
            }
            byte[] corrupt = blobs.get(0).clone();
            corrupt[corrupt.length / 2] ^= 0x55;
            int target = free;
            e = assertThrows(FerryException.class, () -> op.restore(target, corrupt));
            assertEquals(FerryException.EDATA, e.code(), e.getMessage());
            e = assertThrows(FerryException.class, () -> op.restore(target, new byte[0]));
            assertNotEquals(0, e.code());
            w.write(row(RowKind.INSERT, 0L, 1000)); // bidder 0: 4 rows (prices 0, 50, 100, 150) restored
            w.finish();
            assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
            assertEquals(List.of("-U[0, 4, 300]", "+U[0, 5, 1300]"), Bids.rows(new ArrowRowDataReader(out)));
        }
    }

    @Test
    void badSpecIsEinvalWithTheNativeMessage() {
        String bad = "{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"a\",\"type\":\"BIGINT\"}],"
                + "\"keys\":[7]}],\"max_parallelism\":128}";
        FerryException e = assertThrows(FerryException.class, () -> NativeOperator.open(bad, null, lib.allocator()));
        assertEquals(FerryException.EINVAL, e.code());
        assertTrue(e.getMessage().startsWith("ferry_operator_open: ")
                && e.getMessage().endsWith("spec: inputs[0].keys[0]: column 7 out of range (input has 1 columns)"), e.getMessage());
        e = assertThrows(FerryException.class, () -> NativeOperator.open("{not json", null, lib.allocator()));
        assertEquals(FerryException.EINVAL, e.code());
        e = assertThrows(FerryException.class,
                () -> NativeOperator.open(Bids.spec("\"test\":{\"panic\":\"process\"}"), null, lib.allocator()));
        assertEquals(FerryException.EINVAL, e.code());
        assertTrue(e.getMessage().contains("test_hooks"), e.getMessage());
        e = assertThrows(FerryException.class, () -> NativeOperator.open(
                Bids.spec().replace("group_aggregate", "over_aggregate"), null, lib.allocator()));
        assertEquals(FerryException.EUNSUPPORTED, e.code());
        // non-ASCII and supplementary characters survive both directions of the glue
        e = assertThrows(FerryException.class, () -> NativeOperator.open(
                Bids.spec().replace("\"bidder\",\"type\":\"BIGINT\"", "\"bidder\",\"type\":\"BÏGINT😀\""), null,
                lib.allocator()));
        assertTrue(e.getMessage().contains("BÏGINT😀"), e.getMessage());
        e = assertThrows(FerryException.class, () -> NativeOperator.open("{\"kind\":\"x\u0000\"}", null, lib.allocator()));
        assertEquals(FerryException.EINVAL, e.code());
        // the glue consumes the exported schema even when it never reaches the library
        e = assertThrows(FerryException.class,
                () -> NativeOperator.open("{\u0000}", ArrowTypes.schemaOf(Bids.INPUT), lib.allocator()));
        assertEquals(FerryException.EINVAL, e.code());
        assertTrue(e.getMessage().contains("NUL"), e.getMessage());
        assertEquals(0, lib.allocator().getAllocatedMemory(), "schema released");
        e = assertThrows(FerryException.class, () -> FerryNative.init(null));
        assertEquals(FerryException.EINVAL, e.code());
    }

    @Test
    void closedOperatorsAndStaleHandles() {
        NativeOperator op = Bids.open(lib.allocator());
        long h = op.nativeHandle();
        Schema outSchema = op.outputSchema();
        op.close();
        op.close(); // no-op
        assertTrue(op.isClosed());
        try (RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 4);
                VectorSchemaRoot out = VectorSchemaRoot.create(outSchema, lib.allocator())) {
            Bids.write(w, 1, 2, 2);
            FerryException e = assertThrows(FerryException.class, () -> op.process(0, w.root(), 0, out, c -> { }));
            assertEquals(FerryException.EINVAL, e.code());
            assertThrows(FerryException.class, () -> op.snapshot(0));
            assertThrows(FerryException.class, op::outputSchema);
            // the native side rejects the stale handle itself, and consumes the input
            try (ArrowArray in = ArrowArray.allocateNew(lib.allocator()); ArrowArray o = ArrowArray.allocateNew(lib.allocator())) {
                Data.exportVectorSchemaRoot(lib.allocator(), w.root(), null, in);
                e = assertThrows(FerryException.class,
                        () -> FerryNative.process(h, 0, in.memoryAddress(), 0, o.memoryAddress()));
                assertEquals(FerryException.EINVAL, e.code());
                assertEquals(0, MemoryUtil.getLong(in.memoryAddress() + 64), "input released on error");
            }
            e = assertThrows(FerryException.class, () -> FerryNative.close(h));
            assertEquals(FerryException.EINVAL, e.code());
            e = assertThrows(FerryException.class, () -> FerryNative.snapshot(0, 0));
            assertEquals(FerryException.EINVAL, e.code());
        }
    }

    @Test
    void schemaMismatchAtOpenIsEdataAndTheSchemaIsReleased() {
        RowType wrong = RowType.of(new LogicalType[] {new IntType(), new IntType()}, new String[] {"bidder", "price"});
        FerryException e = assertThrows(FerryException.class,
                () -> NativeOperator.open(Bids.spec(), ArrowTypes.schemaOf(wrong), lib.allocator()));
        assertEquals(FerryException.EDATA, e.code());
        assertTrue(e.getMessage().contains("column 0") && e.getMessage().contains("\"i\"")
                && e.getMessage().contains("\"l\""), e.getMessage());
        assertEquals(0, lib.allocator().getAllocatedMemory(), "exported schema released");
    }

    @Test
    void rootNotMatchingTheOpenSchemaIsRejectedBeforeExport() {
        RowType wrong = RowType.of(new LogicalType[] {new IntType(), new IntType()}, new String[] {"bidder", "price"});
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(wrong, lib.allocator(), 4);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            w.write(org.apache.flink.table.data.GenericRowData.of(1, 2));
            w.finish();
            FerryException e = assertThrows(FerryException.class, () -> op.process(0, w.root(), 0, out, c -> { }));
            assertEquals(FerryException.EDATA, e.code());
            assertTrue(e.getMessage().contains("input column 0 (bidder)"), e.getMessage());
        }
    }

    @Test
    void malformedBatchesAreEdataAndStillReleased() {
        try (NativeOperator op = Bids.open(lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, lib.allocator(), 16);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            long exportBaseline = op.exportAllocator().getAllocatedMemory();
            Bids.write(w, 1, 4, 4);
            ((TinyIntVector) w.root().getVector(2)).set(2, 9); // RowKind byte 9
            ArrowBuf data = w.root().getVector(0).getDataBuffer();
            int refs = data.refCnt();
            FerryException e = assertThrows(FerryException.class, () -> op.process(0, w.root(), 0, out, c -> { }));
            assertEquals(FerryException.EDATA, e.code());
            assertTrue(e.getMessage().startsWith("ferry_operator_process: GroupAggregate(groupBy=[bidder])"),
                    e.getMessage());
            assertEquals(refs, data.refCnt(), "input released");
            assertEquals(exportBaseline, op.exportAllocator().getAllocatedMemory());
            // the operator still works after a rejected batch
            w.reset();
            Bids.write(w, 1, 2, 2);
            assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
            assertEquals(2, out.getRowCount());
        }
        // without an input schema the library's per-batch checks are the only guard
        RowType narrow = RowType.of(new LogicalType[] {new BigIntType()}, new String[] {"bidder"});
        try (NativeOperator op = NativeOperator.open(Bids.spec(), null, lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(narrow, lib.allocator(), 16);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            long exportBaseline = op.exportAllocator().getAllocatedMemory();
            w.write(org.apache.flink.table.data.GenericRowData.of(5L));
            w.finish();
            int refs = w.root().getVector(0).getDataBuffer().refCnt();
            FerryException e = assertThrows(FerryException.class, () -> op.process(0, w.root(), 0, out, c -> { }));
            assertEquals(FerryException.EDATA, e.code());
            assertTrue(e.getMessage().contains("2 columns") || e.getMessage().contains("children"), e.getMessage());
            assertEquals(exportBaseline, op.exportAllocator().getAllocatedMemory(), "input released");
            assertEquals(refs, w.root().getVector(0).getDataBuffer().refCnt());
        }
    }

    @Test
    void cleanerClosesALeakedOperator() throws Exception {
        BufferAllocator own = new RootAllocator();
        long h = leak(own);
        assertTrue(own.getAllocatedMemory() > 0, "the leaked operator's export structures are allocated");
        // Wait for the Cleaner without calling into the handle meanwhile: a call in progress would
        // make the Cleaner's close fail as "in use by another thread" (no caller of a really leaked
        // operator exists). The Cleaner frees the export structures after closing the handle.
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (own.getAllocatedMemory() != 0) {
            assertTrue(System.nanoTime() < deadline, "the Cleaner did not run for the leaked operator");
            System.gc();
            Thread.sleep(20);
        }
        FerryException e = assertThrows(FerryException.class, () -> FerryNative.snapshot(h, 0));
        assertEquals(FerryException.EINVAL, e.code(), "the Cleaner closed the handle"); // the handle is gone
        own.close(); // the backstop also freed the export structures
    }

    private static long leak(BufferAllocator a) {
        NativeOperator op = Bids.open(a);
        WeakReference<NativeOperator> ref = new WeakReference<>(op);
        assertNotNull(ref.get());
        return op.nativeHandle();
    }

    @Test
    void libjsigIsDetected() throws Exception {
        List<String> maps = List.of(
                "7f0000000000-7f0000001000 r-xp 00000000 08:01 123 /usr/lib/jvm/java-17/lib/server/libjvm.so",
                "7f0000002000-7f0000003000 r-xp 00000000 00:00 0 [vdso]");
        assertNull(NativeLibrary.findJsig(maps));
        List<String> withJsig = new ArrayList<>(maps);
        withJsig.add("7f0000004000-7f0000005000 r-xp 00000000 08:01 99 /usr/lib/jvm/java-17/lib/libjsig.so");
        assertEquals("/usr/lib/jvm/java-17/lib/libjsig.so", NativeLibrary.findJsig(withJsig));
        assertNull(NativeLibrary.findJsig(Files.readAllLines(Paths.get("/proc/self/maps"))),
                "this JVM must not preload libjsig");
    }

    @Test
    void optionsRenderTheInitJson() {
        NativeLibrary.Options o = NativeLibrary.Options.defaults().withMaxProcs(3).withMemoryLimitBytes(1L << 30)
                .withGcPercent(200).withCrashOutput("/tmp/a \"b\"\\c.log").withTestHooks(true);
        assertEquals("{\"max_procs\":3,\"memory_limit_bytes\":1073741824,\"gc_percent\":200,"
                + "\"crash_output\":\"/tmp/a \\\"b\\\"\\\\c.log\",\"test_hooks\":true}", o.toJson());
        String old = System.getProperty("log.file");
        try {
            System.setProperty("log.file", "/var/log/flink/taskmanager.log");
            assertEquals("/var/log/flink/ferry-crash-" + ProcessHandle.current().pid() + ".log",
                    NativeLibrary.Options.defaultCrashOutput());
        } finally {
            if (old == null) {
                System.clearProperty("log.file");
            } else {
                System.setProperty("log.file", old);
            }
        }
        assertEquals("linux-x86_64", NativeLibrary.platform());
    }
}
