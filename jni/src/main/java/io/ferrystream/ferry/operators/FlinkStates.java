package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.types.logical.RowType;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * What the {@link FlinkState} forms share: the keys of Flink's states, the backend's current key
 * given back after switching keys, a key's import rows written into the native operator in
 * batches, the rows it exports and the key of an export row.
 */
public final class FlinkStates {
    /** Import rows per batch; a key's rows are never split across two. */
    public static final int BATCH = 4096;

    private FlinkStates() {}

    /** What a form does with one key, current in the backend. */
    public interface KeyAction {
        void accept(RowData key) throws Exception;
    }

    /** A form's import rows of one key, current in the backend, added to {@code into}. */
    public interface KeyRows {
        void rows(RowData key, List<RowData> into) throws Exception;
    }

    /** What a form does with one export row, row {@code i} of the chunk in {@code root}. */
    public interface ExportRow {
        void accept(RowData row, VectorSchemaRoot root, int i);
    }

    /**
     * The backend's current key, set again on {@link #close}: the forms switch keys under Flink's
     * operator, which keeps working under its own.
     */
    public static final class CurrentKey implements AutoCloseable {
        private final KeyedStateBackend<RowData> backend;
        private final RowData key;

        private CurrentKey(KeyedStateBackend<RowData> backend) {
            this.backend = backend;
            this.key = backend.getCurrentKey();
        }

        @Override
        public void close() {
            if (key != null) {
                backend.setCurrentKey(key);
            }
        }
    }

    /** {@code backend}'s current key, kept until the result is closed. */
    public static CurrentKey keepCurrentKey(KeyedStateBackend<RowData> backend) {
        return new CurrentKey(backend);
    }

    /** Every key of Flink's states {@code names} in {@code backend}, copied, once each. */
    public static List<RowData> keys(KeyedStateBackend<RowData> backend, List<String> names) {
        Set<RowData> seen = new HashSet<>();
        List<RowData> keys = new ArrayList<>();
        for (String name : names) {
            try (Stream<RowData> stream = backend.getKeys(name, VoidNamespace.INSTANCE)) {
                stream.forEach(k -> {
                    RowData key = backend.getKeySerializer().copy(k);
                    if (seen.add(key)) {
                        keys.add(key);
                    }
                });
            }
        }
        return keys;
    }

    /** Runs {@code action} on each of {@code keys}, current in turn; the current key kept. */
    public static void forEachKey(KeyedStateBackend<RowData> backend, List<RowData> keys, KeyAction action) throws Exception {
        try (CurrentKey kept = keepCurrentKey(backend)) {
            for (RowData key : keys) {
                backend.setCurrentKey(key);
                action.accept(key);
            }
        }
    }

    /**
     * Imports the rows of each of {@code keys} (of {@code type}, as {@code rowsOf} reads them with
     * the key current) into {@code op}, in batches of up to {@link #BATCH} rows but for a key with
     * more: a key's rows go in one call, as Go takes a key once. The current key kept.
     */
    public static void importKeys(NativeOperator op, KeyedStateBackend<RowData> backend, List<RowData> keys, RowType type,
            BufferAllocator allocator, KeyRows rowsOf) throws Exception {
        List<RowData> rows = new ArrayList<>();
        try (CurrentKey kept = keepCurrentKey(backend);
                RowDataArrowWriter writer = RowDataArrowWriter.create(type, allocator, BATCH)) {
            writer.reset();
            for (RowData key : keys) {
                backend.setCurrentKey(key);
                rows.clear();
                rowsOf.rows(key, rows);
                if (writer.count() > 0 && writer.count() + rows.size() > BATCH) {
                    writer.finish();
                    op.importState(writer.root());
                    writer.reset();
                }
                for (RowData row : rows) {
                    writer.write(row);
                }
            }
            if (writer.count() > 0) {
                writer.finish();
                op.importState(writer.root());
            }
        }
    }

    /**
     * Hands every row {@code op} exports (of {@code type}) to {@code each}, in order; with {@code
     * binaryRows}, nested rows are read as Flink's binary rows ({@link ArrowRowDataReader#readBinary}).
     */
    public static void exportRows(NativeOperator op, RowType type, BufferAllocator allocator, boolean binaryRows, ExportRow each) {
        try (VectorSchemaRoot root = VectorSchemaRoot.create(ArrowTypes.schemaOf(type), allocator)) {
            ArrowRowDataReader reader = new ArrowRowDataReader(root, type);
            op.exportState(root, chunk -> {
                reader.load();
                for (int i = 0; i < reader.rowCount(); i++) {
                    each.accept(binaryRows ? reader.readBinary(i) : reader.read(i), root, i);
                }
            });
        }
    }

    /** The key of an export row, whose first field holds the key row's {@code BinaryRowData} bytes. */
    public static BinaryRowData exportedKey(RowData row, int keyArity) {
        byte[] bytes = row.getBinary(0);
        BinaryRowData key = new BinaryRowData(keyArity);
        key.pointTo(MemorySegmentFactory.wrap(bytes), 0, bytes.length);
        return key;
    }
}
