package io.ferrystream.ferry.kinds.topn;

import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.FlinkState;
import io.ferrystream.ferry.operators.FlinkStates;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.typeutils.runtime.TupleSerializer;
import org.apache.flink.configuration.Configuration;
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
import org.apache.flink.table.planner.codegen.sort.ComparatorCodeGenerator;
import org.apache.flink.table.planner.plan.nodes.exec.spec.SortSpec;
import org.apache.flink.table.runtime.generated.GeneratedRecordComparator;
import org.apache.flink.table.runtime.operators.rank.ComparableRecordComparator;
import org.apache.flink.table.runtime.typeutils.InternalSerializers;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.runtime.typeutils.SortedMapSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;
import org.apache.flink.types.RowKind;

import org.apache.arrow.memory.BufferAllocator;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The keyed state Flink's own Top-N functions keep where Ferry's native Top-N ({@value
 * TopNSpec#KIND}) runs (docs/state.md, "The Top-N"): the states of the function {@code StreamExecRank}
 * picks, of the same names and serializers with and without async state (the async-state twins
 * register state v2 descriptors of the same names):
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
 *   <li>{@link TopNSpec.Function#RETRACTABLE_TOP_N} ({@code RetractableTopNFunction}): the {@code
 *       MapState} {@value #RETRACT_DATA_STATE}, sort key to the list of every row of the key with
 *       that sort key (as for the append-only top-N), and the {@code ValueState} {@value
 *       #SORTED_MAP_STATE}, a {@code SortedMap} from sort key to the length of that list ({@code
 *       SortedMapTypeInfo} with the {@code ComparableRecordComparator} {@code StreamExecRank}
 *       builds, whose equality decides the serializers' compatibility). Rows cross as for the
 *       append-only top-N; Go derives each count from its list, so a key whose counts and lists
 *       disagree (a retraction of a row Flink's lenient function did not hold went before) is
 *       refused. Export writes both states: the lists, and each sort key's list length.
 *   <li>{@link TopNSpec.Function#UPDATABLE_TOP_N} ({@code UpdatableTopNFunction}): the {@code
 *       MapState} {@value #UPDATE_STATE} from the row key (the row key selector's projection of the
 *       row) to the row and its inner rank (its place among the rows of its sort key, from 1),
 *       written from Flink's cache at every snapshot. Import rows: the row's fields, then the inner
 *       rank (INT NOT NULL); Go checks that each sort key's inner ranks are 1 to n. Export rows:
 *       the key's bytes, the row's fields, the inner rank; each is put under its row key.
 * </ul>
 *
 * <p>Stored rows are written in {@code RowDataSerializer}'s binary form (a row as it arrives
 * over the network from an operator emitting non-binary rows). Flink's retracting Top-N finds the
 * row a retraction names by its bytes when both are binary, so after a switch to Flink a
 * retraction arriving in another binary form (a NULL DECIMAL wider than 18 digits or a NULL
 * TIMESTAMP with more than 3 fractional digits, written by generated code with its reserved
 * space) would not find the row Ferry wrote.
 *
 * <p>Idle-state TTL is carried for the first-N function only: the others run natively only
 * without it ({@code TopNKind}). A state holding what Flink never writes (an empty or NULL list, a
 * row under another sort key or row key than its own, a counter or count below 1) is refused with
 * an {@link IllegalStateException} naming the state, and so is an export that breaks the
 * contract's order.
 */
public final class FlinkTopNState implements FlinkState {
    private static final long serialVersionUID = 1L;

    /** {@code AppendOnlyTopNFunction}'s (and {@code AsyncStateAppendOnlyTopNFunction}'s) state. */
    public static final String DATA_STATE = "data-state-with-append";
    /** {@code FastTop1Function}'s (and {@code AsyncStateFastTop1Function}'s) state. */
    public static final String TOP1_STATE = "Top1-Rank-State";
    /** {@code AppendOnlyFirstNFunction}'s state. */
    public static final String COUNTER_STATE = "counterState";
    /** {@code RetractableTopNFunction}'s rows per sort key. */
    public static final String RETRACT_DATA_STATE = "data-state";
    /** {@code UpdatableTopNFunction}'s rows with their inner ranks, by row key. */
    public static final String UPDATE_STATE = "data-state-with-update";
    /** {@code RetractableTopNFunction}'s counts per sort key. */
    public static final String SORTED_MAP_STATE = "sorted-map";


    /** The input row as Flink's serializer writes it. */
    private final RowType inputType;
    private final int[] keys;
    private final TopNSpec.Function function;
    private final int[] sortFields;
    /** The updatable Top-N's row key (the input's upsert key), input columns; empty otherwise. */
    private final int[] rowKeys;
    private final boolean ttl;
    /** The sorted map's comparator, as {@code StreamExecRank} builds it; retracting Top-N only. */
    private final @Nullable ComparableRecordComparator comparator;

    /**
     * The state of {@link TopNSpec.Function#APPEND_ONLY_TOP_N}, {@link
     * TopNSpec.Function#FAST_TOP1} or {@link TopNSpec.Function#APPEND_ONLY_FIRST_N}: {@link
     * #FlinkTopNState(RowType, int[], TopNSpec.Function, int[], boolean[], boolean[], int[],
     * boolean)} without the sort directions and row keys, which only the retracting and the
     * updatable Top-N's states need.
     *
     * @throws IllegalArgumentException for {@link TopNSpec.Function#RETRACTABLE_TOP_N} and {@link
     *     TopNSpec.Function#UPDATABLE_TOP_N}
     */
    public FlinkTopNState(RowType inputType, int[] keys, TopNSpec.Function function, int[] sortFields, boolean ttl) {
        this(inputType, keys, function, sortFields, null, null, new int[0], ttl);
    }

    /**
     * The state of the function {@code StreamExecRank} runs for the node; what the planner's kind
     * passes to {@code importingFlinkState} for every native Top-N. Call it where the planner is
     * (the retracting Top-N's comparator is generated here, as {@code StreamExecRank} generates
     * it).
     *
     * @param inputType the node's input row type, exactly as Flink's exec node has it (Flink's
     *     serializers are checked against the savepoint's: a processing-time attribute keeps its
     *     kind)
     * @param keys the partition keys, input columns (the state key)
     * @param function the function the spec runs ({@link TopNSpec#function()})
     * @param sortFields the sort fields, input columns, in order ({@link TopNSpec#sortFields()}):
     *     the sort key the map states map from
     * @param ascending per sort field: ascending (the exec node's SortSpec); needed for {@link
     *     TopNSpec.Function#RETRACTABLE_TOP_N} only, null allowed otherwise
     * @param nullsLast per sort field: NULLs last; as {@code ascending}
     * @param rowKeys {@link TopNSpec.Function#UPDATABLE_TOP_N}'s row key ({@link TopNSpec#rowKeys()},
     *     {@code UpdateFastStrategy#getPrimaryKeys()}), input columns; empty for the others
     * @param ttl whether idle-state TTL is on ({@link TopNSpec#stateTtlMs()} {@code > 0}); only
     *     {@link TopNSpec.Function#APPEND_ONLY_FIRST_N} runs natively with it
     * @throws IllegalArgumentException with TTL for another function, without sort fields for a
     *     map state, without directions for the retracting Top-N, without row keys for the
     *     updatable one
     */
    public FlinkTopNState(RowType inputType, int[] keys, TopNSpec.Function function, int[] sortFields,
            @Nullable boolean[] ascending, @Nullable boolean[] nullsLast, int[] rowKeys, boolean ttl) {
        if ((function == TopNSpec.Function.UPDATABLE_TOP_N) != (rowKeys.length > 0)) {
            throw new IllegalArgumentException("row keys are " + TopNSpec.Function.UPDATABLE_TOP_N.json() + "'s, and it needs them, not "
                    + function.json() + " with " + rowKeys.length);
        }
        if (ttl && function != TopNSpec.Function.APPEND_ONLY_FIRST_N) {
            throw new IllegalArgumentException("idle-state TTL is carried for " + TopNSpec.Function.APPEND_ONLY_FIRST_N.json()
                    + " only, not for " + function.json() + " (it runs natively only without TTL)");
        }
        if (function != TopNSpec.Function.APPEND_ONLY_FIRST_N && sortFields.length == 0) {
            throw new IllegalArgumentException(function.json() + " needs its sort fields");
        }
        this.inputType = inputType;
        this.keys = keys.clone();
        this.function = function;
        this.sortFields = sortFields.clone();
        this.rowKeys = rowKeys.clone();
        this.ttl = ttl;
        if (function == TopNSpec.Function.RETRACTABLE_TOP_N) {
            if (ascending == null || nullsLast == null || ascending.length != sortFields.length
                    || nullsLast.length != sortFields.length) {
                throw new IllegalArgumentException(function.json() + "'s state needs one direction and one NULL order per sort field");
            }
            this.comparator = comparator(inputType, sortFields, ascending, nullsLast);
        } else {
            this.comparator = null;
        }
    }

    /**
     * The {@code ComparableRecordComparator} of {@code StreamExecRank#translateToPlanInternal}
     * for the retracting Top-N: the comparator generated over the sort key's row, the sort key's
     * positions, the sort fields' types, directions and NULL orders (what its equality compares).
     */
    static ComparableRecordComparator comparator(RowType inputType, int[] sortFields, boolean[] ascending, boolean[] nullsLast) {
        int n = sortFields.length;
        LogicalType[] types = new LogicalType[n];
        int[] positions = new int[n];
        SortSpec.SortSpecBuilder builder = SortSpec.builder();
        for (int i = 0; i < n; i++) {
            types[i] = inputType.getTypeAt(sortFields[i]);
            positions[i] = i;
            builder.addField(i, ascending[i], nullsLast[i]);
        }
        ClassLoader cl = Thread.currentThread().getContextClassLoader();
        GeneratedRecordComparator generated = ComparatorCodeGenerator.gen(new Configuration(),
                cl == null ? FlinkTopNState.class.getClassLoader() : cl, "StreamExecSortComparator", RowType.of(types), builder.build());
        return new ComparableRecordComparator(generated, positions, types, ascending.clone(), nullsLast.clone());
    }

    @Override
    public List<String> names() {
        return function == TopNSpec.Function.RETRACTABLE_TOP_N ? List.of(RETRACT_DATA_STATE, SORTED_MAP_STATE) : List.of(name());
    }

    private String name() {
        return switch (function) {
            case APPEND_ONLY_TOP_N -> DATA_STATE;
            case FAST_TOP1 -> TOP1_STATE;
            case APPEND_ONLY_FIRST_N -> COUNTER_STATE;
            case RETRACTABLE_TOP_N -> RETRACT_DATA_STATE;
            case UPDATABLE_TOP_N -> UPDATE_STATE;
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

    /** First-N: the key fields, the counter, [the last write]. Otherwise the row's fields, [the inner rank]. */
    RowType importType() {
        List<LogicalType> types = new ArrayList<>();
        if (counter()) {
            for (int k : keys) {
                types.add(carried().getTypeAt(k));
            }
        }
        return withValue(types);
    }

    private boolean updatable() {
        return function == TopNSpec.Function.UPDATABLE_TOP_N;
    }

    /** The key's BinaryRowData bytes, then the import row after the key fields (first-N) or the row's fields. */
    RowType exportType() {
        List<LogicalType> types = new ArrayList<>();
        types.add(new VarBinaryType(false, VarBinaryType.MAX_LENGTH));
        return withValue(types);
    }

    /** {@code types}, then first-N's counter [and last write], or the row's fields [and inner rank]. */
    private RowType withValue(List<LogicalType> types) {
        if (counter()) {
            types.add(new IntType(false));
            if (ttl) {
                types.add(new BigIntType(false));
            }
        } else {
            types.addAll(carried().getChildren());
            if (updatable()) {
                types.add(new IntType(false));
            }
        }
        return RowType.of(types.toArray(new LogicalType[0]));
    }

    /** The row key's row type: the row-key columns' types, as {@code KeySelectorUtil} projects them. */
    RowType rowKeyType() {
        LogicalType[] types = new LogicalType[rowKeys.length];
        for (int i = 0; i < rowKeys.length; i++) {
            types[i] = inputType.getTypeAt(rowKeys[i]);
        }
        return RowType.of(types);
    }

    /** The sort key's row type: the sort fields' types, as {@code KeySelectorUtil} projects them. */
    RowType sortKeyType() {
        LogicalType[] types = new LogicalType[sortFields.length];
        for (int i = 0; i < sortFields.length; i++) {
            types[i] = inputType.getTypeAt(sortFields[i]);
        }
        return RowType.of(types);
    }

    /** Whether the function's state maps sort keys to lists of rows. */
    private boolean lists() {
        return function == TopNSpec.Function.APPEND_ONLY_TOP_N || function == TopNSpec.Function.RETRACTABLE_TOP_N;
    }

    @Override
    @SuppressWarnings("unchecked")
    public long importInto(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator) throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        States states = new States(keyed);
        List<RowData> all = FlinkStates.keys(keyed, names());
        RowType type = importType();
        RowData.FieldGetter[] fields = new RowData.FieldGetter[counter() ? keys.length : inputType.getFieldCount()];
        for (int f = 0; f < fields.length; f++) {
            fields[f] = RowData.createFieldGetter(type.getTypeAt(f), f);
        }
        Projection sortKeys = lists() ? new Projection() : null;
        Projection rowKeyProjection = updatable() ? new Projection(rowKeys) : null;
        FlinkStates.importKeys(op, keyed, all, type, allocator, (key, rows) -> {
            switch (function) {
                case APPEND_ONLY_TOP_N, RETRACTABLE_TOP_N -> {
                    String data = name();
                    Map<BinaryRowData, Long> counts = function == TopNSpec.Function.RETRACTABLE_TOP_N ? counts(states) : null;
                    for (Map.Entry<RowData, List<RowData>> e : states.map.entries()) {
                        List<RowData> list = e.getValue();
                        if (list == null || list.isEmpty()) {
                            throw new IllegalStateException("Flink's " + data + " holds " + (list == null ? "no" : "an empty")
                                    + " list for a sort key, which Flink never writes");
                        }
                        BinaryRowData sortKey = sortKeys.binary(e.getKey());
                        if (counts != null) {
                            Long count = counts.remove(sortKey);
                            if (count == null || count != list.size()) {
                                throw new IllegalStateException(disagree((count == null ? "no count" : count + " rows") + " of a sort key in "
                                        + SORTED_MAP_STATE + ", " + list.size() + " in " + data));
                            }
                        }
                        for (RowData row : list) {
                            if (row == null) {
                                throw new IllegalStateException("Flink's " + data + " holds a NULL row, which Flink never writes");
                            }
                            if (!sortKey.equals(sortKeys.of(row))) {
                                throw new IllegalStateException("Flink's " + data + " holds a row under a sort key other than"
                                        + " its own, which Flink never writes");
                            }
                            rows.add(fieldsOf(row, fields));
                        }
                    }
                    if (counts != null && !counts.isEmpty()) {
                        throw new IllegalStateException(disagree(counts.size() + " sort keys with a count in " + SORTED_MAP_STATE
                                + " and no rows in " + data));
                    }
                }
                case UPDATABLE_TOP_N -> {
                    for (Map.Entry<RowData, Tuple2<RowData, Integer>> e : states.updates.entries()) {
                        Tuple2<RowData, Integer> v = e.getValue();
                        if (v == null || v.f0 == null || v.f1 == null) {
                            throw new IllegalStateException("Flink's " + UPDATE_STATE + " holds " + v
                                    + " for a row key, which Flink never writes");
                        }
                        if (!rowKeyProjection.binary(e.getKey()).equals(rowKeyProjection.of(v.f0))) {
                            throw new IllegalStateException("Flink's " + UPDATE_STATE + " holds a row under a row key other than"
                                    + " its own, which Flink never writes");
                        }
                        GenericRowData row = new GenericRowData(type.getFieldCount());
                        for (int f = 0; f < fields.length; f++) {
                            row.setField(f, fields[f].getFieldOrNull(v.f0));
                        }
                        row.setField(fields.length, v.f1);
                        rows.add(row);
                    }
                }
                case FAST_TOP1 -> {
                    RowData row = (RowData) states.value.value();
                    if (row == null) { // listed by getKeys, gone once read (expired)
                        break;
                    }
                    rows.add(fieldsOf(row, fields));
                }
                case APPEND_ONLY_FIRST_N -> {
                    Object value = states.value.value();
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
            states.clear();
        });
        return all.size();
    }

    /** The retracting Top-N's counts of the current key, by the sort key's bytes. */
    private Map<BinaryRowData, Long> counts(States states) throws Exception {
        Map<BinaryRowData, Long> counts = new HashMap<>();
        SortedMap<RowData, Long> sorted = states.sorted.value();
        if (sorted != null) {
            Projection sortKeys = new Projection();
            for (Map.Entry<RowData, Long> e : sorted.entrySet()) {
                if (e.getValue() == null || e.getValue() < 1) {
                    throw new IllegalStateException("Flink's " + SORTED_MAP_STATE + " holds a count of " + e.getValue()
                            + " for a sort key, which Flink never writes");
                }
                counts.put(sortKeys.binary(e.getKey()), e.getValue());
            }
        }
        return counts;
    }

    private static String disagree(String what) {
        return "Flink's " + SORTED_MAP_STATE + " and " + RETRACT_DATA_STATE + " disagree for a key (" + what + "): stale state,"
                + " left by a retraction of a row Flink's function did not hold; not carried";
    }

    private static GenericRowData fieldsOf(RowData row, RowData.FieldGetter[] fields) {
        GenericRowData out = new GenericRowData(fields.length);
        for (int f = 0; f < fields.length; f++) {
            out.setField(f, fields[f].getFieldOrNull(row));
        }
        return out;
    }

    /**
     * Sort keys (and the updatable Top-N's row keys) as Flink's key selectors project them ({@code
     * KeySelectorUtil}'s generated projection into a BinaryRowData): byte for byte, since Flink's
     * map states and its buffers' hash maps find their entries by the key's bytes. A NULL DECIMAL or TIMESTAMP too wide to be compact keeps its reserved
     * variable-length space, as the generated code writes it ({@code
     * CodeGenUtils#binaryWriterWriteNull}), unlike {@code RowDataSerializer#toBinaryRow}.
     */
    private final class Projection {
        final LogicalType[] types;
        /** The projected fields of an input row. */
        final RowData.FieldGetter[] ofRow;
        /** The fields of a projected key. */
        final RowData.FieldGetter[] ofKey;
        final TypeSerializer<?>[] serializers;

        /** The projection of the sort fields. */
        Projection() {
            this(sortFields);
        }

        Projection(int[] fields) {
            int n = fields.length;
            types = new LogicalType[n];
            ofRow = new RowData.FieldGetter[n];
            ofKey = new RowData.FieldGetter[n];
            serializers = new TypeSerializer<?>[n];
            for (int i = 0; i < n; i++) {
                types[i] = inputType.getTypeAt(fields[i]);
                ofRow[i] = RowData.createFieldGetter(types[i], fields[i]);
                ofKey[i] = RowData.createFieldGetter(types[i], i);
                serializers[i] = InternalSerializers.create(types[i]);
            }
        }

        /** The projection of an input row, as Flink's projection writes it (kind +I). */
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
        return new Projection().of(row);
    }


    @Override
    @SuppressWarnings("unchecked")
    public void exportFrom(NativeOperator op, KeyedStateBackend<?> backend, BufferAllocator allocator, List<RowData> written)
            throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        States states = new States(keyed);
        RowType type = exportType();
        int valueFields = type.getFieldCount() - 1 - (updatable() ? 1 : 0);
        RowData.FieldGetter[] fields = new RowData.FieldGetter[valueFields];
        for (int f = 0; f < fields.length; f++) {
            fields[f] = RowData.createFieldGetter(type.getTypeAt(1 + f), 1 + f);
        }
        RowDataSerializer rows = new RowDataSerializer(inputType);
        Lists lists = lists() ? new Lists(keyed, states, new Projection()) : null;
        Projection rowKeyProjection = updatable() ? new Projection(rowKeys) : null;
        int innerRank = 1 + valueFields;
        BinaryRowData[] last = new BinaryRowData[1];
        Set<BinaryRowData> rowKeysOfKey = new HashSet<>();
        Set<BinaryRowData> seen = new HashSet<>();
        try (FlinkStates.CurrentKey kept = FlinkStates.keepCurrentKey(keyed)) {
            FlinkStates.exportRows(op, type, allocator, false, (row, root, i) -> {
                BinaryRowData key = FlinkStates.exportedKey(row, keys.length);
                if (lists != null && lists.continues(key)) {
                    lists.add(stored(rows, fields, row));
                    return;
                }
                if (rowKeyProjection != null && key.equals(last[0])) { // the updatable Top-N: the key's next row
                    update(states, rowKeyProjection, rowKeysOfKey, stored(rows, fields, row), row.getInt(innerRank));
                    return;
                }
                if (!seen.add(key)) {
                    throw new IllegalStateException("the native Top-N exported the rows of a key apart, not consecutively");
                }
                written.add(key);
                try {
                    if (lists != null) {
                        lists.start(key, stored(rows, fields, row));
                        return;
                    }
                    keyed.setCurrentKey(key);
                    if (rowKeyProjection != null) {
                        last[0] = key;
                        rowKeysOfKey.clear();
                        update(states, rowKeyProjection, rowKeysOfKey, stored(rows, fields, row), row.getInt(innerRank));
                    } else if (function == TopNSpec.Function.FAST_TOP1) {
                        states.value.update(stored(rows, fields, row));
                    } else {
                        Integer count = row.getInt(1);
                        states.value.update(ttl ? new TtlValue<>(count, row.getLong(2)) : count);
                    }
                } catch (Exception e) {
                    throw new IllegalStateException("writing Flink's " + name() + " of a key: " + e, e);
                }
            });
            if (lists != null) {
                lists.flush();
            }
        }
    }

    /** Writes one row of the current key into Flink's {@code data-state-with-update}. */
    private static void update(States states, Projection rowKeyProjection, Set<BinaryRowData> rowKeysOfKey, BinaryRowData row,
            int innerRank) {
        BinaryRowData rowKey = rowKeyProjection.of(row);
        if (!rowKeysOfKey.add(rowKey)) {
            throw new IllegalStateException("the native Top-N exported two rows of one row key of a key");
        }
        try {
            states.updates.put(rowKey, Tuple2.of(row, innerRank));
        } catch (Exception e) {
            throw new IllegalStateException("writing Flink's " + UPDATE_STATE + " of a key: " + e, e);
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
     * sort keys are byte-equal form one list; a key's lists are written when the next key begins,
     * for the retracting Top-N with its sorted map of their lengths.
     */
    private final class Lists {
        private final KeyedStateBackend<RowData> keyed;
        private final States states;
        private final Projection sortKeys;
        private BinaryRowData key;
        private BinaryRowData sortKey;
        private List<RowData> list;
        /** The current key's lists, in buffer order. */
        private final Map<BinaryRowData, List<RowData>> ofKey = new LinkedHashMap<>();

        Lists(KeyedStateBackend<RowData> keyed, States states, Projection sortKeys) {
            this.keyed = keyed;
            this.states = states;
            this.sortKeys = sortKeys;
        }

        /** Whether a row of {@code k} continues the current key. */
        boolean continues(BinaryRowData k) {
            return key != null && key.equals(k);
        }

        void start(BinaryRowData k, BinaryRowData row) throws Exception {
            flush();
            key = k;
            add(row);
        }

        void add(BinaryRowData row) {
            BinaryRowData s = sortKeys.of(row);
            if (s.equals(sortKey)) {
                list.add(row);
                return;
            }
            if (ofKey.containsKey(s)) {
                throw new IllegalStateException("the native Top-N exported the rows of one sort key of a key apart,"
                        + " not consecutively");
            }
            sortKey = s;
            list = new ArrayList<>();
            list.add(row);
            ofKey.put(s, list);
        }

        void flush() throws Exception {
            if (key == null) {
                return;
            }
            keyed.setCurrentKey(key);
            try {
                SortedMap<RowData, Long> sorted = states.sorted != null ? new TreeMap<>(comparator) : null;
                for (Map.Entry<BinaryRowData, List<RowData>> e : ofKey.entrySet()) {
                    states.map.put(e.getKey(), e.getValue());
                    if (sorted != null) {
                        sorted.put(e.getKey(), (long) e.getValue().size());
                    }
                }
                if (sorted != null) {
                    states.sorted.update(sorted);
                }
            } catch (Exception e) {
                throw new IllegalStateException("writing Flink's " + String.join(", ", names()) + " of a key: " + e, e);
            }
            ofKey.clear();
            key = null;
            sortKey = null;
            list = null;
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public void clear(KeyedStateBackend<?> backend, List<RowData> written) throws Exception {
        KeyedStateBackend<RowData> keyed = (KeyedStateBackend<RowData>) backend;
        States states = new States(keyed);
        FlinkStates.forEachKey(keyed, written, key -> states.clear());
    }

    /**
     * Flink's states of the function, with the serializers Flink's function writes them with
     * ({@code AppendOnlyTopNFunction#open} and {@code RetractableTopNFunction#open}: the sort key
     * selector's produced type and a {@code ListTypeInfo} of the input, the latter's sorted map a
     * {@code SortedMapTypeInfo} of the sort key and {@code Long} under the comparator; {@code
     * FastTop1Function#open}: the input's; {@code AppendOnlyFirstNFunction#open}: {@code
     * Types.INT}, with TTL wrapped in Flink's {@code TtlSerializer}; {@code
     * UpdatableTopNFunction#open}: the row key selector's produced type and a {@code
     * TupleTypeInfo} of the input and {@code Types.INT}).
     */
    private final class States {
        /** The map of sort keys to lists (append-only and retracting Top-N). */
        final MapState<RowData, List<RowData>> map;
        /** The row (top-1) or counter (first-N). */
        final ValueState<Object> value;
        /** The sorted map of counts (retracting Top-N). */
        final ValueState<SortedMap<RowData, Long>> sorted;
        /** Rows and inner ranks by row key (updatable Top-N). */
        final MapState<RowData, Tuple2<RowData, Integer>> updates;

        @SuppressWarnings({"unchecked", "rawtypes"})
        States(KeyedStateBackend<RowData> keyed) throws Exception {
            MapState<RowData, List<RowData>> m = null;
            ValueState<Object> v = null;
            ValueState<SortedMap<RowData, Long>> s = null;
            MapState<RowData, Tuple2<RowData, Integer>> u = null;
            switch (function) {
                case UPDATABLE_TOP_N -> {
                    TypeSerializer<Tuple2<RowData, Integer>> tuple = new TupleSerializer<>((Class<Tuple2<RowData, Integer>>) (Class) Tuple2.class,
                            new TypeSerializer[] {new RowDataSerializer(inputType), IntSerializer.INSTANCE});
                    u = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                            new MapStateDescriptor<>(UPDATE_STATE, new RowDataSerializer(rowKeyType()), tuple));
                }
                case APPEND_ONLY_TOP_N, RETRACTABLE_TOP_N -> {
                    m = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                            new MapStateDescriptor<>(name(), new RowDataSerializer(sortKeyType()),
                                    new ListSerializer<>(new RowDataSerializer(inputType))));
                    if (function == TopNSpec.Function.RETRACTABLE_TOP_N) {
                        TypeSerializer<SortedMap<RowData, Long>> serializer = new SortedMapSerializer(comparator,
                                new RowDataSerializer(sortKeyType()), LongSerializer.INSTANCE);
                        s = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                                new ValueStateDescriptor<>(SORTED_MAP_STATE, serializer));
                    }
                }
                case FAST_TOP1 -> v = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                        new ValueStateDescriptor<Object>(TOP1_STATE, (TypeSerializer) new RowDataSerializer(inputType)));
                case APPEND_ONLY_FIRST_N -> {
                    TypeSerializer<Object> serializer = ttl
                            ? new TtlStateFactory.TtlSerializer(LongSerializer.INSTANCE, IntSerializer.INSTANCE)
                            : (TypeSerializer) IntSerializer.INSTANCE;
                    v = keyed.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                            new ValueStateDescriptor<>(COUNTER_STATE, serializer));
                }
            }
            map = m;
            value = v;
            sorted = s;
            updates = u;
        }

        /** Clears the current key's states. */
        void clear() {
            if (map != null) {
                map.clear();
            }
            if (value != null) {
                value.clear();
            }
            if (sorted != null) {
                sorted.clear();
            }
            if (updates != null) {
                updates.clear();
            }
        }
    }
}
