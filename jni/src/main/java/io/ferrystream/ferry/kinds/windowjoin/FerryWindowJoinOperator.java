package io.ferrystream.ferry.kinds.windowjoin;

import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.operators.Batching;
import io.ferrystream.ferry.operators.TwoInputNativeOperator;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.api.common.functions.DefaultOpenContext;
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Meter;
import org.apache.flink.metrics.MeterView;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinarySegmentUtils;
import org.apache.flink.table.data.utils.JoinedRowData;
import org.apache.flink.table.runtime.generated.GeneratedJoinCondition;
import org.apache.flink.table.runtime.generated.JoinCondition;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.runtime.util.TimeWindowUtil;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;

/**
 * Flink's window join ({@code WindowJoinOperator}) with its keyed state and timers in Go and its
 * rows in the JVM (docs/operators/window-join.md#where-rows-live). Each admitted row is kept in
 * the JVM ({@link WindowRows}, per input, by window end) and only its keys, window_end and handle
 * cross into Go, in batches ({@link Batching#of}) cut at the latest at every watermark: all rows
 * that arrived before a watermark are stored before it fires their windows, as in Flink. When the
 * watermark fires windows, Go returns each window's rows by handle, left then right, in Flink's
 * timer order; this operator joins them as Flink's {@code WindowJoinHelper} does (the join
 * type's {@code doJoin} with Flink's generated residual condition and its null filter) and
 * emits {@link JoinedRowData} of the kept rows. A row's bucket is dropped once the watermark
 * reaches its window's timer time.
 *
 * <p>Late rows (their window fired at the current watermark) are dropped on arrival, before
 * they are batched, with Flink's own test ({@code TimeWindowUtil.isWindowFired}, its conversion
 * of the window end cached) and counted in Flink's metrics: {@code leftNumLateRecordsDropped},
 * {@code leftLateRecordsDroppedRate} and their {@code right} twins. The current watermark is Flink's timer service's: {@code
 * Long.MIN_VALUE} until the first watermark, also after a restore.
 *
 * <p>Checkpoints: before the library writes its state, every kept row goes to Go as the bytes of
 * a {@link BinaryRowData} (input {@link WindowJoinSpec#ROWS_INPUT}), so the state in the
 * checkpoint holds the rows, per key group. After a restore Go hands the rows back, each checked
 * against its input's row type, with its new handle.
 */
public class FerryWindowJoinOperator extends TwoInputNativeOperator<WindowJoinSpec> {
    private static final long serialVersionUID = 1L;

    /** The kinds of Go's output rows (windowjoin.EmitLeft .. RestoredRight). */
    private static final int EMIT_LEFT = 0;
    private static final int EMIT_RIGHT = 1;
    private static final int EMIT_END = 2;
    private static final int RESTORED_LEFT = 3;
    private static final int RESTORED_RIGHT = 4;

    private final GeneratedJoinCondition generatedCondition;
    private final int[] windowEndIndex;
    private final ZoneId shiftTimeZone;
    /** Per input, the fields that cross into Go before the handle: the keys, then window_end. */
    private final int[][] wireFields;
    /** Per input, the key positions whose NULL makes the key join nothing. */
    private final int[][] nullFilteredKeys;
    private final boolean leftOuter;
    private final boolean rightOuter;
    private final boolean semi;
    private final boolean anti;

    private transient long watermark;
    private transient Meter[] lateDropped;
    /**
     * The last window end a row carried and its trigger time ({@code isWindowFired}'s
     * {@code toEpochMillsForTimer(windowEnd - 1)}): rows mostly share their window, and the
     * conversion compares zones each time.
     */
    private transient long lastWindowEnd;
    private transient long lastTriggerTime;

    private transient JoinCondition condition;
    private transient WindowRows[] rows;
    private transient RowDataSerializer[] serializers;
    /** Input rows may be reused by the upstream operator: keep copies. */
    private transient boolean copyRows;
    /** The handle of the row admitted last, for {@link #write}. */
    private transient long admitted;
    /** The rows of the window Go is emitting, per side. */
    private transient List<RowData> windowLeft;
    private transient List<RowData> windowRight;
    private transient boolean[] matched;
    private transient JoinedRowData outRow;
    private transient RowData leftNullRow;
    private transient RowData rightNullRow;
    private transient StreamRecord<RowData> record;

