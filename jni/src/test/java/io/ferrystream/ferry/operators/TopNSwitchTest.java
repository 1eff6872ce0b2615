package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.kinds.topn.FlinkTopNState;
import io.ferrystream.ferry.kinds.topn.TopNSpec;
import io.ferrystream.ferry.operators.TopNDifferentialTest.Op;
import io.ferrystream.ferry.operators.TopNDifferentialTest.Sort;
import io.ferrystream.ferry.operators.TopNDifferentialTest.Step;
import io.ferrystream.ferry.operators.TopNDifferentialTest.Variant;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.typeutils.runtime.TupleSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;

import static io.ferrystream.ferry.operators.TopNDifferentialTest.INPUT;
import static io.ferrystream.ferry.operators.TopNDifferentialTest.ferry;
import static io.ferrystream.ferry.operators.TopNDifferentialTest.flink;
import static io.ferrystream.ferry.operators.TopNDifferentialTest.harness;
import static io.ferrystream.ferry.operators.TopNDifferentialTest.run;
import static io.ferrystream.ferry.operators.TopNDifferentialTest.steps;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Switching Ferry on and off for a Top-N across savepoints (docs/state.md): the same random stream
 * through Flink's operator and Ferry's taking turns, each segment restored from the canonical
 * savepoint the one before took ({@link FlinkTopNState} imports Flink's {@code
 * data-state-with-append}, {@code Top1-Rank-State} or {@code counterState} and writes it back),
 * emits exactly what Flink's operator emits restored from its own savepoints: row for row, with
 * Flink's LRU cache down to one partition, first-N's TTL last writes, async state, on the heap and
 * on RocksDB. A state Flink never writes is refused, naming it.
 */
class TopNSwitchTest {
    static int variants;
    static long rows;

    static void check(Variant v, long seeds) throws Exception {
        Op stock = flink(v);
        Op ferry = ferry(v, 7);
        // Flink 2.3 takes no canonical savepoint of async state ("Not supported yet",
        // StreamOperatorStateHandler#snapshotState): a job with async state switches over a
        // savepoint in the backend's native format
        SavepointFormatType format = v.async() ? SavepointFormatType.NATIVE : SavepointFormatType.CANONICAL;
        variants++;
        for (long seed = 0; seed < seeds; seed++) {
            // valid changelogs only: Flink's form of a stale retracting state is not carried
            List<Step> steps = TopNDifferentialTest.steps(seed * 17 + 3, 500, v, false);
            long snapshots = steps.stream().filter(s -> s.kind() == 's').count();
            assertTrue(snapshots >= 2, "the stream switches at least twice");
            List<String> want = run(List.of(stock), steps, format);
            assertTrue(want.stream().anyMatch(s -> !s.startsWith("WM ")), v + ": stock produced no rows");
            String what = v + ", seed " + seed;
            assertEquals(want, run(List.of(ferry, stock), steps, format), what + ": Ferry first");
            assertEquals(want, run(List.of(stock, ferry), steps, format), what + ": Flink first");
            rows += want.stream().filter(s -> !s.startsWith("WM ")).count();
        }
    }

    @Test
    void everyFunctionCarriesFlinksState() throws Exception {
        for (boolean rocksdb : new boolean[] {false, true}) {
            for (Sort sort : new Sort[] {Sort.of("i DESC NULLS FIRST", "s"), Sort.of("d NULLS LAST", "ts DESC NULLS FIRST", "s DESC"),
                    Sort.of("t9 DESC"), Sort.of("dw")}) {
                check(Variant.topN(sort, 1, 3).rocksdb(rocksdb), 2);
                check(Variant.topN(sort, 2, 4).rankNumber(true).cacheSize(1).rocksdb(rocksdb), 2);
                check(Variant.top1(sort).rocksdb(rocksdb), 2);
                check(Variant.top1(sort).upsert(true).rankNumber(true).cacheSize(1).rocksdb(rocksdb), 2);
            }
            check(Variant.topN(Sort.of("s"), 1, 2).partitionBy(0, 1).rocksdb(rocksdb), 2);
            check(Variant.topN(Sort.of("i"), 2, 3).partitionBy().rocksdb(rocksdb), 2);
            check(Variant.top1(Sort.of("seq DESC")).partitionBy().rocksdb(rocksdb), 2);
            for (Sort sort : new Sort[] {Sort.of("i DESC NULLS FIRST", "s"), Sort.of("t9 DESC"), Sort.of("dw")}) {
                check(Variant.retract(sort, 1, 3).rocksdb(rocksdb), 2);
                check(Variant.retract(sort, 2, 4).rankNumber(true).updateBefore(false).rocksdb(rocksdb), 2);
            }
            check(Variant.retract(Sort.of("s"), 1, 1).partitionBy(0, 1).rocksdb(rocksdb), 2);
            for (Sort sort : new Sort[] {Sort.of("i DESC NULLS FIRST", "d"), Sort.of("t9 DESC"), Sort.of("dw")}) {
                check(Variant.updatable(sort, 1, 3).rocksdb(rocksdb), 2);
                check(Variant.updatable(sort, 2, 4).rankNumber(true).cacheSize(1).rocksdb(rocksdb), 2);
            }
            for (long ttl : new long[] {0, 50}) {
                check(Variant.firstN(1, 3).ttlMs(ttl).rocksdb(rocksdb), 2);
                check(Variant.firstN(2, 4).rankNumber(true).ttlMs(ttl).partitionBy(1, 0).rocksdb(rocksdb), 2);
            }
        }
        System.out.println("TopNSwitchTest: " + variants + " variants, " + rows + " of Flink's output rows, each equal twice");
    }

