package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.StateObjectCollection;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.operators.aggregate.GroupAggFunction;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.InstantiationUtil;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * Shared by {@link RescaleTest} and {@link SnapshotRestoreTest}: plans a group aggregate over a
 * changelog source of {@code (k BIGINT, v BIGINT, i INT, d DOUBLE)} with Ferry on or off, pulls
 * the real operator and state key selector out of the StreamGraph, runs it in Flink's keyed
 * harness at any (max parallelism, parallelism, subtask), generates retracting input, and reads
 * the raw keyed state of snapshots.
 */
final class RescaleSupport {
    private RescaleSupport() {}

    static final int MAX_PARALLELISM = 128;

    /** Every column is used by each query, so the aggregate's input is the source row itself. */
    static final String AGGS =
            "COUNT(*), COUNT(v), SUM(v), MIN(v), MAX(v), AVG(v), SUM(i), MIN(i), MAX(i), AVG(i),"
                    + " MIN(d), MAX(d), SUM(d), AVG(d)";

    /** A planned group-aggregate operator with its state key selector. */
    record Planned(
            OneInputStreamOperator<RowData, RowData> operator,
            KeySelector<RowData, RowData> keySelector,
            TypeInformation<RowData> keyType,
            RowType outputType) {}

    /** Plans {@code SELECT k, <aggs> FROM T GROUP BY k} over a changelog source (all row kinds). */
    static Planned plan(String aggs, boolean ferry, int batchSize) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, batchSize);
        tEnv.getConfig().set(FerryOptions.BATCH_MAX_DELAY, Duration.ofHours(1));
        Ferry.install(tEnv);
        DataStream<Row> source =
                env.fromData(
                        List.of(new Row(4)),
                        Types.ROW_NAMED(new String[] {"k", "v", "i", "d"}, Types.LONG, Types.LONG, Types.INT, Types.DOUBLE));
        Table t = tEnv.fromChangelogStream(source, Schema.newBuilder().build(), ChangelogMode.all());
        tEnv.createTemporaryView("T", t);
        tEnv.toChangelogStream(tEnv.sqlQuery("SELECT k, " + aggs + " FROM T GROUP BY k")).print();
        StreamGraph graph = env.getStreamGraph();
        for (StreamNode node : graph.getStreamNodes()) {
            StreamOperatorFactory<?> factory = node.getOperatorFactory();
            if (!(factory instanceof SimpleOperatorFactory)) {
                continue;
            }
            Object op = ((SimpleOperatorFactory<?>) factory).getOperator();
            boolean stock = op instanceof KeyedProcessOperator
                    && ((KeyedProcessOperator<?, ?, ?>) op).getUserFunction() instanceof GroupAggFunction;
            if (stock || op instanceof FerryGroupAggregateOperator) {
                if (ferry != op instanceof FerryGroupAggregateOperator) {
                    throw new AssertionError("ferry=" + ferry + " but planned " + op);
                }
                @SuppressWarnings("unchecked")
                KeySelector<RowData, RowData> selector = (KeySelector<RowData, RowData>) node.getStatePartitioners()[0];
                @SuppressWarnings("unchecked")
                OneInputStreamOperator<RowData, RowData> operator = (OneInputStreamOperator<RowData, RowData>) op;
                Field fieldTypes = RowDataSerializer.class.getDeclaredField("types");
                fieldTypes.setAccessible(true);
                RowType outputType = RowType.of((LogicalType[]) fieldTypes.get(node.getTypeSerializerOut()));
                return new Planned(operator, selector, ((RowDataKeySelector) selector).getProducedType(), outputType);
            }
        }
        throw new AssertionError("no group aggregate in the plan");
    }

    /**
     * A retracting changelog over {@code keys} BIGINT keys and the NULL key: inserts, updates
     * (-U of an earlier row then +U), deletes of earlier rows (some keys are retracted to empty,
     * so their state goes away), and now and then a retraction of a row never inserted. Stateful,
     * so a later call continues the same stream (its retractions refer to earlier rows).
     */
    static final class Changelog {
        final Random r;
        final int keys;
        final Map<Long, List<GenericRowData>> live = new HashMap<>();
        private final Long nullKey = Long.MIN_VALUE; // map key of the NULL group key

        Changelog(long seed, int keys) {
            this.r = new Random(seed);
            this.keys = keys;
        }

        Long key(int k) {
            return k == keys ? null : (long) k * 1_000_000_007L - 37;
        }

        /** The key universe, the NULL key included. */
        List<Long> allKeys() {
            List<Long> all = new ArrayList<>();
            for (int k = 0; k <= keys; k++) {
                all.add(key(k));
            }
            return all;
        }

        GenericRowData fresh(Long k, RowKind kind) {
            GenericRowData row = new GenericRowData(4);
            row.setField(0, k);
            row.setField(1, r.nextInt(9) == 0 ? null : (long) (r.nextInt(2001) - 1000) * (r.nextInt(50) == 0 ? 1_000_000_000_000L : 1));
            row.setField(2, r.nextInt(9) == 0 ? null : r.nextInt(201) - 100);
            row.setField(3, r.nextInt(9) == 0 ? null : (r.nextInt(4001) - 2000) * 0.25);
            row.setRowKind(kind);
            return row;
        }

        static GenericRowData as(GenericRowData row, RowKind kind) {
            GenericRowData c = new GenericRowData(row.getArity());
            for (int i = 0; i < row.getArity(); i++) {
                c.setField(i, row.getField(i));
            }
            c.setRowKind(kind);
            return c;
        }

        List<GenericRowData> sent(Long k) {
            return live.computeIfAbsent(k == null ? nullKey : k, x -> new ArrayList<>());
        }

        void add(List<RowData> out, GenericRowData row) {
            out.add(row);
            if (row.getRowKind() == RowKind.INSERT || row.getRowKind() == RowKind.UPDATE_AFTER) {
                sent((Long) row.getField(0)).add(row);
            }
        }

        List<RowData> next(int n) {
            List<RowData> out = new ArrayList<>();
            while (out.size() < n) {
                Long k = key(r.nextInt(keys + 1));
                List<GenericRowData> s = sent(k);
                int x = r.nextInt(20);
                if (x < 3 && !s.isEmpty()) { // update: -U of an earlier row, +U of a new one
                    out.add(as(s.remove(r.nextInt(s.size())), RowKind.UPDATE_BEFORE));
                    add(out, fresh(k, RowKind.UPDATE_AFTER));
                } else if (x < 6 && !s.isEmpty()) { // delete an earlier row
                    out.add(as(s.remove(r.nextInt(s.size())), RowKind.DELETE));
                } else if (x == 6 && !s.isEmpty() && r.nextInt(3) == 0) { // retract the key to empty
                    while (!s.isEmpty()) {
                        out.add(as(s.remove(s.size() - 1), RowKind.DELETE));
                    }
                } else if (x == 7 && r.nextInt(4) == 0) { // a retraction of a row never inserted
                    out.add(fresh(k, r.nextBoolean() ? RowKind.DELETE : RowKind.UPDATE_BEFORE));
                } else {
                    add(out, fresh(k, RowKind.INSERT));
                }
            }
            return out;
        }

        /** One INSERT per key of the universe: afterwards each key's first output tells whether it had state. */
        List<RowData> probes() {
            List<RowData> out = new ArrayList<>();
            for (Long k : allKeys()) {
                add(out, fresh(k, RowKind.INSERT));
            }
            return out;
        }
    }

    static KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> harness(
            Planned p, int maxParallelism, int parallelism, int subtask, OperatorSubtaskState state) throws Exception {
        OneInputStreamOperator<RowData, RowData> operator = InstantiationUtil.clone(p.operator());
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h =
                new KeyedOneInputStreamOperatorTestHarness<>(
                        operator, p.keySelector(), p.keyType(), maxParallelism, parallelism, subtask);
        // Room for big key groups: the default in-memory storage refuses state above 5 MiB, the
        // harness's managed memory above 1.5 MiB.
        HarnessMemory.outsideBudget(h);
        h.setCheckpointStorage(new JobManagerCheckpointStorage(256 << 20));
        h.setup(new RowDataSerializer(p.outputType()));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        return h;
    }

    /** Drains the harness's output so far as rendered rows. */
    static List<String> drain(KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h, RowType type) {
        List<String> rows = new ArrayList<>();
        for (RowData row : h.extractOutputValues()) {
            rows.add(render(row, type));
        }
        h.getOutput().clear();
        return rows;
    }

    /** A row as text, row kind first; -0.0 stays apart from 0.0. */
    static String render(RowData row, RowType type) {
        StringBuilder b = new StringBuilder(row.getRowKind().shortString()).append('[');
        for (int i = 0; i < type.getFieldCount(); i++) {
            if (i > 0) {
                b.append(", ");
            }
            Object v = RowData.createFieldGetter(type.getTypeAt(i), i).getFieldOrNull(row);
            if (v instanceof Double && (Double) v == 0 && 1 / (Double) v < 0) {
                b.append("-0.0");
            } else {
                b.append(v);
            }
        }
        return b.append(']').toString();
    }

    /** The group key of a rendered output row (its first field). */
    static String keyOf(String rendered) {
        int open = rendered.indexOf('[');
        int comma = rendered.indexOf(',', open);
        return rendered.substring(open + 1, comma < 0 ? rendered.length() - 1 : comma);
    }

    /** Output rows grouped by key, in order. */
    static Map<String, List<String>> perKey(List<String> rows) {
        Map<String, List<String>> byKey = new TreeMap<>();
        for (String r : rows) {
            byKey.computeIfAbsent(keyOf(r), k -> new ArrayList<>()).add(r);
        }
        return byKey;
    }

    /** The subtask Flink's hash exchange sends the row to. */
    static int route(Planned p, RowData row, int maxParallelism, int parallelism) throws Exception {
        return KeyGroupRangeAssignment.assignKeyToParallelOperator(p.keySelector().getKey(row), maxParallelism, parallelism);
    }

    /** The raw keyed state handles of a snapshot, each a key-group-indexed stream. */
    static List<KeyGroupsStateHandle> rawKeyed(OperatorSubtaskState state) {
        List<KeyGroupsStateHandle> handles = new ArrayList<>();
        for (KeyedStateHandle h : state.getRawKeyedState()) {
            handles.add((KeyGroupsStateHandle) h);
        }
        return handles;
    }

    /** Key group -> offset of every key group that holds raw keyed state (offset set). */
    static Map<Integer, Long> writtenKeyGroups(OperatorSubtaskState state) {
        Map<Integer, Long> kgs = new TreeMap<>();
        for (KeyGroupsStateHandle h : rawKeyed(state)) {
            for (var e : h.getGroupRangeOffsets()) {
                if (e.f1 >= 0 && kgs.put(e.f0, e.f1) != null) {
                    throw new AssertionError("key group " + e.f0 + " written twice in one snapshot");
                }
            }
        }
        return kgs;
    }

    /** The bytes of the one in-memory raw keyed state handle of a single-subtask snapshot. */
    static byte[] rawBytes(OperatorSubtaskState state) {
        List<KeyGroupsStateHandle> handles = rawKeyed(state);
        if (handles.size() != 1) {
            throw new AssertionError("expected one raw keyed state handle, got " + handles);
        }
        return ((ByteStreamStateHandle) handles.get(0).getDelegateStateHandle()).getData().clone();
    }

    /** The snapshot with its raw keyed state replaced by {@code data} at the same key-group offsets. */
    static OperatorSubtaskState withRawBytes(OperatorSubtaskState state, byte[] data) {
        KeyGroupsStateHandle h = rawKeyed(state).get(0);
        return withRawHandle(state, new KeyGroupsStateHandle(h.getGroupRangeOffsets(), new ByteStreamStateHandle("patched", data)));
    }

    static OperatorSubtaskState withRawHandle(OperatorSubtaskState state, KeyedStateHandle raw) {
        return OperatorSubtaskState.builder()
                .setManagedKeyedState(state.getManagedKeyedState())
                .setManagedOperatorState(state.getManagedOperatorState())
                .setRawOperatorState(state.getRawOperatorState())
                .setRawKeyedState(StateObjectCollection.singleton(raw))
                .build();
    }

    /** A chunk of a Ferry state stream: where it starts, its header fields. */
    record Chunk(int start, int length, boolean last, int keyGroup, int index) {}

    /** Parses the chunks of a stream of Ferry chunks (snapshot/blob.go's header layout). */
    static List<Chunk> chunks(byte[] data, int from, int to) {
        List<Chunk> out = new ArrayList<>();
        int at = from;
        while (at < to) {
            int stored = le32(data, at + 36);
            boolean last = (data[at + 6] & 1) != 0;
            out.add(new Chunk(at, 48 + stored, last, le32(data, at + 16), le32(data, at + 20)));
            at += 48 + stored;
        }
        return out;
    }

    static int le32(byte[] b, int at) {
        return (b[at] & 0xff) | (b[at + 1] & 0xff) << 8 | (b[at + 2] & 0xff) << 16 | (b[at + 3] & 0xff) << 24;
    }

    /** Chunks of every written key group of a single-handle snapshot, in stream order. */
    static Map<Integer, List<Chunk>> chunksByKeyGroup(OperatorSubtaskState state) {
        byte[] data = rawBytes(state);
        TreeMap<Long, Integer> byOffset = new TreeMap<>();
        writtenKeyGroups(state).forEach((kg, off) -> byOffset.put(off, kg));
        Map<Integer, List<Chunk>> out = new LinkedHashMap<>();
        for (var e : byOffset.entrySet()) {
            Long next = byOffset.higherKey(e.getKey());
            out.put(e.getValue(), chunks(data, (int) (long) e.getKey(), next == null ? data.length : (int) (long) next));
        }
        return out;
    }
}