    /**
     * @param condition Flink's generated residual join condition ({@code
     *     JoinUtil.generateConditionFunction}), TRUE when the join has none
     */
    public FerryWindowJoinOperator(WindowJoinSpec spec, GeneratedJoinCondition condition, Batching batching) {
        super(spec, WindowJoinSpec.WIRE_OUTPUT, batching);
        this.generatedCondition = condition;
        this.windowEndIndex = new int[] {spec.windowEndIndex(0), spec.windowEndIndex(1)};
        this.shiftTimeZone = spec.shiftTimeZone();
        this.wireFields = new int[2][];
        this.nullFilteredKeys = new int[2][];
        for (int side = 0; side < 2; side++) {
            int[] keys = spec.keys(side);
            wireFields[side] = java.util.Arrays.copyOf(keys, keys.length + 1);
            wireFields[side][keys.length] = spec.windowEndIndex(side);
            boolean[] filter = spec.filterNulls();
            int n = 0;
            for (boolean f : filter) {
                n += f ? 1 : 0;
            }
            nullFilteredKeys[side] = new int[n];
            for (int k = 0, j = 0; k < keys.length; k++) {
                if (filter[k]) {
                    nullFilteredKeys[side][j++] = keys[k];
                }
            }
        }
        String type = spec.joinType();
        this.leftOuter = type.equals("LEFT") || type.equals("FULL");
        this.rightOuter = type.equals("RIGHT") || type.equals("FULL");
        this.semi = type.equals("SEMI");
        this.anti = type.equals("ANTI");
    }

    @Override
    public void open() throws Exception {
        super.open();
        watermark = Long.MIN_VALUE;
        lastWindowEnd = Long.MAX_VALUE; // no window end converted yet
        lastTriggerTime = Long.MAX_VALUE;
        lateDropped = new Meter[2];
        String[] sides = {"left", "right"};
        for (int i = 0; i < 2; i++) {
            Counter c = getMetricGroup().counter(sides[i] + "NumLateRecordsDropped");
            lateDropped[i] = getMetricGroup().meter(sides[i] + "LateRecordsDroppedRate", new MeterView(c));
        }
        condition = generatedCondition.newInstance(getRuntimeContext().getUserCodeClassLoader());
        condition.setRuntimeContext(getRuntimeContext());
        condition.open(DefaultOpenContext.INSTANCE);
        copyRows = getExecutionConfig().isObjectReuseEnabled();
        rows = new WindowRows[] {new WindowRows(), new WindowRows()};
        serializers = new RowDataSerializer[] {new RowDataSerializer(spec().type(0)), new RowDataSerializer(spec().type(1))};
        windowLeft = new ArrayList<>();
        windowRight = new ArrayList<>();
        matched = new boolean[16];
        outRow = new JoinedRowData();
        leftNullRow = new GenericRowData(spec().type(0).getFieldCount());
        rightNullRow = new GenericRowData(spec().type(1).getFieldCount());
        record = new StreamRecord<>(null);
    }

    @Override
    public void close() throws Exception {
        try {
            if (condition != null) {
                condition.close();
            }
        } finally {
            super.close();
        }
    }

    /** {@code TimeWindowUtil.isWindowFired}'s timer time of a window end; Long.MAX_VALUE for a window that never fires. */
    private long triggerTime(long windowEnd) {
        if (windowEnd == Long.MAX_VALUE) {
            return Long.MAX_VALUE;
        }
        if (windowEnd != lastWindowEnd) {
            lastWindowEnd = windowEnd;
            lastTriggerTime = TimeWindowUtil.toEpochMillsForTimer(windowEnd - 1, shiftTimeZone);
        }
        return lastTriggerTime;
    }

    /** Whether rows of {@code side} are emitted when they match nothing (padded, or for ANTI the left row). */
    private boolean preserved(int side) {
        return side == 0 ? leftOuter || anti : rightOuter;
    }

