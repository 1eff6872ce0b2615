package io.ferrystream.ferry.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.nativelib.NativeTestAllocator;
import io.ferrystream.ferry.nativelib.NativeOperator;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.DoubleType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Java writes every type, Go reads it as grouping keys and writes it back as output keys, Java
 * reads it: proves both sides agree on each layout of docs/abi.md.
 */
class LibraryRoundTripTest {
    @RegisterExtension
    final NativeTestAllocator lib = new NativeTestAllocator();

    /** The spec's input fields of {@code type}: name and spec type, comma-separated. */
    static String specFields(RowType type) {
        return type.getFields().stream()
                .map(f -> "{\"name\":\"" + f.getName() + "\",\"type\":\"" + ArrowTypes.specTypeOf(f.getType()) + "\"}")
                .collect(Collectors.joining(","));
    }

    /** group_aggregate keyed by every column, with COUNT(*). */
    static String allKeysSpec(RowType type) {
        String input = specFields(type);
        String keys = IntStream.range(0, type.getFieldCount()).mapToObj(Integer::toString)
                .collect(Collectors.joining(","));
        return "{\"kind\":\"group_aggregate\",\"name\":\"GroupAggregate(all types)\",\"inputs\":[{\"fields\":["
                + input + "],\"keys\":[" + keys + "]}],\"max_parallelism\":128,"
                + "\"params\":{\"aggs\":[{\"func\":\"COUNT\",\"args\":[],\"name\":\"cnt\"}]}}";
    }

    @Test
    void everyTypeSurvivesTheLibraryAsGroupingKeys() {
        RowType type = AllTypes.ROW_TYPE;
        List<GenericRowData> generic = AllTypes.rows(false);
        RowDataSerializer ser = new RowDataSerializer(type);
        try (NativeOperator op = NativeOperator.open(allKeysSpec(type), ArrowTypes.schemaOf(type), lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(type, lib.allocator(), 64);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            List<Field> outFields = op.outputSchema().getFields();
            assertEquals(type.getFieldCount() + 2, outFields.size());
            for (int i = 0; i < type.getFieldCount(); i++) { // keys come back with the input's layout
                Field want = ArrowTypes.fieldOf(type.getFieldNames().get(i), type.getTypeAt(i));
                assertEquals(want.getType(), outFields.get(i).getType(), "key " + i);
                assertEquals(want.isNullable(), outFields.get(i).isNullable(), "key " + i);
                assertEquals(want.getName(), outFields.get(i).getName(), "key " + i);
            }
            ArrowRowDataReader reader = new ArrowRowDataReader(out);
            for (int pass = 0; pass < 2; pass++) { // Generic rows, then the same values as BinaryRowData
                for (GenericRowData r : generic) {
                    w.write(pass == 0 ? r : ser.toBinaryRow(r).copy());
                }
                w.finish();
                assertEquals(1, op.process(0, w.root(), 0, out, c -> { }));
                w.reset();
                reader.load();
                assertEquals(generic.size(), reader.rowCount(), "pass " + pass);
                // pass 0: +I per distinct row; pass 1 (same keys, no generate_update_before): +U
                for (int i = 0; i < reader.rowCount(); i++) {
                    RowData got = reader.read(i);
                    assertEquals(pass == 0 ? RowKind.INSERT : RowKind.UPDATE_AFTER, got.getRowKind(), "row " + i);
                    AllTypes.assertRowEquals(type, generic.get(i), got,
                            "pass " + pass + ", output row " + i);
                    assertEquals(pass + 1L, got.getLong(type.getFieldCount()), "COUNT(*)");
                }
            }
        }
    }

    @Test
    void roughThroughputOfWriteProcessRead() {
        RowType type = RowType.of(new LogicalType[] {new BigIntType(), new IntType(), new DoubleType(), new VarCharType(40)},
                new String[] {"k", "i", "d", "s"});
        String spec = "{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},"
                + "{\"name\":\"i\",\"type\":\"INT\"},{\"name\":\"d\",\"type\":\"DOUBLE\"},{\"name\":\"s\",\"type\":\"STRING\"}],"
                + "\"keys\":[0]}],\"max_parallelism\":128,"
                + "\"params\":{\"aggs\":[{\"func\":\"COUNT\",\"args\":[]},{\"func\":\"SUM\",\"args\":[2]}]}}";
        int batch = 4096;
        RowDataSerializer ser = new RowDataSerializer(type);
        BinaryRowData[] rows = new BinaryRowData[batch];
        for (int i = 0; i < batch; i++) {
            rows[i] = ser.toBinaryRow(GenericRowData.of((long) (i % 1000), i, i * 0.5,
                    AllTypes.str("bidder-" + i + "-xxxxxxxxxxxx"))).copy();
        }
        try (NativeOperator op = NativeOperator.open(spec, ArrowTypes.schemaOf(type), lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(type, lib.allocator(), batch);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            ArrowRowDataReader reader = new ArrowRowDataReader(out);
            long sink = 0;
            // write only: RowData -> Arrow
            long writeNanos = 0;
            long written = 0;
            long processNanos = 0;
            long processed = 0;
            long end = System.nanoTime() + 2_000_000_000L;
            for (int iter = 0; System.nanoTime() < end; iter++) {
                long t0 = System.nanoTime();
                for (BinaryRowData r : rows) {
                    w.write(r);
                }
                w.finish();
                long t1 = System.nanoTime();
                op.process(0, w.root(), 0, out, c -> { });
                reader.load();
                for (int i = 0; i < reader.rowCount(); i++) {
                    sink += reader.read(i).getLong(1);
                }
                long t2 = System.nanoTime();
                w.reset();
                if (iter >= 20) { // after warm-up
                    writeNanos += t1 - t0;
                    written += batch;
                    processNanos += t2 - t1;
                    processed += batch;
                }
            }
            assertFalse(sink == 0);
            System.out.printf("RowData->Arrow write, 4 columns (BIGINT, INT, DOUBLE, VARCHAR), %d-row batches:"
                    + " %.1f M rows/s%n", batch, written * 1e3 / writeNanos);
            System.out.printf("process (group_aggregate, 1000 keys, COUNT+SUM) + read back: %.1f M rows/s%n",
                    processed * 1e3 / processNanos);
        }
    }
}
