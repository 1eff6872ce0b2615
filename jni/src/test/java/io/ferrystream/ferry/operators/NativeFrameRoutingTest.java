package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.exchange.FerryFrame;
import io.ferrystream.ferry.kinds.groupaggregate.GlobalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.IncrementalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.LocalGroupAggregateSpec;
import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.nativelib.NativeOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.runtime.plugable.SerializationDelegate;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.runtime.partitioner.KeyGroupStreamPartitioner;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.RowKind;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;

/**
 * The frames the native local aggregate writes for Ferry's columnar exchange, against Flink's own
 * routing of the partial rows the same local writes as rows: for random keys of every key type,
 * max parallelisms and channel counts, each channel receives exactly the rows Flink's {@code
 * KeyGroupStreamPartitioner} (over Flink's key selector of the partial rows) sends it, each frame
 * names its key groups and channel correctly and passes Ferry's partitioner; a global aggregate
 * reading the frames of a channel (as that channel's subtask, owning only its key groups) emits
 * exactly what one reading the channel's rows emits, and refuses a frame of another channel. The
 * same for the frames a split DISTINCT's incremental aggregate writes, routed by the final key.
 */
class NativeFrameRoutingTest {
    @Test
    void framesCarryFlinksRouting() throws Exception {
        Random r = new Random(11);
        List<List<LogicalType>> keyLists = new ArrayList<>();
        for (LogicalType t : KeyGroupParityTest.KEY_TYPES) {
            keyLists.add(List.of(t));
        }
        keyLists.add(List.of(new BigIntType(), new VarCharType(VarCharType.MAX_LENGTH)));
        keyLists.add(new ArrayList<>(KeyGroupParityTest.KEY_TYPES));
        int[][] shapes = {{128, 1}, {128, 3}, {1, 1}, {129, 7}, {4096, 2}, {32768, 3}};
        int rows = 0;
        try (BufferAllocator allocator = new RootAllocator()) {
            for (int i = 0; i < keyLists.size(); i++) {
                int[] shape = shapes[i % shapes.length];
                rows += check(keyLists.get(i), shape[0], shape[1], r, allocator);
            }
        }
        assertTrue(rows >= keyLists.size() * 100, "partial rows checked: " + rows);
    }

    /** Returns the partial rows checked. */
    static int check(List<LogicalType> keyTypes, int maxP, int p, Random r, BufferAllocator allocator) throws Exception {
        int keys = keyTypes.size();
        List<LogicalType> inputTypes = new ArrayList<>(keyTypes);
        inputTypes.add(new IntType());
        RowType inputType = RowType.of(inputTypes.toArray(new LogicalType[0]));
        int[] grouping = NativeSpec.Input.firstFields(keys);
        List<GroupAggregateSpec.Call> calls = List.of(
                new GroupAggregateSpec.Call("COUNT", new int[0], false, "n"),
                new GroupAggregateSpec.Call("SUM", new int[] {keys}, false, "s"));
        LocalGroupAggregateSpec local = new LocalGroupAggregateSpec("frame routing", inputType, grouping, calls, false);
        List<RowData> input = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            GenericRowData row = new GenericRowData(RowKind.INSERT, keys + 1);
            for (int c = 0; c < keys; c++) {
                row.setField(c, KeyGroupParityTest.value(r, keyTypes.get(c)));
            }
            row.setField(keys, r.nextInt(1000));
            input.add(row);
        }

        // Flink's routing of the partial rows the local writes as rows
        List<RowData> partials = run(local.open(maxP, 0, maxP - 1, allocator), local.batchType(0), input, allocator, null);

