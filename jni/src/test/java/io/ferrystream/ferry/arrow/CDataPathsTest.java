package io.ferrystream.ferry.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.nativelib.NativeTestAllocator;
import io.ferrystream.ferry.nativelib.NativeOperator;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.types.logical.RowType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The two ways NativeOperator moves batches, differentially: Arrow Java's C Data exporter and
 * importer ({@link NativeOperator#ARROW_JAVA_CDATA_PROPERTY}) and Ferry's own (the default), on
 * the test library's {@code test_fanout} (every input row emitted twice, in chunks of 7 rows), with
 * every column type of docs/abi.md, NULLs and every RowKind. Every output chunk must be the same
 * in both: row count, per column the null count and every value.
 */
@Tag("test-library")
class CDataPathsTest {
    @RegisterExtension
    final NativeTestAllocator lib = new NativeTestAllocator();

    static String fanoutSpec(RowType type) {
        String fields = LibraryRoundTripTest.specFields(type);
        return "{\"kind\":\"test_fanout\",\"name\":\"fanout(all types)\",\"inputs\":[{\"fields\":[" + fields
                + "],\"keys\":[0]}],\"max_parallelism\":128,\"chunk_rows\":7,\"params\":{\"copies\":2}}";
    }

    /** Per chunk of every call: row count, then per column its null count and values. */
    private List<String> run(boolean arrowJava, List<GenericRowData> rows) {
        RowType type = AllTypes.ROW_TYPE;
        List<String> chunks = new ArrayList<>();
        System.setProperty(NativeOperator.ARROW_JAVA_CDATA_PROPERTY, Boolean.toString(arrowJava));
        try (NativeOperator op = NativeOperator.open(fanoutSpec(type), ArrowTypes.schemaOf(type), lib.allocator());
                RowDataArrowWriter w = RowDataArrowWriter.create(type, lib.allocator(), 64);
                VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), lib.allocator())) {
            System.clearProperty(NativeOperator.ARROW_JAVA_CDATA_PROPERTY);
            for (int from = 0; from < rows.size(); from += 13) { // uneven batches
                for (GenericRowData r : rows.subList(from, Math.min(rows.size(), from + 13))) {
                    w.write(r);
                }
                w.finish();
                op.process(0, w.root(), 0, out, root -> {
                    StringBuilder b = new StringBuilder("rows=" + root.getRowCount());
                    for (FieldVector v : root.getFieldVectors()) {
                        b.append(" | ").append(v.getName()).append(" nulls=").append(v.getNullCount());
                        for (int i = 0; i < root.getRowCount(); i++) {
                            Object o = v.getObject(i);
                            b.append(' ').append(o instanceof byte[] ? java.util.Arrays.toString((byte[]) o) : o);
                        }
                    }
                    chunks.add(b.toString());
                });
                w.reset();
            }
        } finally {
            System.clearProperty(NativeOperator.ARROW_JAVA_CDATA_PROPERTY);
        }
        return chunks;
    }

    @Test
    void ferrysPathAndArrowJavasGiveTheSameChunks() {
        List<GenericRowData> rows = AllTypes.rows(true);
        List<String> arrowJava = run(true, rows);
        List<String> ferry = run(false, rows);
        assertTrue(arrowJava.size() > rows.size() / 7, "several chunks per call: " + arrowJava.size());
        assertEquals(arrowJava.size(), ferry.size(), "chunks");
        for (int i = 0; i < arrowJava.size(); i++) {
            assertEquals(arrowJava.get(i), ferry.get(i), "chunk " + i);
        }
        assertTrue(ferry.stream().anyMatch(c -> c.contains("nulls=0")) && ferry.stream().anyMatch(c -> c.matches(".*nulls=[1-9].*")),
                "columns with and without NULLs");
    }
}
