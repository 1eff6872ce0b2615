package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.arrow.DistinctViews;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.FlinkState;
import io.ferrystream.ferry.operators.FlinkStates;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.ttl.TtlStateFactory;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRawValueData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.runtime.typeutils.ExternalSerializer;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarBinaryType;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VarBinaryVector;

import javax.annotation.Nullable;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The keyed state Flink's own group aggregate keeps where a native group aggregate runs, and its
 * import into the native operator when a job switches Ferry on from a checkpoint or savepoint taken
 * with Ferry off (docs/state.md, "Switching Ferry on or off").
 *
 * <p>Flink's {@code GroupAggFunction}, {@code MiniBatchGroupAggFunction} and {@code
 * MiniBatchGlobalGroupAggFunction} keep one {@code ValueState<RowData>} named {@code accState} per
 * key: the accumulator row of the planner's {@code AggregateInfoList} ({@code getAccTypes()}, data
 * views state-backed). Its record counter reads the BIGINT field {@code getIndexOfCountStar()}.
 * Each DISTINCT argument keeps a {@code MapState} {@code distinctAcc_<i>} from value to bitmask or
 * counts, and its NULL value's entry in the {@code ValueState} {@code distinctAcc_<i>_null_state};
 * the data views of other calls keep further {@code MapState}s, which are not imported ({@link
 * #refusal}). With idle-state TTL every value and map entry is a {@code TtlValue} with its last
 * write time, which travels with it (Ferry keeps the same times, under the same OnCreateAndWrite
 * rule).
 *
 * <p>The import registers {@code accState} with Flink's own accumulator type (so the backend's
 * compatibility check sees the serializer it wrote), lists its keys, and hands the library, 4,096
 * keys per call, one row per key: the key fields, the accumulator fields of the calls, each
 * DISTINCT map ({@link DistinctViews#encodeState}; the NULL value's entry, which no call reads, is
 * left out), and the record count when the library keeps one ({@code ferry_operator_import}). Each
 * key's value is
 * cleared once handed over, so no unread copy travels on in later checkpoints. It runs once, in
 * the task thread, before the first record; it holds the keys (not the values) on the heap.
 *
 * <p>The other way, a savepoint (not a checkpoint) of the native operator writes {@code accState}
 * for every key instead of Ferry's raw keyed state, from the rows {@code ferry_operator_export}
 * hands out, so Flink's operator restores it; once the backend's synchronous snapshot phase has
 * its copy, the operator clears it again. It costs what Flink's own state costs, for the length of
 * the savepoint's synchronous phase (on the heap backend a Java copy of the state).
 */
public final class FlinkAccState implements FlinkState {
    private static final long serialVersionUID = 1L;

    /** The name of Flink's state (GroupAggFunction and its mini-batch forms). */
    public static final String NAME = "accState";

    /** Keys imported in this JVM, for tests and logs. */
    private static final AtomicLong IMPORTED = new AtomicLong();

    /**
     * A MapState behind a data view (MapViewSpec): its name and its key and value types (internal
     * conversion). A DISTINCT argument's values are BIGINT or ARRAY, and its NULL value's entry
     * lives in a ValueState of its own; a MIN/MAX with retraction's are BIGINT counts.
     */
    public record MapViewState(String name, DataType keyType, DataType valueType) implements Serializable {
        boolean array() {
            return valueType.getLogicalType() instanceof ArrayType;
        }

        String nullStateName() {
            return name + "_null_state"; // PerKeyStateDataViewStore.NULL_STATE_POSTFIX
        }
    }

    /**
     * A MIN/MAX with retraction: its accumulator field in {@code accState} ({@code STRUCTURED<min,
     * mapSize, map placeholder>}) and its map (MapState {@code agg<a>$map}).
     */
    public record MinMaxState(int field, MapViewState map) implements Serializable {}

    private final RowType keyType;
    private final LogicalType[] accTypes;
    private final int callFields;
    private final List<MapViewState> distinct;
    private final List<MinMaxState> minMax;
    private final int recordCountField;
    /** Idle-state TTL is on: Flink keeps each value as a TtlValue with its last write time. */
    private final boolean ttl;
    private final @Nullable String refusal;

    /**
     * @param keyType the key fields, in key order
     * @param accTypes Flink's accumulator row ({@code AggregateInfoList#getAccTypes}, state-backed views)
     * @param callFields how many leading accumulator fields the library merges into its calls
     * @param distinct the DISTINCT arguments' states, in Flink's order (their placeholder fields
     *     close the accumulator row)
     * @param minMax the data views of the calls that are MIN/MAX with retraction
     * @param recordCountField the accumulator field holding the record count to hand over after
     *     the calls' fields, or -1 when the library keeps no counter of its own
     * @param ttl whether idle-state TTL is on (the last write time is the last column)
     * @param refusal why Flink's state cannot be imported, or null
     */
    public FlinkAccState(RowType keyType, LogicalType[] accTypes, int callFields, List<MapViewState> distinct,
            List<MinMaxState> minMax, int recordCountField, boolean ttl, @Nullable String refusal) {
        this.keyType = keyType;
        this.accTypes = accTypes.clone();
        this.callFields = callFields;
        this.distinct = List.copyOf(distinct);
        this.minMax = List.copyOf(minMax);
        this.recordCountField = recordCountField;
        this.ttl = ttl;
        this.refusal = refusal;
    }

    @Override
    public List<String> names() {
        List<String> names = new ArrayList<>(List.of(NAME));
        for (MinMaxState m : minMax) {
            names.add(m.map().name());
        }
        for (MapViewState d : distinct) {
            names.add(d.name());
            names.add(d.nullStateName());
        }
        return names;
    }

    @Override
    public @Nullable String refusal() {
        return refusal;
    }

    /** Keys imported by every operator of this JVM so far. */
    public static long importedKeys() {
        return IMPORTED.get();
    }

    /**
     * The import rows: key fields, the calls' accumulator fields, the DISTINCT maps, the record
     * count if handed over, the last write time with TTL.
     */
    RowType importType() {
        List<LogicalType> types = new ArrayList<>(keyType.getChildren());
        types.addAll(Arrays.asList(accTypes).subList(0, callFields));
        for (MinMaxState m : minMax) {
            types.set(keyType.getFieldCount() + m.field(), new VarBinaryType(false, VarBinaryType.MAX_LENGTH));
        }
        for (int i = 0; i < distinct.size(); i++) {
            types.add(new VarBinaryType(false, VarBinaryType.MAX_LENGTH));
        }
        if (recordCountField >= 0) {
            types.add(new BigIntType(false));
        }
        if (ttl) {
            types.add(new BigIntType(false));
        }
        return RowType.of(types.toArray(new LogicalType[0]));
    }

    @Override
    @SuppressWarnings("unchecked")
    public long importInto(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator) throws Exception {
        if (refusal != null) {
            throw new IllegalStateException("Flink's " + NAME + " cannot be imported: " + refusal);
        }
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        ValueState<Object> state = state(keyed);
        DistinctViews.Codec[] codecs = codecs();
        MapState<Object, Object>[] maps = maps(keyed);
        ValueState<Object>[] nulls = nullStates(keyed);
        MinMaxView[] views = minMaxViews(keyed);
        List<RowData> keys = FlinkStates.keys(keyed, List.of(NAME));
        RowData.FieldGetter[] keyFields = getters(keyType.getChildren().toArray(new LogicalType[0]), keyType.getFieldCount());
        RowData.FieldGetter[] accFields = getters(accTypes, callFields);
        int width = importType().getFieldCount();
        FlinkStates.importKeys(op, keyed, keys, importType(), allocator, (key, rows) -> {
            Object value = state.value();
            RowData acc = ttl ? ((TtlValue<RowData>) value).getUserValue() : (RowData) value;
            GenericRowData row = new GenericRowData(width);
            int f = 0;
            for (RowData.FieldGetter g : keyFields) {
                row.setField(f++, g.getFieldOrNull(key));
            }
            for (RowData.FieldGetter g : accFields) {
                row.setField(f++, g.getFieldOrNull(acc));
            }
            for (MinMaxView v : views) {
                row.setField(keyFields.length + v.state.field(), v.read(acc));
            }
            for (int d = 0; d < maps.length; d++) {
                row.setField(f++, bytes(codecs[d].encodeState(maps[d].entries(), ttl)));
                maps[d].clear();
                nulls[d].clear();
            }
            if (recordCountField >= 0) {
                row.setField(f++, acc.getLong(recordCountField));
            }
            if (ttl) {
                row.setField(f, ((TtlValue<RowData>) value).getLastAccessTimestamp());
            }
            rows.add(row);
            state.clear();
        });
        clearOrphans(keyed, views);
        IMPORTED.addAndGet(keys.size());
        return keys.size();
    }

    /**
     * Clears the map entries of keys without {@code accState}: Flink clears a key's maps with its
     * accumulators, and writes its accumulators on every row, so such entries can only be left
     * over after {@code accState} expired, and are expired themselves.
     */
    private void clearOrphans(KeyedStateBackend<RowData> keyed, MinMaxView[] views) throws Exception {
        MapState<Object, Object>[] maps = maps(keyed);
        ValueState<Object>[] nulls = nullStates(keyed);
        List<String> left = new ArrayList<>();
        List<Runnable> clears = new ArrayList<>();
        for (int d = 0; d < maps.length; d++) {
            MapState<Object, Object> map = maps[d];
            ValueState<Object> nul = nulls[d];
            left.add(distinct.get(d).name());
            clears.add(map::clear);
            left.add(distinct.get(d).nullStateName());
            clears.add(nul::clear);
        }
        for (MinMaxView v : views) {
            left.add(v.state.map().name());
            clears.add(v.map::clear);
        }
        for (int s = 0; s < left.size(); s++) {
            for (RowData key : FlinkStates.keys(keyed, List.of(left.get(s)))) {
                keyed.setCurrentKey(key);
                clears.get(s).run();
            }
        }
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] a = new byte[b.remaining()];
        b.get(a);
        return a;
    }

    /** The export rows: the key's BinaryRowData bytes, then the import layout's accumulator columns. */
    RowType exportType() {
        List<LogicalType> types = new ArrayList<>();
        types.add(new VarBinaryType(false, VarBinaryType.MAX_LENGTH));
        types.addAll(importType().getChildren().subList(keyType.getFieldCount(), importType().getFieldCount()));
        return RowType.of(types.toArray(new LogicalType[0]));
    }

    /** Each key and value in bytes of their own (the heap backend keeps the objects). */
    @Override
    @SuppressWarnings("unchecked")
    public void exportFrom(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator, List<RowData> keys)
            throws Exception {
        if (refusal != null) {
            throw new IllegalStateException("Flink's " + NAME + " cannot be written: " + refusal);
        }
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        ValueState<Object> state = state(keyed);
        DistinctViews.Codec[] codecs = codecs();
        MapState<Object, Object>[] maps = maps(keyed);
        MinMaxView[] views = minMaxViews(keyed);
        int aggFields = accTypes.length - distinct.size();
        RowDataSerializer accSerializer = new RowDataSerializer(accTypes);
        int lastWrite = exportType().getFieldCount() - 1;
        RowData.FieldGetter[] accFields = new RowData.FieldGetter[callFields];
        for (int f = 0; f < callFields; f++) {
            accFields[f] = RowData.createFieldGetter(accTypes[f], f + 1); // after the key column
        }
        for (MinMaxState m : minMax) {
            accFields[m.field()] = null; // a VARBINARY column: MinMaxView.write
        }
        int keyArity = keyType.getFieldCount();
        try (FlinkStates.CurrentKey kept = FlinkStates.keepCurrentKey(keyed)) {
            // nested accumulator rows read as binary rows too; copied below
            FlinkStates.exportRows(op, exportType(), allocator, true, (row, root, i) -> {
                BinaryRowData key = FlinkStates.exportedKey(row, keyArity);
                keyed.setCurrentKey(key);
                keys.add(key);
                GenericRowData acc = new GenericRowData(accTypes.length);
                for (int f = 0; f < callFields; f++) {
                    if (accFields[f] != null) {
                        acc.setField(f, accFields[f].getFieldOrNull(row));
                    }
                }
                if (aggFields > callFields) { // the count1 Flink inserted: the record count
                    acc.setField(callFields, row.getLong(1 + callFields + distinct.size()));
                }
                for (int d = 0; d < distinct.size(); d++) {
                    acc.setField(aggFields + d, BinaryRawValueData.fromBytes(new byte[] {0})); // NullSerializer's byte
                }
                try {
                    for (MinMaxView v : views) {
                        VarBinaryVector col = (VarBinaryVector) root.getVector(1 + v.state.field());
                        acc.setField(v.state.field(), v.write(col, i));
                    }
                    BinaryRowData value = accSerializer.toBinaryRow(acc).copy();
                    state.update(ttl ? new TtlValue<>(value, row.getLong(lastWrite)) : value);
                    for (int d = 0; d < distinct.size(); d++) {
                        VarBinaryVector v = (VarBinaryVector) root.getVector(1 + callFields + d);
                        MapState<Object, Object> map = maps[d];
                        codecs[d].forEachEntry(v.getDataBuffer(), v.getStartOffset(i), v.getValueLength(i), ttl,
                                (k, x, at) -> put(map, k, ttl ? new TtlValue<>(x, at) : x));
                    }
                } catch (Exception e) {
                    throw new IllegalStateException("writing Flink's " + String.join(", ", names()) + " of a key: " + e, e);
                }
            });
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public void clear(KeyedStateBackend<?> backend, List<RowData> keys) throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        ValueState<Object> state = state(keyed);
        MapState<Object, Object>[] maps = maps(keyed);
        MinMaxView[] views = minMaxViews(keyed);
        FlinkStates.forEachKey(keyed, keys, key -> {
            state.clear();
            for (MapState<Object, Object> map : maps) {
                map.clear();
            }
            for (MinMaxView v : views) {
                v.map.clear();
            }
        });
    }

    /**
     * {@code accState} with the serializer Flink's operator wrote it with: the accumulator row,
     * with TTL wrapped in Flink's {@code TtlSerializer} (values are {@code TtlValue}s, read and
     * written here with their timestamps rather than through a TTL view that would hide them).
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private ValueState<Object> state(KeyedStateBackend<RowData> keyed) throws Exception {
        ValueStateDescriptor<Object> descriptor =
                new ValueStateDescriptor(NAME, ttlWrapped(InternalTypeInfo.ofFields(accTypes).toRowSerializer()));
        return keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
    }

    private static void put(MapState<Object, Object> map, Object key, Object value) {
        try {
            map.put(key, value);
        } catch (Exception e) {
            throw new IllegalStateException(e.toString(), e);
        }
    }

    /** A MIN/MAX with retraction's accumulator field and MapState, read and written per key. */
    private final class MinMaxView {
        final MinMaxState state;
        final MapState<Object, Object> map;
        final DistinctViews.Codec codec;
        final RowData.FieldGetter min;

        MinMaxView(MinMaxState state, MapState<Object, Object> map) {
            this.state = state;
            this.map = map;
            this.codec = DistinctViews.stateCodec(state.map().keyType().getLogicalType(), false);
            this.min = RowData.createFieldGetter(accTypes[state.field()].getChildren().get(0), 0);
        }

        /** The current key's accumulator with its map's entries, in the import form. */
        byte[] read(RowData acc) throws Exception {
            RowData a = acc.getRow(state.field(), 3);
            byte[] b = bytes(codec.encodeAccumulatorState(min.getFieldOrNull(a), a.getLong(1), map.entries(), ttl));
            map.clear();
            return b;
        }

        /** Writes row i's map into the current key's MapState and returns its accumulator field. */
        RowData write(VarBinaryVector col, int i) {
            Object[] acc = codec.decodeAccumulatorState(col.getDataBuffer(), col.getStartOffset(i), col.getValueLength(i), ttl,
                    (k, count, at) -> put(map, k, ttl ? new TtlValue<>(count, at) : count));
            return GenericRowData.of(acc[0], acc[1], BinaryRawValueData.fromBytes(new byte[] {0})); // NullSerializer's byte
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private MinMaxView[] minMaxViews(KeyedStateBackend<RowData> keyed) throws Exception {
        MinMaxView[] views = new MinMaxView[minMax.size()];
        for (int v = 0; v < views.length; v++) {
            MinMaxState m = minMax.get(v);
            MapStateDescriptor<Object, Object> descriptor = new MapStateDescriptor(m.map().name(),
                    ExternalSerializer.of(m.map().keyType()), ttlWrapped(ExternalSerializer.of(m.map().valueType())));
            views[v] = new MinMaxView(m, keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor));
        }
        return views;
    }

    private DistinctViews.Codec[] codecs() {
        DistinctViews.Codec[] codecs = new DistinctViews.Codec[distinct.size()];
        for (int d = 0; d < codecs.length; d++) {
            codecs[d] = DistinctViews.stateCodec(distinct.get(d).keyType().getLogicalType(), distinct.get(d).array());
        }
        return codecs;
    }

    /**
     * The {@code distinctAcc_<i>} MapStates with the serializers Flink's operator wrote them with
     * (PerKeyStateDataViewStore.getStateMapView: ExternalSerializers of the view's key and value
     * types, with TTL each value in Flink's {@code TtlSerializer}).
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private MapState<Object, Object>[] maps(KeyedStateBackend<RowData> keyed) throws Exception {
        MapState<Object, Object>[] maps = new MapState[distinct.size()];
        for (int d = 0; d < maps.length; d++) {
            MapViewState ds = distinct.get(d);
            MapStateDescriptor<Object, Object> descriptor = new MapStateDescriptor(ds.name(),
                    ExternalSerializer.of(ds.keyType()), ttlWrapped(ExternalSerializer.of(ds.valueType())));
            maps[d] = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
        }
        return maps;
    }

    /** The {@code distinctAcc_<i>_null_state} ValueStates, to clear. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private ValueState<Object>[] nullStates(KeyedStateBackend<RowData> keyed) throws Exception {
        ValueState<Object>[] states = new ValueState[distinct.size()];
        for (int d = 0; d < states.length; d++) {
            MapViewState ds = distinct.get(d);
            ValueStateDescriptor<Object> descriptor =
                    new ValueStateDescriptor(ds.nullStateName(), ttlWrapped(ExternalSerializer.of(ds.valueType())));
            states[d] = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
        }
        return states;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private TypeSerializer<Object> ttlWrapped(TypeSerializer<?> serializer) {
        return ttl ? new TtlStateFactory.TtlSerializer(LongSerializer.INSTANCE, serializer) : (TypeSerializer<Object>) serializer;
    }

    private static RowData.FieldGetter[] getters(LogicalType[] types, int n) {
        RowData.FieldGetter[] g = new RowData.FieldGetter[n];
        for (int i = 0; i < n; i++) {
            g[i] = RowData.createFieldGetter(types[i], i);
        }
        return g;
    }
}
