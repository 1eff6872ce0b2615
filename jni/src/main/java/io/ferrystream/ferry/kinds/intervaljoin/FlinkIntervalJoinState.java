package io.ferrystream.ferry.kinds.intervaljoin;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.FlinkState;
import io.ferrystream.ferry.operators.FlinkStates;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.BooleanSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.typeutils.runtime.TupleSerializer;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.heap.AbstractHeapState;
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
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TinyIntType;
import org.apache.flink.table.types.logical.VarBinaryType;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;

import javax.annotation.Nullable;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * The keyed state Flink's own interval join ({@code TimeIntervalJoin}: {@code RowTimeIntervalJoin},
 * {@code ProcTimeIntervalJoin}) keeps where Ferry's native interval join runs: its import when a job
 * switches Ferry on from a checkpoint or savepoint taken with Ferry off, and its export into a
 * savepoint of the native operator, so the job restores with Ferry off (docs/state.md, "Switching
 * Ferry on or off").
 *
 * <p>Flink keeps per key {@code IntervalJoinLeftCache} and {@code IntervalJoinRightCache}, {@code
 * MapState<Long, List<Tuple2<RowData, Boolean>>>} (row time to the rows of that time, in arrival
 * order, each with its "emitted" flag), {@code IntervalJoinLeftTimerState} and {@code
 * IntervalJoinRightTimerState}, {@code ValueState<Long>} (the cleanup times, crossed: the left one
 * cleans the right cache), and one cleanup timer per set timer state in the timer service {@code
 * "user-timers"} (event time for a row-time join, processing time for a processing-time one). The
 * states are registered here with the serializers {@code TimeIntervalJoin.open} builds, so the
 * backend's compatibility check sees the serializers it wrote.
 *
 * <p>Import: every timer of {@code "user-timers"} is read in the queue's iteration order (the heap
 * array's order on the heap backend, its position) and deleted; every key of the four states is
 * read (the caches in the backend's iteration order and, on the heap backend, with the table length
 * of the {@code java.util.HashMap} holding them, read by reflection: Flink's JVMs open {@code
 * java.util}), handed to the library (rows laid out as {@code intervaljoin/flinkstate.go} says) and
 * cleared. Export: the library's rows are written into the four states, and the timers registered in
 * the order of their positions in Ferry's timer heap; once the backend's synchronous snapshot phase
 * has its copy, {@link #clear} removes both again.
 */
public final class FlinkIntervalJoinState implements FlinkState {
    private static final long serialVersionUID = 1L;

    public static final String LEFT_CACHE = "IntervalJoinLeftCache";
    public static final String RIGHT_CACHE = "IntervalJoinRightCache";
    public static final String LEFT_TIMER = "IntervalJoinLeftTimerState";
    public static final String RIGHT_TIMER = "IntervalJoinRightTimerState";
    /** The timer service of Flink's KeyedCoProcessOperator. */
    public static final String TIMERS = "user-timers";

    /** The parts of a row ({@code intervaljoin/flinkstate.go}). */
    private static final byte KEY = 0, LEFT = 1, RIGHT = 2, TIMER = 3;
    /** The state columns after the key, before the left and right fields. */
    private static final int COLUMNS = 8;


    /** Keys imported in this JVM, for tests and logs. */
    private static final AtomicLong IMPORTED = new AtomicLong();

    private final RowType keyType;
    private final RowType leftType;
    private final RowType rightType;
    private final boolean rowTime;
    private final @Nullable String refusal;

    /** The operator whose timer service holds Flink's timers ({@link #attach}). */
    private transient AbstractStreamOperator<?> operator;
    /** Timers registered by the last export, for {@link #clear}. */
    private transient List<Tuple2<BinaryRowData, Long>> exportedTimers;

    /**
     * @param keyType the key fields as Flink's key selector produces them
     * @param leftType Flink's left input row type (the caches' rows)
     * @param rightType Flink's right input row type
     * @param rowTime a row-time join (event-time timers), else processing time
     * @param refusal why Flink's state cannot be carried, or null
     */
    public FlinkIntervalJoinState(RowType keyType, RowType leftType, RowType rightType, boolean rowTime,
            @Nullable String refusal) {
        this.keyType = keyType;
        this.leftType = leftType;
        this.rightType = rightType;
        this.rowTime = rowTime;
        this.refusal = refusal;
    }

    /** Gives access to the operator's timer services; called before {@link #importInto}. */
    void attach(AbstractStreamOperator<?> operator) {
        this.operator = operator;
    }

    @Override
    public List<String> names() {
        return List.of(LEFT_CACHE, RIGHT_CACHE, LEFT_TIMER, RIGHT_TIMER);
    }

    @Override
    public @Nullable String refusal() {
        return refusal;
    }

    /** Keys imported by every operator of this JVM so far. */
    public static long importedKeys() {
        return IMPORTED.get();
    }

    private static RowType nullable(RowType t) {
        List<RowType.RowField> fields = new ArrayList<>();
        for (RowType.RowField f : t.getFields()) {
            fields.add(new RowType.RowField(f.getName(), ArrowTypes.carried(f.getType()).copy(true)));
        }
        return new RowType(fields);
    }

    /** The state columns, then the left and the right fields (as they cross into Go, nullable). */
    private List<LogicalType> stateColumns() {
        List<LogicalType> types = new ArrayList<>(List.of(
                new TinyIntType(false), new BigIntType(), new BooleanType(), new BigIntType(),
                new BigIntType(), new BigIntType(), new IntType(), new IntType()));
        types.addAll(nullable(leftType).getChildren());
        types.addAll(nullable(rightType).getChildren());
        return types;
    }

    /** The import rows: the key fields, then {@link #stateColumns}. */
    RowType importType() {
        List<LogicalType> types = new ArrayList<>();
        for (LogicalType t : keyType.getChildren()) {
            types.add(ArrowTypes.carried(t));
        }
        types.addAll(stateColumns());
        return RowType.of(types.toArray(new LogicalType[0]));
    }

    /** The export rows: the key's BinaryRowData bytes, then {@link #stateColumns}. */
    RowType exportType() {
        List<LogicalType> types = new ArrayList<>();
        types.add(new VarBinaryType(true, VarBinaryType.MAX_LENGTH));
        types.addAll(stateColumns());
        return RowType.of(types.toArray(new LogicalType[0]));
    }

    /** The four states, with the serializers TimeIntervalJoin.open builds. */
    private final class States {
        final MapState<Long, List<Tuple2<RowData, Boolean>>> leftCache;
        final MapState<Long, List<Tuple2<RowData, Boolean>>> rightCache;
        final ValueState<Long> leftTimer;
        final ValueState<Long> rightTimer;

        States(KeyedStateBackend<RowData> keyed) throws Exception {
            leftCache = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, cache(LEFT_CACHE, leftType));
            rightCache = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, cache(RIGHT_CACHE, rightType));
            leftTimer = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                    new ValueStateDescriptor<>(LEFT_TIMER, LongSerializer.INSTANCE));
            rightTimer = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                    new ValueStateDescriptor<>(RIGHT_TIMER, LongSerializer.INSTANCE));
        }

        void clear() {
            leftCache.clear();
            rightCache.clear();
            leftTimer.clear();
            rightTimer.clear();
        }
    }

    /**
     * {@code new MapStateDescriptor<>(name, LONG_TYPE_INFO, new ListTypeInfo<>(new
     * TupleTypeInfo<>(InternalTypeInfo.of(rowType), BOOLEAN_TYPE_INFO)))}, with the serializers those
     * type informations create.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static MapStateDescriptor<Long, List<Tuple2<RowData, Boolean>>> cache(String name, RowType rowType) {
        TupleSerializer<Tuple2<RowData, Boolean>> tuple = new TupleSerializer<>((Class) Tuple2.class,
                new TypeSerializer[] {new RowDataSerializer(rowType), BooleanSerializer.INSTANCE});
        return new MapStateDescriptor<>(name, LongSerializer.INSTANCE, new ListSerializer<>(tuple));
    }

    private static final Triggerable<Object, VoidNamespace> NEVER = new Triggerable<>() {
        @Override
        public void onEventTime(InternalTimer<Object, VoidNamespace> timer) {
            throw new IllegalStateException("a timer of Flink's interval join fired in Ferry's operator: " + timer);
        }

        @Override
        public void onProcessingTime(InternalTimer<Object, VoidNamespace> timer) {
            throw new IllegalStateException("a timer of Flink's interval join fired in Ferry's operator: " + timer);
        }
    };

    private InternalTimerService<VoidNamespace> timers() {
        if (operator == null) {
            throw new IllegalStateException("FlinkIntervalJoinState is not attached to its operator");
        }
        return operator.getInternalTimerService(TIMERS, VoidNamespaceSerializer.INSTANCE, NEVER);
    }

    private static final Field HASH_MAP_TABLE;
    private static final Field HASH_MAP_THRESHOLD;
    private static final String NO_REFLECTION;

    static {
        Field table = null, threshold = null;
        String why = null;
        try {
            table = HashMap.class.getDeclaredField("table");
            threshold = HashMap.class.getDeclaredField("threshold");
            table.setAccessible(true);
            threshold.setAccessible(true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            why = e.toString();
            table = threshold = null;
        }
        HASH_MAP_TABLE = table;
        HASH_MAP_THRESHOLD = threshold;
        NO_REFLECTION = why;
    }

    /**
     * The cache of the current key as the heap backend holds it (a {@code java.util.HashMap}), or
     * null on another backend or when the key has none.
     */
    @SuppressWarnings("unchecked")
    private static @Nullable Map<Long, List<Tuple2<RowData, Boolean>>> heapMap(Object state) {
        state = unwrapped(state);
        if (!(state instanceof AbstractHeapState)) {
            return null;
        }
        return ((AbstractHeapState<RowData, VoidNamespace, Map<Long, List<Tuple2<RowData, Boolean>>>>) state)
                .getStateTable().get(VoidNamespace.INSTANCE);
    }

    /**
     * The backend's state inside the wrapper that state metrics put around it ({@code
     * AbstractMetricsTrackState}, with {@code state.latency-track.*} or {@code
     * state.size-track.*} on), read by reflection; {@code state} itself otherwise.
     */
    private static Object unwrapped(Object state) {
        for (int depth = 0; depth < 4 && state != null && !(state instanceof AbstractHeapState); depth++) {
            Object inner = null;
            for (Class<?> c = state.getClass(); c != null && inner == null; c = c.getSuperclass()) {
                if (c.getName().equals("org.apache.flink.runtime.state.metrics.AbstractMetricsTrackState")) {
                    try {
                        Field original = c.getDeclaredField("original");
                        original.setAccessible(true);
                        inner = original.get(state);
                    } catch (ReflectiveOperationException | RuntimeException e) {
                        throw new IllegalStateException("Ferry cannot read the state inside Flink's state metrics"
                                + " wrapper " + state.getClass().getName() + ": " + e, e);
                    }
                }
            }
            if (inner == null) {
                break;
            }
            state = inner;
        }
        return state;
    }

    /** The table length of a HashMap: what decides its iteration order with its insertion order. */
    private static int capacity(Map<?, ?> map) {
        if (!(map instanceof HashMap) || map.getClass() != HashMap.class) {
            throw new IllegalStateException("Flink's heap backend holds an interval join cache in a "
                    + map.getClass().getName() + ", not a java.util.HashMap: Ferry cannot rebuild its order");
        }
        if (HASH_MAP_TABLE == null) {
            throw new IllegalStateException("Ferry cannot read the capacity of the java.util.HashMap holding Flink's"
                    + " interval join cache, which decides the order Flink's operator emits in (" + NO_REFLECTION
                    + "); start the JVM with --add-opens=java.base/java.util=ALL-UNNAMED, as Flink's own scripts do");
        }
        try {
            Object[] table = (Object[]) HASH_MAP_TABLE.get(map);
            if (table != null) {
                return table.length;
            }
            int initial = HASH_MAP_THRESHOLD.getInt(map); // before allocation: the initial capacity
            return initial == 0 ? 16 : initial;
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public long importInto(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator) throws Exception {
        if (refusal != null) {
            throw new IllegalStateException("Flink's interval join state cannot be imported: " + refusal);
        }
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        RowDataSerializer keySerializer = (RowDataSerializer) keyed.getKeySerializer();
        try (FlinkStates.CurrentKey kept = FlinkStates.keepCurrentKey(keyed)) {
            // Flink's timers, in the queue's order, then deleted (they would fire into nothing).
            InternalTimerService<VoidNamespace> service = timers();
            Map<BinaryRowData, List<long[]>> timersOf = new HashMap<>();
            long[] position = {0};
            List<String> wrongDomain = new ArrayList<>();
            service.forEachEventTimeTimer((ns, time) -> {
                if (rowTime) {
                    timersOf.computeIfAbsent(binary(keySerializer, keyed.getCurrentKey()), k -> new ArrayList<>())
                            .add(new long[] {time, ++position[0]});
                } else {
                    wrongDomain.add("event time " + time);
                }
            });
            service.forEachProcessingTimeTimer((ns, time) -> {
                if (!rowTime) {
                    timersOf.computeIfAbsent(binary(keySerializer, keyed.getCurrentKey()), k -> new ArrayList<>())
                            .add(new long[] {time, ++position[0]});
                } else {
                    wrongDomain.add("processing time " + time);
                }
            });
            if (!wrongDomain.isEmpty()) {
                throw new IllegalStateException("Flink's " + (rowTime ? "row-time" : "processing-time") + " interval join"
                        + " left timers of the other time domain in \"" + TIMERS + "\" (" + wrongDomain.size()
                        + ", the first at " + wrongDomain.get(0) + "): not Flink's interval join state");
            }

            States states = new States(keyed);
            Set<BinaryRowData> keys = new LinkedHashSet<>();
            for (String name : names()) {
                try (Stream<RowData> all = keyed.getKeys(name, VoidNamespace.INSTANCE)) {
                    all.forEach(k -> keys.add(binary(keySerializer, k)));
                }
            }
            keys.addAll(timersOf.keySet()); // a timer without its state: the library refuses it
            RowType type = importType();
            int width = type.getFieldCount();
            int keyArity = keyType.getFieldCount();
            int first = keyArity + COLUMNS;
            RowData.FieldGetter[] keyFields = getters(keyType, 0);
            RowData.FieldGetter[] leftFields = getters(leftType, 0);
            RowData.FieldGetter[] rightFields = getters(rightType, 0);
            FlinkStates.importKeys(op, keyed, new ArrayList<>(keys), type, allocator, (key, rows) -> {
                GenericRowData head = new GenericRowData(width);
                for (int f = 0; f < keyArity; f++) {
                    head.setField(f, keyFields[f].getFieldOrNull(key));
                }
                head.setField(keyArity, KEY);
                head.setField(keyArity + 4, states.leftTimer.value());
                head.setField(keyArity + 5, states.rightTimer.value());
                Map<Long, List<Tuple2<RowData, Boolean>>> left = heapMap(states.leftCache);
                Map<Long, List<Tuple2<RowData, Boolean>>> right = heapMap(states.rightCache);
                head.setField(keyArity + 6, left == null ? null : capacity(left));
                head.setField(keyArity + 7, right == null ? null : capacity(right));
                rows.add(head);
                for (int side = 0; side < 2; side++) {
                    Map<Long, List<Tuple2<RowData, Boolean>>> heap = side == 0 ? left : right;
                    Iterable<Map.Entry<Long, List<Tuple2<RowData, Boolean>>>> entries =
                            heap != null ? heap.entrySet() : (side == 0 ? states.leftCache : states.rightCache).entries();
                    RowData.FieldGetter[] fields = side == 0 ? leftFields : rightFields;
                    int at = side == 0 ? first : first + leftType.getFieldCount();
                    for (Map.Entry<Long, List<Tuple2<RowData, Boolean>>> e : entries) {
                        if (e.getValue() == null || e.getValue().isEmpty()) {
                            throw new IllegalStateException("Flink's " + (side == 0 ? LEFT_CACHE : RIGHT_CACHE)
                                    + " holds no rows at time " + e.getKey() + ", which Flink's operator never writes");
                        }
                        for (Tuple2<RowData, Boolean> t : e.getValue()) {
                            GenericRowData row = new GenericRowData(width);
                            for (int f = 0; f < keyArity; f++) {
                                row.setField(f, head.getField(f));
                            }
                            row.setField(keyArity, side == 0 ? LEFT : RIGHT);
                            row.setField(keyArity + 1, e.getKey());
                            row.setField(keyArity + 2, t.f1);
                            for (int f = 0; f < fields.length; f++) {
                                row.setField(at + f, fields[f].getFieldOrNull(t.f0));
                            }
                            rows.add(row);
                        }
                    }
                }
                for (long[] t : timersOf.getOrDefault(key, List.of())) {
                    GenericRowData row = new GenericRowData(width);
                    for (int f = 0; f < keyArity; f++) {
                        row.setField(f, head.getField(f));
                    }
                    row.setField(keyArity, TIMER);
                    row.setField(keyArity + 1, t[0]);
                    row.setField(keyArity + 3, t[1]);
                    rows.add(row);
                }
                states.clear();
            });
            for (Map.Entry<BinaryRowData, List<long[]>> e : timersOf.entrySet()) {
                keyed.setCurrentKey(e.getKey());
                for (long[] t : e.getValue()) {
                    if (rowTime) {
                        service.deleteEventTimeTimer(VoidNamespace.INSTANCE, t[0]);
                    } else {
                        service.deleteProcessingTimeTimer(VoidNamespace.INSTANCE, t[0]);
                    }
                }
            }
            IMPORTED.addAndGet(keys.size());
            return keys.size();
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public void exportFrom(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator, List<RowData> keys)
            throws Exception {
        if (refusal != null) {
            throw new IllegalStateException("Flink's interval join state cannot be written: " + refusal);
        }
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        States states = new States(keyed);
        RowType type = exportType();
        int keyArity = keyType.getFieldCount();
        int first = 1 + COLUMNS;
        RowDataSerializer leftSerializer = new RowDataSerializer(leftType);
        RowDataSerializer rightSerializer = new RowDataSerializer(rightType);
        RowData.FieldGetter[] leftFields = getters(nullable(leftType), first);
        RowData.FieldGetter[] rightFields = getters(nullable(rightType), first + leftType.getFieldCount());
        List<long[]> timers = new ArrayList<>(); // position, key index, time
        exportedTimers = new ArrayList<>();
        try (FlinkStates.CurrentKey kept = FlinkStates.keepCurrentKey(keyed);
                VectorSchemaRoot root = VectorSchemaRoot.create(ArrowTypes.schemaOf(type), allocator)) {
            ArrowRowDataReader reader = new ArrowRowDataReader(root, type);
            op.exportState(root, chunk -> {
                reader.load();
                try {
                    List<Map<Long, List<Tuple2<RowData, Boolean>>>> caches = List.of(new LinkedHashMap<>(), new LinkedHashMap<>());
                    for (int i = 0; i < reader.rowCount(); i++) {
                        RowData row = reader.readBinary(i);
                        byte part = row.getByte(1);
                        if (part == KEY) {
                            write(states, caches);
                            BinaryRowData key = FlinkStates.exportedKey(row, keyArity);
                            keyed.setCurrentKey(key);
                            keys.add(key);
                            if (!row.isNullAt(1 + 4)) {
                                states.leftTimer.update(row.getLong(1 + 4));
                            }
                            if (!row.isNullAt(1 + 5)) {
                                states.rightTimer.update(row.getLong(1 + 5));
                            }
                        } else if (part == LEFT || part == RIGHT) {
                            boolean left = part == LEFT;
                            RowData.FieldGetter[] fields = left ? leftFields : rightFields;
                            GenericRowData value = new GenericRowData(fields.length);
                            for (int f = 0; f < fields.length; f++) {
                                value.setField(f, fields[f].getFieldOrNull(row));
                            }
                            BinaryRowData stored = (left ? leftSerializer : rightSerializer).toBinaryRow(value).copy();
                            caches.get(left ? 0 : 1).computeIfAbsent(row.getLong(1 + 1), t -> new ArrayList<>(1))
                                    .add(Tuple2.of(stored, row.getBoolean(1 + 2)));
                        } else if (part == TIMER) {
                            timers.add(new long[] {row.getLong(1 + 3), keys.size() - 1, row.getLong(1 + 1)});
                        } else {
                            throw new IllegalStateException("an export row of part " + part);
                        }
                    }
                    write(states, caches);
                } catch (Exception e) {
                    throw new IllegalStateException("writing Flink's interval join state of a key: " + e, e);
                }
            });
            // Registered in the order of Ferry's timer heap: a heap's array inserted in order is
            // the same heap, which Flink's savepoint then holds.
            timers.sort(Comparator.comparingLong(t -> t[0]));
            InternalTimerService<VoidNamespace> service = timers();
            for (long[] t : timers) {
                BinaryRowData key = (BinaryRowData) keys.get((int) t[1]);
                keyed.setCurrentKey(key);
                if (rowTime) {
                    service.registerEventTimeTimer(VoidNamespace.INSTANCE, t[2]);
                } else {
                    service.registerProcessingTimeTimer(VoidNamespace.INSTANCE, t[2]);
                }
                exportedTimers.add(Tuple2.of(key, t[2]));
            }
        }
    }

    /** Writes the current key's caches, in bucket order, and empties them. */
    private static void write(States states, List<Map<Long, List<Tuple2<RowData, Boolean>>>> caches) throws Exception {
        for (int side = 0; side < 2; side++) {
            MapState<Long, List<Tuple2<RowData, Boolean>>> state = side == 0 ? states.leftCache : states.rightCache;
            for (Map.Entry<Long, List<Tuple2<RowData, Boolean>>> e : caches.get(side).entrySet()) {
                state.put(e.getKey(), e.getValue());
            }
            caches.get(side).clear();
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public void clear(KeyedStateBackend<?> backend, List<RowData> keys) throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        States states = new States(keyed);
        try (FlinkStates.CurrentKey kept = FlinkStates.keepCurrentKey(keyed)) {
            for (RowData key : keys) {
                keyed.setCurrentKey(key);
                states.clear();
            }
            if (exportedTimers != null && !exportedTimers.isEmpty()) {
                InternalTimerService<VoidNamespace> service = timers();
                for (Tuple2<BinaryRowData, Long> t : exportedTimers) {
                    keyed.setCurrentKey(t.f0);
                    if (rowTime) {
                        service.deleteEventTimeTimer(VoidNamespace.INSTANCE, t.f1);
                    } else {
                        service.deleteProcessingTimeTimer(VoidNamespace.INSTANCE, t.f1);
                    }
                }
            }
            exportedTimers = null;
        }
    }

    private static BinaryRowData binary(RowDataSerializer serializer, RowData key) {
        return serializer.toBinaryRow(key).copy();
    }

    /** Getters of {@code type}'s fields (as they cross into Go) at positions from {@code at}. */
    private static RowData.FieldGetter[] getters(RowType type, int at) {
        RowData.FieldGetter[] g = new RowData.FieldGetter[type.getFieldCount()];
        for (int i = 0; i < g.length; i++) {
            g[i] = RowData.createFieldGetter(ArrowTypes.carried(type.getTypeAt(i)), at + i);
        }
        return g;
    }
}
