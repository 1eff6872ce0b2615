package io.ferrystream.ferry.kinds.deduplicate;

import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.FlinkState;
import io.ferrystream.ferry.operators.FlinkStates;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.BooleanSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.ttl.TtlStateFactory;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TinyIntType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.types.RowKind;
import org.apache.arrow.memory.BufferAllocator;

import javax.annotation.Nullable;
import java.util.ArrayList;
import java.util.List;

/**
 * The keyed state Flink's own deduplicate functions keep where Ferry's native deduplication runs
 * (docs/state.md, "Switching Ferry on or off"): one {@code ValueState} {@code deduplicate-state} per
 * key, a {@code Boolean} for the processing-time keep-first forms, the key's stored row (the input's
 * {@code RowDataSerializer}) for the others; with idle-state TTL a {@code TtlValue} with its last
 * write. The stored row keeps the RowKind it had when the state was written (+I or +U; on the heap
 * backend the kind Flink set on the object after storing it), which Flink's processing-time
 * keep-last compares: it crosses with the row both ways. The insert-only row-time keep-first form
 * ({@code RowTimeDeduplicateKeepFirstRowFunction}: waiting rows, an emitted flag, timers) is not
 * carried: its kind passes no FlinkState.
 *
 * <p>Import rows ({@code dedup/flinkstate.go}): the key fields (keep-first processing time) or the
 * stored row's fields, its RowKind (TINYINT), the last write with TTL. Export rows: the key's
 * BinaryRowData bytes, then the same after the key fields.
 */
public final class FlinkDeduplicateState implements FlinkState {
    private static final long serialVersionUID = 1L;

    /** The name of Flink's state (SyncStateDeduplicateFunctionBase, MiniBatchDeduplicateFunctionBase). */
    public static final String NAME = "deduplicate-state";

    /** The input row as Flink's serializer writes it. */
    private final RowType inputType;
    private final int[] keys;
    /** The state is a Boolean (keep-first processing time), not the stored row. */
    private final boolean flag;
    private final boolean ttl;

    /**
     * @param inputType the operator's input row type, as Flink's exec node has it
     * @param keys the partition keys, input columns
     * @param flag whether Flink's state is a Boolean (processing-time keep-first)
     * @param ttl whether idle-state TTL is on
     */
    public FlinkDeduplicateState(RowType inputType, int[] keys, boolean flag, boolean ttl) {
        this.inputType = inputType;
        this.keys = keys.clone();
        this.flag = flag;
        this.ttl = ttl;
    }

    @Override
    public List<String> names() {
        return List.of(NAME);
    }

    @Override
    public @Nullable String refusal() {
        return null;
    }

    private RowType carried() {
        return ArrowTypes.carriedFields(inputType);
    }

    /** The key fields (flag form) or the row's fields, then the RowKind (row form), then the last write with TTL. */
    RowType importType() {
        List<LogicalType> types = new ArrayList<>();
        if (flag) {
            for (int k : keys) {
                types.add(carried().getTypeAt(k));
            }
        } else {
            types.addAll(carried().getChildren());
        }
        return RowType.of(withTail(types).toArray(new LogicalType[0]));
    }

    /** The key's BinaryRowData bytes, then the import row after the key fields. */
    RowType exportType() {
        List<LogicalType> types = new ArrayList<>();
        types.add(new VarBinaryType(false, VarBinaryType.MAX_LENGTH));
        if (!flag) {
            types.addAll(carried().getChildren());
        }
        return RowType.of(withTail(types).toArray(new LogicalType[0]));
    }

    private List<LogicalType> withTail(List<LogicalType> types) {
        if (!flag) {
            types.add(new TinyIntType(false));
        }
        if (ttl) {
            types.add(new BigIntType(false));
        }
        return types;
    }

