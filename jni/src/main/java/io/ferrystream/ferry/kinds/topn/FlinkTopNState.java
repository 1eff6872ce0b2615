package io.ferrystream.ferry.kinds.topn;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.FlinkState;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.ttl.TtlStateFactory;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;
import org.apache.flink.table.data.writer.BinaryWriter;
import org.apache.flink.table.runtime.typeutils.InternalSerializers;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;
import org.apache.flink.types.RowKind;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The keyed state Flink's own Top-N functions keep where Ferry's native Top-N ({@value
 * TopNSpec#KIND}) runs (docs/state.md, "Switching Ferry on or off"), one state per function, of the
 * same name and serializers with and without async state (the async-state twins register state
 * v2 descriptors of the same names):
 *
 * <ul>
 *   <li>{@link TopNSpec.Function#APPEND_ONLY_TOP_N} ({@code AppendOnlyTopNFunction}): the {@code
 *       MapState} {@value #DATA_STATE} from the sort key (the sort key selector's projection of the
 *       input row, a {@code RowDataSerializer} of the sort fields' types) to the list of the
 *       key's rows with that sort key, in arrival order ({@code ListSerializer} of the input's
 *       {@code RowDataSerializer}). Import rows: one per stored row, its input fields; all rows of
 *       a key consecutive and in one import call, a sort key's rows in their list's order (Go
 *       recomputes Flink's {@code TreeMap} order, so the map's iteration order does not matter).
 *       Export rows: the key's {@code BinaryRowData} bytes, then the row's input fields; all rows
 *       of a key consecutive, in the order of Flink's buffer (sort order, list order). Consecutive
 *       rows of a key whose projected sort keys are byte-equal form one list.
 *   <li>{@link TopNSpec.Function#FAST_TOP1} ({@code FastTop1Function}): the {@code ValueState}
 *       {@value #TOP1_STATE} holding the key's top row (the input's {@code RowDataSerializer}).
 *       Flink writes its LRU cache into it at every snapshot ({@code FastTop1Function#snapshotState}),
 *       so a savepoint of Flink's holds every key. Import rows: the row's fields. Export rows: the
 *       key's bytes, then the row's fields. The stored row's RowKind is not carried (Flink's
 *       outputs never depend on it): rows are written +I.
 *   <li>{@link TopNSpec.Function#APPEND_ONLY_FIRST_N} ({@code AppendOnlyFirstNFunction}): the
 *       {@code ValueState} {@value #COUNTER_STATE}, an {@code Integer}, the rows emitted for the
 *       key so far; with idle-state TTL a {@code TtlValue} with its last write. Import rows: the key
 *       fields, the counter (INT NOT NULL), with TTL the last write (BIGINT NOT NULL, ms). Export
 *       rows: the key's bytes, the counter, with TTL the last write.
 * </ul>
 *
 * <p>Idle-state TTL is carried for the first-N function only: the other two run natively only
 * without it ({@code TopNKind}). A state holding what Flink never writes (an empty or NULL list, a
 * row under another sort key than its own, a counter below 1) is refused with an {@link
 * IllegalStateException}, and so is an export that breaks the contract's order.
 */
public final class FlinkTopNState implements FlinkState {
    private static final long serialVersionUID = 1L;

    /** {@code AppendOnlyTopNFunction}'s (and {@code AsyncStateAppendOnlyTopNFunction}'s) state. */
    public static final String DATA_STATE = "data-state-with-append";
    /** {@code FastTop1Function}'s (and {@code AsyncStateFastTop1Function}'s) state. */
    public static final String TOP1_STATE = "Top1-Rank-State";
    /** {@code AppendOnlyFirstNFunction}'s state. */
    public static final String COUNTER_STATE = "counterState";

    private static final int BATCH = 4096;

    /** The input row as Flink's serializer writes it. */
    private final RowType inputType;
    private final int[] keys;
    private final TopNSpec.Function function;
    private final int[] sortFields;
    private final boolean ttl;

    /**
     * The state of the function {@code StreamExecRank} runs for the node; what the planner's kind
     * passes to {@code importingFlinkState} for every native Top-N.
     *
     * @param inputType the node's input row type, exactly as Flink's exec node has it (Flink's
     *     serializers are checked against the savepoint's: a processing-time attribute keeps its
     *     kind)
     * @param keys the partition keys, input columns (the state key)
     * @param function the function the spec runs ({@link TopNSpec#function()})
     * @param sortFields the sort fields, input columns, in order ({@link TopNSpec#sortFields()}):
     *     the sort key {@link TopNSpec.Function#APPEND_ONLY_TOP_N} maps from
     * @param ttl whether idle-state TTL is on ({@link TopNSpec#stateTtlMs()} {@code > 0}); only
     *     {@link TopNSpec.Function#APPEND_ONLY_FIRST_N} runs natively with it
     * @throws IllegalArgumentException with TTL for another function
     */
    public FlinkTopNState(RowType inputType, int[] keys, TopNSpec.Function function, int[] sortFields, boolean ttl) {
        if (ttl && function != TopNSpec.Function.APPEND_ONLY_FIRST_N) {
            throw new IllegalArgumentException("idle-state TTL is carried for " + TopNSpec.Function.APPEND_ONLY_FIRST_N.json()
                    + " only, not for " + function.json() + " (it runs natively only without TTL)");
        }
        if (function == TopNSpec.Function.APPEND_ONLY_TOP_N && sortFields.length == 0) {
            throw new IllegalArgumentException(function.json() + " needs its sort fields");
        }
        this.inputType = inputType;
        this.keys = keys.clone();
        this.function = function;
        this.sortFields = sortFields.clone();
        this.ttl = ttl;
    }

    /** The state of a spec's function: {@code new FlinkTopNState(inputType, keys, …)} from the spec's fields. */
    public static FlinkTopNState of(TopNSpec spec, int[] keys) {
        return new FlinkTopNState(spec.inputType(), keys, spec.function(), spec.sortFields(), spec.stateTtlMs() > 0);
    }

    @Override
    public List<String> names() {
        return List.of(name());
    }

    private String name() {
        return switch (function) {
            case APPEND_ONLY_TOP_N -> DATA_STATE;
            case FAST_TOP1 -> TOP1_STATE;
            case APPEND_ONLY_FIRST_N -> COUNTER_STATE;
        };
    }

    @Override
    public @Nullable String refusal() {
        return null;
    }

    private RowType carried() {
        return ArrowTypes.carriedFields(inputType);
    }

    private boolean counter() {
        return function == TopNSpec.Function.APPEND_ONLY_FIRST_N;
    }

    /** First-N: the key fields, the counter, [the last write]. Otherwise the row's fields. */
    RowType importType() {
        List<LogicalType> types = new ArrayList<>();
        if (counter()) {
            for (int k : keys) {
                types.add(carried().getTypeAt(k));
            }
            types.add(new IntType(false));
            if (ttl) {
                types.add(new BigIntType(false));
            }
        } else {
            types.addAll(carried().getChildren());
        }
        return RowType.of(types.toArray(new LogicalType[0]));
    }

    /** The key's BinaryRowData bytes, then the import row after the key fields (first-N) or the row's fields. */
    RowType exportType() {
        List<LogicalType> types = new ArrayList<>();
        types.add(new VarBinaryType(false, VarBinaryType.MAX_LENGTH));
        if (counter()) {
            types.add(new IntType(false));
            if (ttl) {
                types.add(new BigIntType(false));
            }
        } else {
            types.addAll(carried().getChildren());
        }
        return RowType.of(types.toArray(new LogicalType[0]));
    }

    /** The sort key's row type: the sort fields' types, as {@code KeySelectorUtil} projects them. */
    RowType sortKeyType() {
        LogicalType[] types = new LogicalType[sortFields.length];
        for (int i = 0; i < sortFields.length; i++) {
            types[i] = inputType.getTypeAt(sortFields[i]);
        }
        return RowType.of(types);
    }

    @Override
    @SuppressWarnings("unchecked")
    public long importInto(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator) throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        State state = state(keyed);
        List<RowData> all = new ArrayList<>();
        try (Stream<RowData> stream = keyed.getKeys(name(), VoidNamespace.INSTANCE)) {
            stream.forEach(k -> all.add(keyed.getKeySerializer().copy(k)));
        }
        RowType type = importType();
        RowData.FieldGetter[] fields = new RowData.FieldGetter[counter() ? keys.length : inputType.getFieldCount()];
        for (int f = 0; f < fields.length; f++) {
            fields[f] = RowData.createFieldGetter(type.getTypeAt(f), f);
        }
        SortKeys sortKeys = function == TopNSpec.Function.APPEND_ONLY_TOP_N ? new SortKeys() : null;
        Object current = backend.getCurrentKey();
        try (RowDataArrowWriter writer = RowDataArrowWriter.create(type, allocator, BATCH)) {
            writer.reset();
            List<GenericRowData> rows = new ArrayList<>();
            for (RowData key : all) {
                keyed.setCurrentKey(key);
                rows.clear();
                switch (function) {
                    case APPEND_ONLY_TOP_N -> {
                        MapState<RowData, List<RowData>> map = (MapState<RowData, List<RowData>>) state;
                        for (Map.Entry<RowData, List<RowData>> e : map.entries()) {
                            List<RowData> list = e.getValue();
                            if (list == null || list.isEmpty()) {
                                throw new IllegalStateException("Flink's " + DATA_STATE + " holds " + (list == null ? "no" : "an empty")
                                        + " list for a sort key, which Flink never writes");
                            }
                            BinaryRowData sortKey = sortKeys.binary(e.getKey());
                            for (RowData row : list) {
                                if (row == null) {
                                    throw new IllegalStateException("Flink's " + DATA_STATE + " holds a NULL row, which Flink never writes");
                                }
                                if (!sortKey.equals(sortKeys.of(row))) {
                                    throw new IllegalStateException("Flink's " + DATA_STATE + " holds a row under a sort key other than"
                                            + " its own, which Flink never writes");
                                }
                                rows.add(fieldsOf(row, fields));
                            }
                        }
                    }
                    case FAST_TOP1 -> {
                        RowData row = ((ValueState<RowData>) state).value();
                        if (row == null) { // listed by getKeys, gone once read (expired)
                            break;
                        }
                        rows.add(fieldsOf(row, fields));
                    }
                    case APPEND_ONLY_FIRST_N -> {
                        Object value = ((ValueState<Object>) state).value();
                        if (value == null) {
                            break;
                        }
                        Object user = ttl ? ((TtlValue<Object>) value).getUserValue() : value;
                        if (!(user instanceof Integer) || (Integer) user < 1) {
                            throw new IllegalStateException("Flink's " + COUNTER_STATE + " holds " + user
                                    + " for a key, which Flink never writes");
                        }
                        GenericRowData row = new GenericRowData(type.getFieldCount());
                        int f = 0;
                        for (RowData.FieldGetter g : fields) {
                            row.setField(f++, g.getFieldOrNull(key));
                        }
                        row.setField(f++, user);
                        if (ttl) {
                            row.setField(f, ((TtlValue<Object>) value).getLastAccessTimestamp());
                        }
                        rows.add(row);
                    }
                }
                // a key's rows in one call: flush what came before when the batch is full
                if (writer.count() > 0 && writer.count() + rows.size() > BATCH) {
                    writer.finish();
                    op.importState(writer.root());
                    writer.reset();
                }
                for (GenericRowData row : rows) {
                    writer.write(row);
                }
                state.clear();
            }
            if (writer.count() > 0) {
                writer.finish();
                op.importState(writer.root());
            }
        } finally {
            if (current != null) {
                keyed.setCurrentKey((RowData) current);
            }
        }
        return all.size();
    }

    private static GenericRowData fieldsOf(RowData row, RowData.FieldGetter[] fields) {
        GenericRowData out = new GenericRowData(fields.length);
        for (int f = 0; f < fields.length; f++) {
            out.setField(f, fields[f].getFieldOrNull(row));
        }
        return out;
    }

    /**
     * Sort keys as Flink's sort key selector projects them ({@code KeySelectorUtil}'s generated
     * projection into a BinaryRowData): byte for byte, since Flink's map state finds its entries by
     * the key's bytes. A NULL DECIMAL or TIMESTAMP too wide to be compact keeps its reserved
     * variable-length space, as the generated code writes it ({@code
     * CodeGenUtils#binaryWriterWriteNull}), unlike {@code RowDataSerializer#toBinaryRow}.
     */
    private final class SortKeys {
        final LogicalType[] types = new LogicalType[sortFields.length];
        /** The sort fields of an input row. */
        final RowData.FieldGetter[] ofRow = new RowData.FieldGetter[sortFields.length];
        /** The fields of a sort key. */
        final RowData.FieldGetter[] ofKey = new RowData.FieldGetter[sortFields.length];
        final TypeSerializer<?>[] serializers = new TypeSerializer<?>[sortFields.length];

        SortKeys() {
            for (int i = 0; i < sortFields.length; i++) {
                types[i] = inputType.getTypeAt(sortFields[i]);
                ofRow[i] = RowData.createFieldGetter(types[i], sortFields[i]);
                ofKey[i] = RowData.createFieldGetter(types[i], i);
                serializers[i] = InternalSerializers.create(types[i]);
            }
        }

        /** The sort key of an input row, as Flink's projection writes it (kind +I). */
        BinaryRowData of(RowData row) {
            return write(row, ofRow);
        }

        /** A stored sort key in binary form, its kind +I. */
        BinaryRowData binary(RowData key) {
            BinaryRowData b = key instanceof BinaryRowData ? ((BinaryRowData) key).copy() : write(key, ofKey);
            b.setRowKind(RowKind.INSERT);
            return b;
        }

        private BinaryRowData write(RowData row, RowData.FieldGetter[] getters) {
            BinaryRowData key = new BinaryRowData(types.length);
            BinaryRowWriter writer = new BinaryRowWriter(key);
            for (int i = 0; i < types.length; i++) {
                Object value = getters[i].getFieldOrNull(row);
                if (value != null) {
                    BinaryWriter.write(writer, i, value, types[i], serializers[i]);
                } else if (types[i].is(LogicalTypeRoot.DECIMAL) && !DecimalData.isCompact(LogicalTypeChecks.getPrecision(types[i]))) {
                    writer.writeDecimal(i, null, LogicalTypeChecks.getPrecision(types[i]));
                } else if ((types[i].is(LogicalTypeRoot.TIMESTAMP_WITHOUT_TIME_ZONE)
                                || types[i].is(LogicalTypeRoot.TIMESTAMP_WITH_LOCAL_TIME_ZONE))
                        && !TimestampData.isCompact(LogicalTypeChecks.getPrecision(types[i]))) {
                    writer.writeTimestamp(i, null, LogicalTypeChecks.getPrecision(types[i]));
                } else {
                    writer.setNullAt(i);
                }
            }
            writer.complete();
            return key;
        }
    }

    /** The sort key of an input row as Flink's sort key selector writes it (for tests). */
    BinaryRowData sortKeyOf(RowData row) {
        return new SortKeys().of(row);
    }

    @Override
    @SuppressWarnings("unchecked")
    public void exportFrom(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator, List<RowData> written)
            throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        State state = state(keyed);
        RowType type = exportType();
        int valueFields = type.getFieldCount() - 1;
        RowData.FieldGetter[] fields = new RowData.FieldGetter[valueFields];
        for (int f = 0; f < fields.length; f++) {
            fields[f] = RowData.createFieldGetter(type.getTypeAt(1 + f), 1 + f);
        }
        RowDataSerializer rows = new RowDataSerializer(inputType);
        Lists lists = function == TopNSpec.Function.APPEND_ONLY_TOP_N
                ? new Lists(keyed, (MapState<RowData, List<RowData>>) state, new SortKeys())
                : null;
        Set<BinaryRowData> seen = new HashSet<>();
        Object current = backend.getCurrentKey();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(ArrowTypes.schemaOf(type), allocator)) {
            ArrowRowDataReader reader = new ArrowRowDataReader(root, type);
            op.exportState(root, chunk -> {
                reader.load();
                for (int i = 0; i < reader.rowCount(); i++) {
                    RowData row = reader.read(i);
                    byte[] bytes = row.getBinary(0);
                    BinaryRowData key = new BinaryRowData(keys.length);
                    key.pointTo(MemorySegmentFactory.wrap(bytes), 0, bytes.length);
                    if (lists != null && lists.continues(key)) {
                        lists.add(stored(rows, fields, row));
                        continue;
                    }
                    if (!seen.add(key)) {
                        throw new IllegalStateException("the native Top-N exported the rows of a key apart, not consecutively");
                    }
                    written.add(key);
                    try {
                        if (lists != null) {
                            lists.start(key, stored(rows, fields, row));
                            continue;
                        }
                        keyed.setCurrentKey(key);
                        if (function == TopNSpec.Function.FAST_TOP1) {
                            ((ValueState<RowData>) state).update(stored(rows, fields, row));
                        } else {
                            Integer count = row.getInt(1);
                            ((ValueState<Object>) state).update(ttl ? new TtlValue<>(count, row.getLong(2)) : count);
                        }
                    } catch (Exception e) {
                        throw new IllegalStateException("writing Flink's " + name() + " of a key: " + e, e);
                    }
                }
            });
            if (lists != null) {
                lists.flush();
            }
        } finally {
            if (current != null) {
                keyed.setCurrentKey((RowData) current);
            }
        }
    }

    /** The stored row of an export row: its input fields, as Flink's serializer writes them, +I. */
    private static BinaryRowData stored(RowDataSerializer rows, RowData.FieldGetter[] fields, RowData row) {
        GenericRowData stored = new GenericRowData(fields.length);
        for (int f = 0; f < fields.length; f++) {
            stored.setField(f, fields[f].getFieldOrNull(row));
        }
        return rows.toBinaryRow(stored).copy();
    }

    /**
     * Rebuilds Flink's map of one key at a time from the export's rows: consecutive rows whose
     * sort keys are byte-equal form one list, put when the next sort key or key begins.
     */
    private static final class Lists {
        private final KeyedStateBackend<RowData> keyed;
        private final MapState<RowData, List<RowData>> map;
        private final SortKeys sortKeys;
        private BinaryRowData key;
        private BinaryRowData sortKey;
        private List<RowData> list;
        private final Set<BinaryRowData> sortKeysOfKey = new HashSet<>();

        Lists(KeyedStateBackend<RowData> keyed, MapState<RowData, List<RowData>> map, SortKeys sortKeys) {
            this.keyed = keyed;
            this.map = map;
            this.sortKeys = sortKeys;
        }

        /** Whether a row of {@code k} continues the current key. */
        boolean continues(BinaryRowData k) {
            return key != null && key.equals(k);
        }

        void start(BinaryRowData k, BinaryRowData row) throws Exception {
            flush();
            key = k;
            sortKeysOfKey.clear();
            add(row);
        }

        void add(BinaryRowData row) {
            BinaryRowData s = sortKeys.of(row);
            if (s.equals(sortKey)) {
                list.add(row);
                return;
            }
            try {
                put();
            } catch (Exception e) {
                throw new IllegalStateException("writing Flink's " + DATA_STATE + " of a key: " + e, e);
            }
            if (!sortKeysOfKey.add(s)) {
                throw new IllegalStateException("the native Top-N exported the rows of one sort key of a key apart,"
                        + " not consecutively");
            }
            sortKey = s;
            list = new ArrayList<>();
            list.add(row);
        }

        private void put() throws Exception {
            if (sortKey != null) {
                keyed.setCurrentKey(key);
                map.put(sortKey, list);
                sortKey = null;
                list = null;
            }
        }

        void flush() throws Exception {
            put();
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public void clear(KeyedStateBackend<?> backend, List<RowData> written) throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        State state = state(keyed);
        Object current = backend.getCurrentKey();
        try {
            for (RowData key : written) {
                keyed.setCurrentKey(key);
                state.clear();
            }
        } finally {
            if (current != null) {
                keyed.setCurrentKey((RowData) current);
            }
        }
    }

    /**
     * Flink's state of the function, with the serializers Flink's function writes it with ({@code
     * AppendOnlyTopNFunction#open}: the sort key selector's produced type and a {@code
     * ListTypeInfo} of the input; {@code FastTop1Function#open}: the input's; {@code
     * AppendOnlyFirstNFunction#open}: {@code Types.INT}, with TTL wrapped in Flink's {@code
     * TtlSerializer}).
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private State state(KeyedStateBackend<RowData> keyed) throws Exception {
        return switch (function) {
            case APPEND_ONLY_TOP_N -> keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                    new MapStateDescriptor<>(DATA_STATE, new RowDataSerializer(sortKeyType()),
                            new ListSerializer<>(new RowDataSerializer(inputType))));
            case FAST_TOP1 -> keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                    new ValueStateDescriptor<>(TOP1_STATE, (TypeSerializer<RowData>) new RowDataSerializer(inputType)));
            case APPEND_ONLY_FIRST_N -> {
                TypeSerializer<Object> serializer = ttl
                        ? new TtlStateFactory.TtlSerializer(LongSerializer.INSTANCE, IntSerializer.INSTANCE)
                        : (TypeSerializer) IntSerializer.INSTANCE;
                yield keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                        new ValueStateDescriptor<>(COUNTER_STATE, serializer));
            }
        };
    }
}