        // the same rows as frames
        List<FerryFrame> frames = new ArrayList<>();
        run(local.forExchange(p).open(maxP, 0, maxP - 1, allocator), local.batchType(0), input, allocator, frames);
        checkRouting(keyTypes, inputType, calls, partials, frames, maxP, p, allocator);
        return partials.size();
    }

    /**
     * The frames a split DISTINCT's incremental aggregate writes, routed by the final key for its
     * consumer's max parallelism {@code maxP} and {@code p} channels while it is itself keyed by
     * the partial key (the final key and a bucket) over 128 key groups: as {@link
     * #checkRouting}. Returns the output rows checked.
     */
    static int checkIncremental(List<LogicalType> keyTypes, int maxP, int p, Random r, BufferAllocator allocator) throws Exception {
        int keys = keyTypes.size();
        List<LogicalType> inputTypes = new ArrayList<>(keyTypes);
        inputTypes.add(new IntType()); // the bucket
        inputTypes.add(new IntType());
        RowType inputType = RowType.of(inputTypes.toArray(new LogicalType[0]));
        List<GroupAggregateSpec.Call> calls = List.of(
                new GroupAggregateSpec.Call("COUNT", new int[0], false, "n"),
                new GroupAggregateSpec.Call("SUM", new int[] {keys + 1}, false, "s"));
        LocalGroupAggregateSpec local = new LocalGroupAggregateSpec(
                "frame routing local", inputType, NativeSpec.Input.firstFields(keys + 1), calls, false);
        List<RowData> input = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            GenericRowData row = new GenericRowData(RowKind.INSERT, keys + 2);
            for (int c = 0; c < keys; c++) {
                row.setField(c, KeyGroupParityTest.value(r, keyTypes.get(c)));
            }
            row.setField(keys, r.nextInt(4));
            row.setField(keys + 1, r.nextInt(1000));
            input.add(row);
        }
        List<RowData> partials = run(local.open(128, 0, 127, allocator), local.batchType(0), input, allocator, null);
        List<LogicalType> partialTypes = new ArrayList<>(keyTypes);
        partialTypes.add(new IntType());
        partialTypes.add(new BigIntType(false));
        partialTypes.add(new IntType());
        IncrementalGroupAggregateSpec incremental = new IncrementalGroupAggregateSpec("frame routing incremental",
                RowType.of(partialTypes.toArray(new LogicalType[0])), keys + 1, inputType, calls,
                NativeSpec.Input.firstFields(keys), false, 0);
        List<RowData> out = run(incremental.open(128, 0, 127, allocator), incremental.batchType(0), partials, allocator, null);
        List<FerryFrame> frames = new ArrayList<>();
        run(incremental.forExchange(p, maxP).open(128, 0, 127, allocator), incremental.batchType(0), partials, allocator, frames);
        checkRouting(keyTypes, inputType, calls, out, frames, maxP, p, allocator);
        return out.size();
    }

    @Test
    void incrementalFramesCarryFlinksRouting() throws Exception {
        Random r = new Random(12);
        int[][] shapes = {{128, 3}, {1, 1}, {129, 7}, {4096, 2}, {32768, 3}};
        int rows = 0;
        try (BufferAllocator allocator = new RootAllocator()) {
            for (int i = 0; i < KeyGroupParityTest.KEY_TYPES.size(); i++) {
                int[] shape = shapes[i % shapes.length];
                rows += checkIncremental(List.of(KeyGroupParityTest.KEY_TYPES.get(i)), shape[0], shape[1], r, allocator);
            }
            rows += checkIncremental(List.of(new BigIntType(), new VarCharType(VarCharType.MAX_LENGTH)), 256, 5, r, allocator);
        }
        assertTrue(rows >= KeyGroupParityTest.KEY_TYPES.size() * 20, "output rows checked: " + rows);
    }

    /**
     * {@code rows} (a producer's output rows: {@code keyTypes.size()} key fields, then COUNT(*)'s
     * and SUM(INT)'s accumulators) as Flink routes them against {@code frames}, the same rows as
     * the producer's frames: each channel gets exactly Flink's rows, each frame names its key
     * groups and channel correctly; a global aggregate (calls {@code calls} over {@code inputType})
     * reading a channel's frames emits what one reading its rows emits and refuses a frame of
     * another channel.
     */
    static void checkRouting(List<LogicalType> keyTypes, RowType inputType, List<GroupAggregateSpec.Call> calls,
            List<RowData> partials, List<FerryFrame> frames, int maxP, int p, BufferAllocator allocator) throws Exception {
        int keys = keyTypes.size();
        int[] grouping = NativeSpec.Input.firstFields(keys);
        RowType partialType = partialType(keyTypes);
        RowDataKeySelector selector =
                KeySelectorUtil.getRowDataSelector(NativeFrameRoutingTest.class.getClassLoader(), grouping, InternalTypeInfo.of(partialType));
        KeyGroupStreamPartitioner<RowData, RowData> flink = new KeyGroupStreamPartitioner<>(selector, 128);
        flink.configure(maxP);
        flink.setup(p);
        List<List<RowData>> byChannel = new ArrayList<>();
        List<TreeSet<Integer>> groups = new ArrayList<>();
        for (int c = 0; c < p; c++) {
            byChannel.add(new ArrayList<>());
            groups.add(new TreeSet<>());
        }
        SerializationDelegate<StreamRecord<RowData>> d = new SerializationDelegate<>(null);
        for (RowData row : partials) {
            d.setInstance(new StreamRecord<>(row));
            int c = flink.selectChannel(d);
            byChannel.get(c).add(row);
            groups.get(c).add(KeyGroupRangeAssignment.assignToKeyGroup(selector.getKey(row), maxP));
        }
        int[] framed = new int[p];
        for (FerryFrame f : frames) {
            assertEquals(maxP, f.maxParallelism(), f.toString());
            assertEquals(p, f.parallelism(), f.toString());
            assertTrue(groups.get(f.channel()).contains(f.keyGroupFirst()), f + " " + groups.get(f.channel()));
            assertTrue(groups.get(f.channel()).contains(f.keyGroupLast()), f + " " + groups.get(f.channel()));
            framed[f.channel()] += f.rows();
        }
        for (int c = 0; c < p; c++) {
            assertEquals(byChannel.get(c).size(), framed[c], "rows of channel " + c + " of " + p + ", max parallelism " + maxP + ", keys " + keyTypes);
        }

        // each channel's subtask: frames and rows give the same changelog
        GlobalGroupAggregateSpec global = new GlobalGroupAggregateSpec(
                "frame routing global", partialType, keys, inputType, calls, false, -1, false, true, 0);
        GlobalGroupAggregateSpec framesGlobal = global.withFrames(Integer.MAX_VALUE);
        for (int c = 0; c < p; c++) {
            KeyGroupRange range = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(maxP, p, c);
            List<String> want = strings(run(global.open(maxP, range.getStartKeyGroup(), range.getEndKeyGroup(), allocator),
                    global.batchType(0), byChannel.get(c), allocator, null));
            List<RowData> frameRows = new ArrayList<>();
            List<RowData> foreign = new ArrayList<>();
            for (FerryFrame f : frames) {
                (f.channel() == c ? frameRows : foreign).add(GenericRowData.of((Object) f.bytes()));
            }
            NativeOperator op = framesGlobal.open(maxP, range.getStartKeyGroup(), range.getEndKeyGroup(), allocator);
            List<String> got = strings(run(op, FerryFrame.ROW_TYPE, frameRows, allocator, null));
            if (p > 1) {
                // several locals' partial rows interleave in no fixed order: compare the rows
                Collections.sort(want);
                Collections.sort(got);
            }
            assertEquals(want, got, "channel " + c + " of " + p + ", keys " + keyTypes);
            if (!foreign.isEmpty()) {
                try (NativeOperator g = framesGlobal.open(maxP, range.getStartKeyGroup(), range.getEndKeyGroup(), allocator)) {
                    FerryException e = assertThrows(FerryException.class, () -> run(g, FerryFrame.ROW_TYPE, foreign.subList(0, 1), allocator, null));
                    assertEquals(FerryException.EDATA, e.code(), e.getMessage());
                    assertTrue(e.getMessage().contains("key group"), e.getMessage());
                }
            }
        }
    }

    /**
     * The local's partial row: the keys, then COUNT(*)'s and SUM(INT)'s accumulators (COUNT's
     * declared NOT NULL here, as Flink may declare a field the local writes as nullable: frames
     * do not depend on nullability).
     */
    static RowType partialType(List<LogicalType> keyTypes) {
        List<LogicalType> types = new ArrayList<>(keyTypes);
        types.add(new BigIntType(false));
        types.add(new IntType());
        return RowType.of(types.toArray(new LogicalType[0]));
    }

    /**
     * Runs {@code rows} through {@code op} as one batch (or, for frames, one batch each), then
     * flushes, and closes it; returns the output rows, or with {@code frames} collects the output
     * frames there instead.
     */
    static List<RowData> run(NativeOperator op, RowType batchType, List<RowData> rows, BufferAllocator allocator,
            List<FerryFrame> frames) throws Exception {
        List<RowData> out = new ArrayList<>();
        try (op;
                RowDataArrowWriter writer = RowDataArrowWriter.create(batchType, allocator, rows.size() + 1);
                VectorSchemaRoot root = VectorSchemaRoot.create(op.outputSchema(), allocator)) {
            ArrowRowDataReader reader = frames == null ? new ArrowRowDataReader(root) : null;
            java.util.function.Consumer<VectorSchemaRoot> collect = chunk -> {
                if (frames != null) {
                    VarBinaryVector v = (VarBinaryVector) chunk.getVector(0);
                    for (int i = 0; i < chunk.getRowCount(); i++) {
                        frames.add(new FerryFrame(v.get(i)));
                    }
                    return;
                }
                reader.load();
                for (int i = 0; i < reader.rowCount(); i++) {
                    out.add(reader.readBinary(i).copy());
                }
            };
            boolean perRow = batchType.equals(FerryFrame.ROW_TYPE);
            for (int i = 0; i < rows.size(); i++) {
                writer.write(rows.get(i));
                if (perRow || i == rows.size() - 1) {
                    writer.finish();
                    op.process(0, writer.root(), 0, root, collect);
                    writer.reset();
                }
            }
            op.flush(0, root, collect);
        }
        return out;
    }

    static List<String> strings(List<RowData> rows) {
        List<String> s = new ArrayList<>();
        for (RowData r : rows) {
            s.add(r.getRowKind() + " " + r);
        }
        return s;
    }
}
