package io.ferrystream.ferry.kinds.deduplicate;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.FlinkState;
import io.ferrystream.ferry.operators.FlinkStates;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.BooleanSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.ttl.TtlStateFactory;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.Triggerable;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.BooleanType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TinyIntType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.types.RowKind;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;

import javax.annotation.Nullable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * The keyed state Flink's own deduplicate functions keep where Ferry's native deduplication runs
 * (docs/state.md, "Switching Ferry on or off"), in three forms ({@link Form}):
 *
 * <ul>
 *   <li>{@link Form#FLAG}, the processing-time keep-first forms: one {@code ValueState<Boolean>}
 *       {@code deduplicate-state} per key;
 *   <li>{@link Form#ROW}, the other forms but one: {@code deduplicate-state} holds the key's stored
 *       row (the input's {@code RowDataSerializer}). The stored row keeps the RowKind it had when
 *       the state was written (+I or +U; on the heap backend the kind Flink set on the object after
 *       storing it), which Flink's processing-time keep-last compares: it crosses with the row both
 *       ways;
 *   <li>{@link Form#WAITING}, the insert-only row-time keep-first ({@code
 *       RowTimeDeduplicateKeepFirstRowFunction} in a {@code KeyedProcessOperator}): {@code
 *       waiting-to-emit-on-timer}, a {@code ValueState<RowData>} without TTL (the earliest row not
 *       emitted yet), {@code already-emitted-state-boolean}, a {@code ValueState<Boolean>}, and one
 *       event-time timer per waiting row, at its row time, in the timer service {@value #TIMERS}.
 * </ul>
 *
 * <p>With idle-state TTL {@code deduplicate-state} and {@code already-emitted-state-boolean} hold a
 * {@code TtlValue} with the last write.
 *
 * <p>Import rows ({@code dedup/flinkstate.go}): the key fields (keep-first processing time) or the
 * stored row's fields, its RowKind (TINYINT), the last write with TTL; for the waiting form the key
 * fields, the waiting row's fields (NULL without one), its RowKind (NULL: none), the emitted flag,
 * the key's timer and its place in the iteration of Flink's timer queue, and with TTL the flag's
 * last write. Export rows: the key's BinaryRowData bytes, then the same after the key fields.
 * Timers are read in the queue's order (the heap array's on the heap backend) and deleted on
 * import, and registered in the order of their positions in Ferry's timer heap on export, as
 * {@code FlinkIntervalJoinState} does.
 */
public final class FlinkDeduplicateState implements FlinkState {
    private static final long serialVersionUID = 1L;

    /** The name of Flink's state (SyncStateDeduplicateFunctionBase, MiniBatchDeduplicateFunctionBase). */
    public static final String NAME = "deduplicate-state";
    /** The waiting row of the insert-only row-time keep-first (RowTimeDeduplicateKeepFirstRowFunction). */
    public static final String WAITING = "waiting-to-emit-on-timer";
    /** Whether the insert-only row-time keep-first emitted the key's row. */
    public static final String EMITTED = "already-emitted-state-boolean";
    /** The timer service of Flink's KeyedProcessOperator. */
    public static final String TIMERS = "user-timers";

    /** The form of Flink's state, by deduplicate function. */
    public enum Form {
        /** {@code deduplicate-state} holds a Boolean: the processing-time keep-first forms. */
        FLAG,
        /** {@code deduplicate-state} holds the stored row: the other forms but the insert-only one. */
        ROW,
        /** The waiting row, the emitted flag and the timers: the insert-only row-time keep-first. */
        WAITING
    }

    private static final int BATCH = 4096;

    /** Keys imported in this JVM, for tests and logs. */
    private static final AtomicLong IMPORTED = new AtomicLong();

    /** The input row as Flink's serializer writes it. */
    private final RowType inputType;
    private final int[] keys;
    private final Form form;
    /** The state is a Boolean (keep-first processing time), not the stored row. */
    private final boolean flag;
    private final boolean ttl;

    /** The operator whose timer service holds Flink's timers ({@link #attach}). */
    private transient AbstractStreamOperator<?> operator;
    /** Timers registered by the last export, for {@link #clear}. */
    private transient List<Map.Entry<RowData, Long>> exportedTimers;

    /**
     * @param inputType the operator's input row type, as Flink's exec node has it
     * @param keys the partition keys, input columns
     * @param form the form of Flink's state
     * @param ttl whether idle-state TTL is on
     */
    public FlinkDeduplicateState(RowType inputType, int[] keys, Form form, boolean ttl) {
        this.inputType = inputType;
        this.keys = keys.clone();
        this.form = form;
        this.flag = form == Form.FLAG;
        this.ttl = ttl;
    }

    /** Gives access to the operator's timer service; called before {@link #importInto}. */
    void attach(AbstractStreamOperator<?> operator) {
        this.operator = operator;
    }

    @Override
    public List<String> names() {
        return form == Form.WAITING ? List.of(WAITING, EMITTED) : List.of(NAME);
    }

    @Override
    public @Nullable String refusal() {
        return null;
    }

    /** Keys imported by every operator of this JVM so far. */
    public static long importedKeys() {
        return IMPORTED.get();
    }

    private RowType carried() {
        return ArrowTypes.carriedFields(inputType);
    }

    /**
     * The key fields (flag form) or the row's fields, then the RowKind (row form), then the last
     * write with TTL; the waiting form's: the key fields, then {@link #waitingColumns}.
     */
    RowType importType() {
        List<LogicalType> types = new ArrayList<>();
        if (form == Form.WAITING) {
            for (int k : keys) {
                types.add(carried().getTypeAt(k));
            }
            types.addAll(waitingColumns());
            return RowType.of(types.toArray(new LogicalType[0]));
        }
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
        if (form == Form.WAITING) {
            types.addAll(waitingColumns());
            return RowType.of(types.toArray(new LogicalType[0]));
        }
        if (!flag) {
            types.addAll(carried().getChildren());
        }
        return RowType.of(withTail(types).toArray(new LogicalType[0]));
    }

    /**
     * The waiting form's columns after the key, all nullable: the waiting row's fields, its
     * RowKind, the emitted flag, the timer and its position, the flag's last write with TTL.
     */
    private List<LogicalType> waitingColumns() {
        List<LogicalType> types = new ArrayList<>();
        for (LogicalType t : carried().getChildren()) {
            types.add(t.copy(true));
        }
        types.addAll(List.of(new TinyIntType(), new BooleanType(), new BigIntType(), new BigIntType()));
        if (ttl) {
            types.add(new BigIntType());
        }
        return types;
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
        if (form == Form.WAITING) {
            return counted(importWaiting(op, keyed, allocator));
        }
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
        return counted(all.size());
    }

    private static long counted(long keys) {
        IMPORTED.addAndGet(keys);
        return keys;
    }

    @Override
    @SuppressWarnings("unchecked")
    public void exportFrom(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator, List<RowData> written)
            throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        if (form == Form.WAITING) {
            exportWaiting(op, keyed, allocator, written);
            return;
        }
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
        List<ValueState<?>> states = form == Form.WAITING ? List.of(waiting(keyed), emitted(keyed)) : List.of(state(keyed));
        FlinkStates.forEachKey(keyed, written, key -> states.forEach(ValueState::clear));
        if (exportedTimers != null) {
            InternalTimerService<VoidNamespace> service = timers();
            try (FlinkStates.CurrentKey kept = FlinkStates.keepCurrentKey(keyed)) {
                for (Map.Entry<RowData, Long> t : exportedTimers) {
                    keyed.setCurrentKey(t.getKey());
                    service.deleteEventTimeTimer(VoidNamespace.INSTANCE, t.getValue());
                }
            }
        }
        exportedTimers = null;
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

    /** {@code waiting-to-emit-on-timer}, as Flink's function declares it: the input's serializer, no TTL. */
    private ValueState<RowData> waiting(KeyedStateBackend<RowData> keyed) throws Exception {
        return keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                new ValueStateDescriptor<>(WAITING, new RowDataSerializer(inputType)));
    }

    /** {@code already-emitted-state-boolean}, a Boolean, with TTL wrapped in Flink's {@code TtlSerializer}. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private ValueState<Object> emitted(KeyedStateBackend<RowData> keyed) throws Exception {
        TypeSerializer<Object> serializer = ttl
                ? new TtlStateFactory.TtlSerializer(LongSerializer.INSTANCE, BooleanSerializer.INSTANCE)
                : (TypeSerializer) BooleanSerializer.INSTANCE;
        return keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                new ValueStateDescriptor<>(EMITTED, serializer));
    }

    private static final Triggerable<Object, VoidNamespace> NEVER = new Triggerable<>() {
        @Override
        public void onEventTime(InternalTimer<Object, VoidNamespace> timer) {
            throw new IllegalStateException("a timer of Flink's deduplication fired in Ferry's operator: " + timer);
        }

        @Override
        public void onProcessingTime(InternalTimer<Object, VoidNamespace> timer) {
            throw new IllegalStateException("a timer of Flink's deduplication fired in Ferry's operator: " + timer);
        }
    };

    private InternalTimerService<VoidNamespace> timers() {
        if (operator == null) {
            throw new IllegalStateException("FlinkDeduplicateState is not attached to its operator");
        }
        return operator.getInternalTimerService(TIMERS, VoidNamespaceSerializer.INSTANCE, NEVER);
    }

    /**
     * The waiting form's import: Flink's timers in the queue's order (then deleted: they would fire
     * into nothing), every key of the two states and of the timers, one import row per key.
     */
    @SuppressWarnings("unchecked")
    private long importWaiting(NativeOperator op, KeyedStateBackend<RowData> keyed, BufferAllocator allocator) throws Exception {
        RowDataSerializer keySerializer = (RowDataSerializer) keyed.getKeySerializer();
        ValueState<RowData> waiting = waiting(keyed);
        ValueState<Object> emitted = emitted(keyed);
        Object current = keyed.getCurrentKey();
        try {
            InternalTimerService<VoidNamespace> service = timers();
            Map<BinaryRowData, long[]> timerOf = new HashMap<>(); // time, position
            long[] position = {0};
            service.forEachEventTimeTimer((ns, time) -> {
                long[] before = timerOf.put(keySerializer.toBinaryRow(keyed.getCurrentKey()).copy(), new long[] {time, ++position[0]});
                if (before != null) {
                    throw new IllegalStateException("Flink's deduplication holds two timers of a key (at " + before[0] + " and "
                            + time + " in \"" + TIMERS + "\"), which Flink's insert-only first row never registers");
                }
            });
            service.forEachProcessingTimeTimer((ns, time) -> {
                throw new IllegalStateException("Flink's row-time deduplication holds a processing-time timer at " + time
                        + " in \"" + TIMERS + "\": not the state of Flink's insert-only first row");
            });
            Set<BinaryRowData> all = new LinkedHashSet<>();
            for (String name : names()) {
                try (Stream<RowData> stream = keyed.getKeys(name, VoidNamespace.INSTANCE)) {
                    stream.forEach(k -> all.add(keySerializer.toBinaryRow(k).copy()));
                }
            }
            all.addAll(timerOf.keySet()); // a timer without its row: the library refuses it
            RowType type = importType();
            int nk = keys.length;
            int nf = inputType.getFieldCount();
            RowData.FieldGetter[] keyFields = new RowData.FieldGetter[nk];
            for (int f = 0; f < nk; f++) {
                keyFields[f] = RowData.createFieldGetter(type.getTypeAt(f), f);
            }
            RowData.FieldGetter[] rowFields = new RowData.FieldGetter[nf];
            for (int f = 0; f < nf; f++) {
                rowFields[f] = RowData.createFieldGetter(type.getTypeAt(nk + f), f);
            }
            int tail = nk + nf;
            try (RowDataArrowWriter writer = RowDataArrowWriter.create(type, allocator, BATCH)) {
                List<BinaryRowData> list = new ArrayList<>(all);
                for (int from = 0; from < list.size(); from += BATCH) {
                    writer.reset();
                    for (BinaryRowData key : list.subList(from, Math.min(list.size(), from + BATCH))) {
                        keyed.setCurrentKey(key);
                        GenericRowData row = new GenericRowData(type.getFieldCount());
                        for (int f = 0; f < nk; f++) {
                            row.setField(f, keyFields[f].getFieldOrNull(key));
                        }
                        RowData w = waiting.value();
                        if (w != null) {
                            for (int f = 0; f < nf; f++) {
                                row.setField(nk + f, rowFields[f].getFieldOrNull(w));
                            }
                            row.setField(tail, w.getRowKind().toByteValue());
                        }
                        Object e = emitted.value();
                        if (e != null) {
                            row.setField(tail + 1, ttl ? ((TtlValue<Boolean>) e).getUserValue() : e);
                            if (ttl) {
                                row.setField(tail + 4, ((TtlValue<Boolean>) e).getLastAccessTimestamp());
                            }
                        }
                        long[] timer = timerOf.get(key);
                        if (timer != null) {
                            row.setField(tail + 2, timer[0]);
                            row.setField(tail + 3, timer[1]);
                        }
                        writer.write(row);
                        waiting.clear();
                        emitted.clear();
                    }
                    writer.finish();
                    op.importState(writer.root());
                }
            }
            for (Map.Entry<BinaryRowData, long[]> t : timerOf.entrySet()) {
                keyed.setCurrentKey(t.getKey());
                service.deleteEventTimeTimer(VoidNamespace.INSTANCE, t.getValue()[0]);
            }
            return all.size();
        } finally {
            if (current != null) {
                keyed.setCurrentKey((RowData) current);
            }
        }
    }

    /**
     * The waiting form's export: each key's waiting row and emitted flag written into Flink's
     * states, then the timers registered in the order of their positions in Ferry's timer heap (a
     * heap's array inserted in order is the same heap, which Flink's savepoint then holds).
     */
    private void exportWaiting(NativeOperator op, KeyedStateBackend<RowData> keyed, BufferAllocator allocator,
            List<RowData> written) throws Exception {
        ValueState<RowData> waiting = waiting(keyed);
        ValueState<Object> emitted = emitted(keyed);
        RowType type = exportType();
        RowDataSerializer rows = new RowDataSerializer(inputType);
        int nf = inputType.getFieldCount();
        RowData.FieldGetter[] fields = new RowData.FieldGetter[nf];
        for (int f = 0; f < nf; f++) {
            fields[f] = RowData.createFieldGetter(type.getTypeAt(1 + f), 1 + f);
        }
        int tail = 1 + nf;
        List<long[]> timers = new ArrayList<>(); // position, key index, time
        exportedTimers = new ArrayList<>();
        Object current = keyed.getCurrentKey();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(ArrowTypes.schemaOf(type), allocator)) {
            ArrowRowDataReader reader = new ArrowRowDataReader(root, type);
            op.exportState(root, chunk -> {
                reader.load();
                for (int i = 0; i < reader.rowCount(); i++) {
                    RowData row = reader.read(i);
                    byte[] bytes = row.getBinary(0);
                    BinaryRowData key = new BinaryRowData(keys.length);
                    key.pointTo(MemorySegmentFactory.wrap(bytes), 0, bytes.length);
                    keyed.setCurrentKey(key);
                    written.add(key);
                    try {
                        if (!row.isNullAt(tail)) {
                            GenericRowData stored = new GenericRowData(nf);
                            for (int f = 0; f < nf; f++) {
                                stored.setField(f, fields[f].getFieldOrNull(row));
                            }
                            BinaryRowData binary = rows.toBinaryRow(stored).copy();
                            binary.setRowKind(RowKind.fromByteValue(row.getByte(tail)));
                            waiting.update(binary);
                        }
                        if (!row.isNullAt(tail + 1)) {
                            boolean value = row.getBoolean(tail + 1);
                            emitted.update(ttl ? new TtlValue<>(value, row.getLong(tail + 4)) : value);
                        }
                    } catch (Exception e) {
                        throw new IllegalStateException("writing Flink's " + WAITING + " and " + EMITTED + " of a key: " + e, e);
                    }
                    if (!row.isNullAt(tail + 2)) {
                        timers.add(new long[] {row.getLong(tail + 3), written.size() - 1, row.getLong(tail + 2)});
                    }
                }
            });
            timers.sort(Comparator.comparingLong(t -> t[0]));
            InternalTimerService<VoidNamespace> service = timers();
            for (long[] t : timers) {
                RowData key = written.get((int) t[1]);
                keyed.setCurrentKey(key);
                service.registerEventTimeTimer(VoidNamespace.INSTANCE, t[2]);
                exportedTimers.add(Map.entry(key, t[2]));
            }
        } finally {
            if (current != null) {
                keyed.setCurrentKey((RowData) current);
            }
        }
    }
}