    /** Whether {@code row} of {@code side} has a key that can join: no NULL at a position filtering NULLs. */
    private boolean keyJoins(int side, RowData row) {
        for (int k : nullFilteredKeys[side]) {
            if (row.isNullAt(k)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Flink's {@code WindowJoinHelper.processElement} up to the state: a late row is dropped and
     * counted; any other row is kept, unless its key can never match on a side that is not
     * preserved (docs/operators/window-join.md#null-keys). With {@code
     * ferry.join.null-key.emit-immediately}, such a row of a preserved side is emitted at once,
     * and no such row reaches Go.
     */
    @Override
    protected boolean admit(int input, RowData row) {
        long windowEnd = row.getTimestamp(windowEndIndex[input], 3).getMillisecond();
        long trigger = triggerTime(windowEnd);
        if (windowEnd != Long.MAX_VALUE && watermark >= trigger) {
            lateDropped[input].markEvent();
            return false;
        }
        boolean joins = keyJoins(input, row);
        if (!joins && spec().nullKeyEmitImmediately()) {
            if (preserved(input)) {
                emitUnmatched(input, row);
            }
            return false;
        }
        if (joins || preserved(input)) {
            admitted = rows[input].add(copyRows ? serializers[input].copy(row) : row, windowEnd, trigger);
        } else {
            admitted = WindowJoinSpec.NO_ROW;
        }
        return true;
    }

    /** The row's keys and window_end, then its handle ({@link WindowJoinSpec}'s wire input). */
    @Override
    protected void write(int input, RowData row) {
        writers[input].writeProjected(row, wireFields[input], admitted);
    }

    /** The late rows of input (0 left, 1 right) dropped since open ({@code *NumLateRecordsDropped}). */
    public long lateRecordsDropped(int input) {
        return lateDropped[input].getCount();
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        super.processWatermark(mark);
        watermark = mark.getTimestamp();
        rows[0].release(watermark);
        rows[1].release(watermark);
    }

    // ---- Go's output: windows to join, restored rows ---------------------------------------------

    @Override
    protected void emit(VectorSchemaRoot chunk) {
        // both columns NOT NULL: read their values straight from the buffers
        ArrowBuf kinds = ((IntVector) chunk.getVector(0)).getDataBuffer();
        ArrowBuf handles = ((BigIntVector) chunk.getVector(1)).getDataBuffer();
        VarBinaryVector bytes = (VarBinaryVector) chunk.getVector(2);
        for (int i = 0, n = chunk.getRowCount(); i < n; i++) {
            int kind = kinds.getInt((long) i * IntVector.TYPE_WIDTH);
            long h = handles.getLong((long) i * BigIntVector.TYPE_WIDTH);
            switch (kind) {
                case EMIT_LEFT:
                    windowLeft.add(row(0, h));
                    break;
                case EMIT_RIGHT:
                    windowRight.add(row(1, h));
                    break;
                case EMIT_END:
                    joinWindow();
                    break;
                case RESTORED_LEFT:
                case RESTORED_RIGHT:
                    int side = kind - RESTORED_LEFT;
                    RowData r = restoredRow(side, bytes.get(i));
                    long end = r.getTimestamp(windowEndIndex[side], 3).getMillisecond();
                    rows[side].restore(h, r, triggerTime(end));
                    break;
                default:
                    throw new FerryException(FerryException.EDATA, "Ferry window join " + spec().name() + ": output kind " + kind + " is unknown");
            }
        }
    }

    private RowData row(int side, long handle) {
        RowData r = rows[side].get(handle);
        if (r == null) {
            throw new IllegalStateException("Ferry window join " + spec().name() + ": the library named the "
                    + (side == 0 ? "left" : "right") + " row " + handle + ", which this operator does not hold");
        }
        return r;
    }

    /** {@code WindowJoinHelper.joinAndClear}'s join of the window whose rows Go just named, in Flink's order. */
    private void joinWindow() {
        List<RowData> ls = windowLeft;
        List<RowData> rs = windowRight;
        // the window's key is every row's: a NULL where it filters NULLs joins nothing
        // (JoinConditionWithNullFilters)
        boolean joins = ls.isEmpty() ? rs.isEmpty() || keyJoins(1, rs.get(0)) : keyJoins(0, ls.get(0));
        if (semi || anti) {
            for (RowData l : ls) {
                boolean m = false;
                for (int j = 0; j < rs.size() && !m; j++) {
                    m = joins && condition.apply(l, rs.get(j));
                }
                if (m != anti) {
                    collect(l);
                }
            }
        } else if (rightOuter && !leftOuter) { // RIGHT: the right rows drive
            for (RowData r : rs) {
                boolean m = false;
                for (RowData l : ls) {
                    if (joins && condition.apply(l, r)) {
                        collect(outRow.replace(l, r));
                        m = true;
                    }
                }
                if (!m) {
                    collect(outRow.replace(leftNullRow, r));
                }
            }
        } else { // INNER, LEFT, FULL: the left rows drive
            if (rightOuter && matched.length < rs.size()) {
                matched = new boolean[Math.max(rs.size(), 2 * matched.length)];
            }
            if (rightOuter) {
                java.util.Arrays.fill(matched, 0, rs.size(), false);
            }
            for (RowData l : ls) {
                boolean m = false;
                for (int j = 0; j < rs.size(); j++) {
                    RowData r = rs.get(j);
                    if (joins && condition.apply(l, r)) {
                        collect(outRow.replace(l, r));
                        m = true;
                        if (rightOuter) {
                            matched[j] = true;
                        }
                    }
                }
                if (!m && leftOuter) {
                    collect(outRow.replace(l, rightNullRow));
                }
            }
            if (rightOuter) {
                for (int j = 0; j < rs.size(); j++) {
                    if (!matched[j]) {
                        collect(outRow.replace(leftNullRow, rs.get(j)));
                    }
                }
            }
        }
        ls.clear();
        rs.clear();
    }

    /** A preserved side's row that matched nothing: padded with NULLs, or for ANTI the left row itself. */
    private void emitUnmatched(int side, RowData row) {
        if (anti) {
            collect(row);
        } else {
            collect(side == 0 ? outRow.replace(row, rightNullRow) : outRow.replace(leftNullRow, row));
        }
    }

    private void collect(RowData row) {
        if (row == outRow) {
            outRow.setRowKind(RowKind.INSERT);
        }
        output.collect(record.replace(row));
    }

    // ---- rows into and out of checkpoints --------------------------------------------------------

    /** Every kept row to Go, as BinaryRowData bytes with its side and handle, before Go writes its state. */
    @Override
    protected void beforeNativeSnapshot() {
        RowDataArrowWriter w = writers[WindowJoinSpec.ROWS_INPUT];
        GenericRowData r = new GenericRowData(3);
        for (int side = 0; side < 2; side++) {
            r.setField(0, side);
            int s = side;
            rows[side].forEach((handle, row) -> {
                r.setField(1, handle);
                r.setField(2, bytesOf(s, row));
                w.write(r);
                if (w.count() >= batchSize) {
                    processInput(WindowJoinSpec.ROWS_INPUT);
                }
            });
        }
        processInput(WindowJoinSpec.ROWS_INPUT);
    }

    private byte[] bytesOf(int side, RowData row) {
        BinaryRowData b = row instanceof BinaryRowData ? (BinaryRowData) row : serializers[side].toBinaryRow(row);
        return BinarySegmentUtils.copyToBytes(b.getSegments(), b.getOffset(), b.getSizeInBytes());
    }

    /**
     * A restored row of {@code side}: its bytes as a BinaryRowData of the input's type, once every
     * variable-length field is known to lie within them (a BinaryRowData reads them unchecked).
     */
    private RowData restoredRow(int side, byte[] b) {
        RowType type = spec().type(side);
        int arity = type.getFieldCount();
        int fixed = BinaryRowData.calculateFixPartSizeInBytes(arity);
        String what = "Ferry window join " + spec().name() + ": a restored " + (side == 0 ? "left" : "right") + " row";
        if (b.length < fixed || b[0] < 0 || b[0] > 3) {
            throw new FerryException(FerryException.EDATA, what + " of " + b.length + " bytes is not a row of " + arity + " fields");
        }
        BinaryRowData row = new BinaryRowData(arity);
        row.pointTo(MemorySegmentFactory.wrap(b), 0, b.length);
        int bitsBytes = BinaryRowData.calculateBitSetWidthInBytes(arity);
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(b).order(java.nio.ByteOrder.nativeOrder());
        for (int i = 0; i < arity; i++) {
            LogicalType t = type.getTypeAt(i);
            if (BinaryRowData.isInFixedLengthPart(t) || row.isNullAt(i)) {
                continue;
            }
            long v = buf.getLong(bitsBytes + 8 * i);
            boolean inline = (v & Long.MIN_VALUE) != 0
                    && (t.getTypeRoot() == LogicalTypeRoot.VARCHAR || t.getTypeRoot() == LogicalTypeRoot.CHAR
                            || t.getTypeRoot() == LogicalTypeRoot.VARBINARY || t.getTypeRoot() == LogicalTypeRoot.BINARY);
            long offset = v >>> 32;
            long size = t.getTypeRoot() == LogicalTypeRoot.TIMESTAMP_WITHOUT_TIME_ZONE
                            || t.getTypeRoot() == LogicalTypeRoot.TIMESTAMP_WITH_LOCAL_TIME_ZONE
                    ? 8
                    : v & 0xffffffffL;
            if (inline ? ((v >>> 56) & 0x7f) > 7 : offset < fixed || offset + size > b.length) {
                throw new FerryException(FerryException.EDATA, what + ": field " + i + " (" + t + ") lies outside its " + b.length + " bytes");
            }
        }
        return row;
    }
}