    /**
     * With async state on: Flink's async-state functions write the same states under the same
     * names; the switch goes through native savepoints (Flink takes no canonical one of async state).
     */
    @Test
    void asyncStateCarriesFlinksState() throws Exception {
        for (boolean rocksdb : new boolean[] {false, true}) {
            check(Variant.topN(Sort.of("i DESC NULLS FIRST", "s"), 1, 3).async(true).rocksdb(rocksdb), 2);
            check(Variant.topN(Sort.of("dw"), 2, 4).rankNumber(true).cacheSize(1).async(true).rocksdb(rocksdb), 2);
            check(Variant.top1(Sort.of("d NULLS LAST", "ts DESC NULLS FIRST", "s DESC")).async(true).rocksdb(rocksdb), 2);
            check(Variant.top1(Sort.of("t9 DESC")).upsert(true).cacheSize(1).async(true).rocksdb(rocksdb), 2);
        }
    }

    /**
     * Flink's state as Flink never writes it, written into its backend by hand and snapshotted:
     * Ferry's operator refuses to start on it, naming the state.
     */
    @Test
    void whatFlinkNeverWritesIsRefused() throws Exception {
        Sort sort = Sort.of("i", "s");
        RowType sortKeyType = RowType.of(new LogicalType[] {new IntType(), new VarCharType(VarCharType.MAX_LENGTH)});
        MapStateDescriptor<RowData, List<RowData>> data = new MapStateDescriptor<>(FlinkTopNState.DATA_STATE,
                new RowDataSerializer(sortKeyType), new ListSerializer<>(new RowDataSerializer(INPUT)));
        for (boolean rocksdb : new boolean[] {false, true}) {
            Variant topN = Variant.topN(sort, 1, 3).rocksdb(rocksdb);
            refused(topN, "an empty list", (backend, row) -> {
                MapState<RowData, List<RowData>> map = state(backend, data);
                put(map, GenericRowData.of(1, StringData.fromString("a")), new ArrayList<>());
            });
            refused(topN, "a row under a sort key other than its own", (backend, row) -> {
                MapState<RowData, List<RowData>> map = state(backend, data);
                put(map, GenericRowData.of(7, StringData.fromString("a")), new ArrayList<>(List.of(row)));
            });
            refused(Variant.updatable(sort, 1, 3).rocksdb(rocksdb), "a row under a row key other than its own", (backend, row) -> {
                @SuppressWarnings({"unchecked", "rawtypes"})
                MapStateDescriptor<RowData, Tuple2<RowData, Integer>> updates = new MapStateDescriptor<>(FlinkTopNState.UPDATE_STATE,
                        new RowDataSerializer(RowType.of(new LogicalType[] {new BigIntType(), new VarCharType(VarCharType.MAX_LENGTH)})),
                        new TupleSerializer<>((Class<Tuple2<RowData, Integer>>) (Class) Tuple2.class,
                                new TypeSerializer[] {new RowDataSerializer(INPUT), IntSerializer.INSTANCE}));
                MapState<RowData, Tuple2<RowData, Integer>> map = state(backend, updates);
                try {
                    map.put(new RowDataSerializer(RowType.of(new LogicalType[] {new BigIntType(), new VarCharType(VarCharType.MAX_LENGTH)}))
                            .toBinaryRow(GenericRowData.of(5L, StringData.fromString("zz"))).copy(), Tuple2.of(row, 1));
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            ValueStateDescriptor<Integer> counter = new ValueStateDescriptor<>(FlinkTopNState.COUNTER_STATE, IntSerializer.INSTANCE);
            refused(Variant.firstN(1, 3).rocksdb(rocksdb), "holds 0 for a key", (backend, row) -> {
                ValueState<Integer> state = state(backend, counter);
                try {
                    state.update(0);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
        }
    }

    /**
     * The retracting Top-N after a retraction of a row it never held, of a sort key it holds:
     * Flink's lenient function decrements the count and keeps the list, so its {@code sorted-map}
     * and {@code data-state} disagree; Ferry's operator refuses that state, naming both.
     */
    @Test
    void staleRetractingStateIsRefused() throws Exception {
        for (boolean rocksdb : new boolean[] {false, true}) {
            Variant v = Variant.retract(Sort.of("i", "s"), 1, 3).rocksdb(rocksdb);
            KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = harness(flink(v), null, 0);
            RowDataSerializer serializer = new RowDataSerializer(INPUT);
            for (int i = 0; i < 4; i++) {
                GenericRowData g = new GenericRowData(INPUT.getFieldCount());
                g.setField(0, 5L);
                g.setField(2, i == 0 ? 0 : 1);
                g.setField(3, StringData.fromString("a"));
                g.setField(8, (long) i);
                if (i == 3) { // a row never inserted, of sort key (1, a)
                    g.setField(8, 99L);
                    g.setRowKind(org.apache.flink.types.RowKind.DELETE);
                }
                h.processElement(new StreamRecord<>(serializer.toBinaryRow(g).copy()));
            }
            h.prepareSnapshotPreBarrier(1);
            OperatorSubtaskState state = h.snapshot(1, 1);
            h.close();
            Exception e = assertThrows(Exception.class, () -> harness(ferry(v, 1), state, 0).close(), v.toString());
            StringBuilder messages = new StringBuilder();
            for (Throwable t = e; t != null; t = t.getCause()) {
                messages.append(t.getMessage()).append(" | ");
            }
            String m = messages.toString();
            assertTrue(m.contains("Flink's sorted-map and data-state disagree for a key (1 rows of a sort key in sorted-map, 2 in"
                    + " data-state): stale state"), v + ": " + m);
        }
    }

    @SuppressWarnings("unchecked")
    private static <S extends org.apache.flink.api.common.state.State> S state(KeyedStateBackend<RowData> backend,
            org.apache.flink.api.common.state.StateDescriptor<S, ?> descriptor) {
        try {
            return backend.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    private static void put(MapState<RowData, List<RowData>> map, GenericRowData sortKey, List<RowData> rows) {
        try {
            map.put(new RowDataSerializer(RowType.of(new LogicalType[] {new IntType(), new VarCharType(VarCharType.MAX_LENGTH)}))
                    .toBinaryRow(sortKey).copy(), rows);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /**
     * Runs Flink's operator on a few rows of key 5, then writes {@code corrupt} for key 5 into its
     * backend, snapshots it and restores Ferry's operator from it: refused, the message saying
     * {@code why}.
     */
    @SuppressWarnings("unchecked")
    private static void refused(Variant v, String why, BiConsumer<KeyedStateBackend<RowData>, RowData> corrupt) throws Exception {
        Op stock = flink(v);
        Op ferry = ferry(v, 1);
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = harness(stock, null, 0);
        RowDataSerializer serializer = new RowDataSerializer(INPUT);
        org.apache.flink.table.data.binary.BinaryRowData row = null;
        for (int i = 0; i < 3; i++) {
            GenericRowData g = new GenericRowData(INPUT.getFieldCount());
            g.setField(0, 5L);
            g.setField(2, i);
            g.setField(3, StringData.fromString("a"));
            g.setField(8, (long) i);
            row = serializer.toBinaryRow(g).copy();
            h.processElement(new StreamRecord<>(row.copy()));
        }
        KeyedStateBackend<RowData> backend = ((AbstractStreamOperator<RowData>) h.getOperator()).getKeyedStateBackend();
        backend.setCurrentKey(new RowDataSerializer(RowType.of(new LogicalType[] {new BigIntType()})).toBinaryRow(GenericRowData.of(5L)).copy());
        corrupt.accept(backend, row);
        h.prepareSnapshotPreBarrier(1);
        OperatorSubtaskState state = h.snapshot(1, 1);
        h.close();
        Exception e = assertThrows(Exception.class, () -> harness(ferry, state, 0).close(), v.toString());
        StringBuilder messages = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            messages.append(t.getMessage()).append(" | ");
        }
        String m = messages.toString();
        assertTrue(m.contains("which Flink never writes") && m.contains(why) && m.contains("Flink's " + new FlinkTopNState(INPUT,
                v.keys(), v.function(), v.sort().fields(), v.sort().ascending(), v.sort().nullsLast(), v.rowKeys(), false).names().get(0)), v + ": " + m);
    }
}