    @Override
    @SuppressWarnings("unchecked")
    public long importInto(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator) throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        ValueState<Object> state = state(keyed);
        List<RowData> all = FlinkStates.keys(keyed, List.of(NAME));
        RowType type = importType();
        RowData.FieldGetter[] fields = new RowData.FieldGetter[flag ? keys.length : inputType.getFieldCount()];
        for (int f = 0; f < fields.length; f++) {
            fields[f] = RowData.createFieldGetter(type.getTypeAt(f), f);
        }
        FlinkStates.importKeys(op, keyed, all, type, allocator, (key, rows) -> {
            Object value = state.value();
            Object user = ttl ? ((TtlValue<Object>) value).getUserValue() : value;
            GenericRowData row = new GenericRowData(type.getFieldCount());
            RowData source = flag ? key : (RowData) user;
            if (flag && !Boolean.TRUE.equals(user)) {
                throw new IllegalStateException("Flink's " + NAME + " holds " + user + " for a key, which Flink never writes");
            }
            int f = 0;
            for (RowData.FieldGetter g : fields) {
                row.setField(f++, g.getFieldOrNull(source));
            }
            if (!flag) {
                row.setField(f++, source.getRowKind().toByteValue());
            }
            if (ttl) {
                row.setField(f, ((TtlValue<Object>) value).getLastAccessTimestamp());
            }
            rows.add(row);
            state.clear();
        });
        return all.size();
    }

    @Override
    @SuppressWarnings("unchecked")
    public void exportFrom(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator, List<RowData> written)
            throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        ValueState<Object> state = state(keyed);
        RowType type = exportType();
        RowDataSerializer rows = new RowDataSerializer(inputType);
        RowData.FieldGetter[] fields = new RowData.FieldGetter[flag ? 0 : inputType.getFieldCount()];
        for (int f = 0; f < fields.length; f++) {
            fields[f] = RowData.createFieldGetter(type.getTypeAt(1 + f), 1 + f);
        }
        int kind = 1 + fields.length;
        int lastWrite = type.getFieldCount() - 1;
        try (FlinkStates.CurrentKey kept = FlinkStates.keepCurrentKey(keyed)) {
            FlinkStates.exportRows(op, type, allocator, false, (row, root, i) -> {
                BinaryRowData key = FlinkStates.exportedKey(row, keys.length);
                keyed.setCurrentKey(key);
                written.add(key);
                Object value = Boolean.TRUE;
                if (!flag) {
                    GenericRowData stored = new GenericRowData(fields.length);
                    for (int f = 0; f < fields.length; f++) {
                        stored.setField(f, fields[f].getFieldOrNull(row));
                    }
                    BinaryRowData binary = rows.toBinaryRow(stored).copy();
                    binary.setRowKind(RowKind.fromByteValue(row.getByte(kind)));
                    value = binary;
                }
                try {
                    state.update(ttl ? new TtlValue<>(value, row.getLong(lastWrite)) : value);
                } catch (Exception e) {
                    throw new IllegalStateException("writing Flink's " + NAME + " of a key: " + e, e);
                }
            });
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public void clear(KeyedStateBackend<?> backend, List<RowData> written) throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        ValueState<Object> state = state(keyed);
        FlinkStates.forEachKey(keyed, written, key -> state.clear());
    }

    /**
     * {@code deduplicate-state} with the serializer Flink's function wrote it with, with TTL wrapped
     * in Flink's {@code TtlSerializer} (values are {@code TtlValue}s, read and written with their
     * timestamps).
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private ValueState<Object> state(KeyedStateBackend<RowData> keyed) throws Exception {
        TypeSerializer<?> value = flag ? BooleanSerializer.INSTANCE : new RowDataSerializer(inputType);
        TypeSerializer<Object> serializer = ttl
                ? new TtlStateFactory.TtlSerializer(LongSerializer.INSTANCE, value)
                : (TypeSerializer<Object>) value;
        return keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                new ValueStateDescriptor<>(NAME, serializer));
    }
}
