package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator;
import io.ferrystream.ferry.kinds.groupaggregate.FlinkAccState;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.state.forst.ForStStateBackend;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.runtime.asyncprocessing.operators.AsyncKeyedProcessOperator;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.operators.asyncprocessing.AsyncKeyOrderedProcessingOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.asyncprocessing.AsyncKeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.TableRuntimeException;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.operators.aggregate.GroupAggFunction;
import org.apache.flink.table.runtime.operators.aggregate.async.AsyncStateGroupAggFunction;
import org.apache.flink.table.runtime.operators.bundle.KeyedMapBundleOperator;
import org.apache.flink.table.runtime.typeutils.BigDecimalTypeInfo;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.InstantiationUtil;

import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Flink's own group-aggregate operator ({@code KeyedProcessOperator(GroupAggFunction)}, planned
 * by Flink 2.3 with Ferry off) and Ferry's ({@link FerryGroupAggregateOperator}, planned for the
 * same query with Ferry on), each in Flink's keyed operator test harness, fed the same randomized
 * changelog — inserts, retractions of earlier rows, retractions before any insert, NULLs,
 * extreme values — must emit identical output sequences. Both sides are snapshotted and restored
 * into fresh operators mid-stream.
 */
class GroupAggregateDifferentialTest {

    /** A planned group-aggregate operator with its state key selector. */
    record Planned(
            OneInputStreamOperator<RowData, RowData> operator,
            KeySelector<RowData, RowData> keySelector,
            TypeInformation<RowData> keyType,
            RowType outputType,
            boolean forst,
            List<Col> cols) {}

    /** One value column: SQL type and a generator of internal values. */
    record Col(String name, String sqlType, java.util.function.Function<Random, Object> gen) {}

    static Object maybeNull(Random r, Object v) {
        return r.nextInt(8) == 0 ? null : v;
    }

    /** The largest DECIMAL(38, 4). */
    static final BigDecimal MAX38_4 = new BigDecimal(java.math.BigInteger.TEN.pow(38).subtract(java.math.BigInteger.ONE), 4);

    static final List<Col> VALUE_TYPES =
            List.of(
                    new Col("vb", "BIGINT", r -> maybeNull(r, pick(r, Long.MIN_VALUE, Long.MAX_VALUE, 0L, -1L, (long) r.nextInt(100) - 50, r.nextLong()))),
                    new Col("vi", "INT", r -> maybeNull(r, pick(r, Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -7, r.nextInt(100) - 50, r.nextInt()))),
                    new Col("vs", "SMALLINT", r -> maybeNull(r, pick(r, Short.MIN_VALUE, Short.MAX_VALUE, (short) 0, (short) (r.nextInt(100) - 50)))),
                    new Col("vt", "TINYINT", r -> maybeNull(r, pick(r, Byte.MIN_VALUE, Byte.MAX_VALUE, (byte) 0, (byte) (r.nextInt(20) - 10)))),
                    new Col("vd", "DOUBLE", r -> maybeNull(r, pick(r, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -0.0d, 0.0d, 1e308, r.nextInt(100) * 0.25))),
                    new Col("vf", "FLOAT", r -> maybeNull(r, pick(r, Float.NaN, Float.POSITIVE_INFINITY, -0.0f, 3.4e38f, r.nextInt(100) * 0.5f))),
                    new Col("vm", "DECIMAL(10, 2)", r -> maybeNull(r, pick(r, dec("99999999.99", 10, 2), dec("-99999999.99", 10, 2),
                            dec("0.00", 10, 2), dec("-0.01", 10, 2), dec(BigDecimal.valueOf(r.nextInt(2000) - 1000, 2), 10, 2)))),
                    // 38 digits: two maxima overflow a sum (NULL, then SUM restarts, $SUM0/AVG stay NULL)
                    new Col("vw", "DECIMAL(38, 4)", r -> maybeNull(r, pick(r, dec(MAX38_4, 38, 4), dec(MAX38_4.negate(), 38, 4),
                            dec(new BigDecimal(new java.math.BigInteger(120, r), 4), 38, 4), dec(BigDecimal.valueOf(r.nextInt(100) - 50, 4), 38, 4)))),
                    new Col("vc", "STRING", r -> maybeNull(r, StringData.fromString(
                            pick(r, "", "\u0000", "a", "ab", "ü", "\uD83D\uDE00", "\uFFFF", "Z" + (char) ('a' + r.nextInt(6)))))),
                    // days since 1970 and epoch milliseconds, before and after the epoch
                    new Col("va", "DATE", r -> maybeNull(r, pick(r, -719_162, 2_932_896, 0, -1, r.nextInt(200) - 100))),
                    new Col("ve", "TIMESTAMP(3)", r -> maybeNull(r, TimestampData.fromEpochMillis(
                            pick(r, -62_135_596_800_000L, 253_402_300_799_999L, 0L, -1L, (long) r.nextInt(2000) * 86_400_001L - 1_000_000L)))),
                    // NOT NULL, so FILTER (WHERE fa) reads the column itself (no Calc before the aggregate)
                    new Col("fa", "BOOLEAN NOT NULL", Random::nextBoolean),
                    new Col("fb", "BOOLEAN NOT NULL", r -> r.nextInt(4) == 0));

    static DecimalData dec(String v, int p, int s) {
        return dec(new BigDecimal(v), p, s);
    }

    static DecimalData dec(BigDecimal v, int p, int s) {
        return DecimalData.fromBigDecimal(v, p, s);
    }

    @SafeVarargs
    static <T> T pick(Random r, T... values) {
        // The last value is the "ordinary" one and comes up half of the time.
        return r.nextBoolean() ? values[values.length - 1] : values[r.nextInt(values.length)];
    }

    static final String AGGS =
            "COUNT(*), COUNT(vb), SUM(vb), MIN(vb), MAX(vb), AVG(vb), SUM(vi), MIN(vi), MAX(vi), AVG(vi),"
                    + " SUM(vs), AVG(vs), MIN(vs), SUM(vt), MAX(vt), AVG(vt), SUM(vd), MIN(vd), MAX(vd), AVG(vd),"
                    + " SUM(vf), MIN(vf), MAX(vf), AVG(vf), COUNT(*) FILTER (WHERE fa), SUM(vb) FILTER (WHERE fb),"
                    + " SUM(vm), AVG(vm), MIN(vm), MAX(vm), COUNT(vm), SUM(vw), AVG(vw), MIN(vw), MAX(vw),"
                    + " MIN(vc), MAX(vc), COUNT(vc), MAX(vc) FILTER (WHERE fa), SUM(vw) FILTER (WHERE fb),"
                    + " MIN(va), MAX(va), COUNT(va), MIN(ve), MAX(ve) FILTER (WHERE fb), COUNT(ve)";

    /** DISTINCT calls sharing and not sharing value sets, with and without FILTER. */
    static final String DISTINCT_AND_FILTER_AGGS =
            "COUNT(DISTINCT vb), COUNT(DISTINCT vb) FILTER (WHERE fa), SUM(DISTINCT vi), SUM(DISTINCT vb) FILTER (WHERE fb),"
                    + " MIN(DISTINCT vs), MAX(DISTINCT vd) FILTER (WHERE fa), COUNT(DISTINCT vd), COUNT(DISTINCT vf),"
                    + " COUNT(*) FILTER (WHERE fa), SUM(vb) FILTER (WHERE fb), MAX(vi) FILTER (WHERE fa), AVG(vd) FILTER (WHERE fb),"
                    + " COUNT(vt), COUNT(DISTINCT vc), MAX(DISTINCT vc) FILTER (WHERE fb), COUNT(DISTINCT vm) FILTER (WHERE fa),"
                    + " SUM(DISTINCT vw), MIN(vw) FILTER (WHERE fa), MAX(vm), MIN(vc),"
                    + " COUNT(DISTINCT va), MAX(DISTINCT ve) FILTER (WHERE fa), COUNT(DISTINCT ve), MIN(va)";

    /** What idle-state TTL runs natively with on retracting input: no MapView state. (Every query
     * reads every column, so no projection stands between the source rows and the aggregate.) */
    static final String TTL_AGGS =
            "COUNT(*), SUM(vb), COUNT(vf), AVG(vd), SUM(vi) FILTER (WHERE fa), AVG(vt), COUNT(vs) FILTER (WHERE fb),"
                    + " SUM(vm), AVG(vw), COUNT(vc), COUNT(va), COUNT(ve)";

    /** Extremes only: on insert-only input they soon stop changing, so TTL's re-emission of
     * unchanged results shows. */
    static final String EXTREME_AGGS =
            "MAX(vb), MIN(vi), MAX(vs), MIN(vt), MAX(vd), MIN(vf), MAX(vm), MIN(vw), MAX(vc), MIN(va), MAX(ve),"
                    + " MAX(vb) FILTER (WHERE fa), MIN(vi) FILTER (WHERE fb)";

    /** LISTAGG only: what idle-state TTL runs natively with among these functions. (A delimiter
     * must be a literal, which a Calc in front of the aggregate would add to the rows: the
     * two-argument form is FerryExecutionTest's.) */
    static final String RETRACT_LISTAGGS =
            "LISTAGG(vc), LISTAGG(vc) FILTER (WHERE fb), LISTAGG(DISTINCT vc), COUNT(*),"
                    + " COUNT(vb), COUNT(vi), COUNT(vs), COUNT(vt), COUNT(vd), COUNT(vf), COUNT(vm), COUNT(vw), COUNT(va),"
                    + " COUNT(ve), COUNT(*) FILTER (WHERE fa), COUNT(*) FILTER (WHERE fb)";

    /** FIRST_VALUE, LAST_VALUE and LISTAGG (with and without delimiter): on retracting input,
     * Flink's ...WithRetractAggFunction; a COUNT of every column keeps the source row unchanged. */
    static final String RETRACT_FN_AGGS =
            "FIRST_VALUE(vb), LAST_VALUE(vb), FIRST_VALUE(vi), LAST_VALUE(vs), FIRST_VALUE(vt), LAST_VALUE(vd), FIRST_VALUE(vd),"
                    + " LAST_VALUE(vf), FIRST_VALUE(vm), LAST_VALUE(vw), FIRST_VALUE(vc), LAST_VALUE(vc), FIRST_VALUE(va),"
                    + " LAST_VALUE(ve), LAST_VALUE(vi) FILTER (WHERE fa), FIRST_VALUE(DISTINCT vs), "
                    + RETRACT_LISTAGGS;

    static Planned plan(String keyType, boolean changelog, boolean ferry, int batchSize) throws Exception {
        return plan(keyType, changelog, ferry, batchSize, AGGS, java.util.Map.of());
    }

    static Planned plan(String keyType, boolean changelog, boolean ferry, int batchSize, String aggs, java.util.Map<String, String> options)
            throws Exception {
        return plan(keyType, changelog, ferry, batchSize, aggs, options, VALUE_TYPES);
    }

    /** The group aggregate Flink (ferry false) or Ferry plans for {@code aggs} over the columns k and cols. */
    static Planned plan(String keyType, boolean changelog, boolean ferry, int batchSize, String aggs, java.util.Map<String, String> options,
            List<Col> cols) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, batchSize);
        tEnv.getConfig().set(FerryOptions.BATCH_MAX_DELAY, java.time.Duration.ofHours(1));
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        Ferry.install(tEnv);
        List<String> names = new ArrayList<>(List.of("k"));
        List<TypeInformation<?>> types = new ArrayList<>(List.of(typeInfo(keyType)));
        Schema.Builder schema = Schema.newBuilder().column("k", keyType);
        for (Col c : cols) {
            names.add(c.name());
            types.add(typeInfo(c.sqlType().replace(" NOT NULL", "")));
            schema.column(c.name(), c.sqlType());
        }
        RowTypeInfo rowType = new RowTypeInfo(types.toArray(new TypeInformation<?>[0]), names.toArray(new String[0]));
        // Only planned, never run: one placeholder row gives the stream its type.
        DataStream<Row> source = env.fromData(List.of(new Row(names.size())), rowType);
        Table t =
                tEnv.fromChangelogStream(
                        source,
                        schema.build(),
                        changelog ? ChangelogMode.all() : ChangelogMode.insertOnly());
        tEnv.createTemporaryView("T", t);
        Table result = tEnv.sqlQuery("SELECT k, " + aggs + " FROM T GROUP BY k");
        tEnv.toChangelogStream(result).print();
        StreamGraph graph = env.getStreamGraph();
        for (StreamNode node : graph.getStreamNodes()) {
            StreamOperatorFactory<?> factory = node.getOperatorFactory();
            if (!(factory instanceof SimpleOperatorFactory)) {
                continue;
            }
            Object op = ((SimpleOperatorFactory<?>) factory).getOperator();
            boolean stock = (op instanceof KeyedProcessOperator
                            && ((KeyedProcessOperator<?, ?, ?>) op).getUserFunction() instanceof GroupAggFunction)
                    || (op instanceof AsyncKeyedProcessOperator // async state on
                            && ((AsyncKeyedProcessOperator<?, ?, ?>) op).getUserFunction() instanceof AsyncStateGroupAggFunction)
                    || op instanceof KeyedMapBundleOperator; // MiniBatchGroupAggFunction
            if (stock || op instanceof FerryGroupAggregateOperator) {
                assertEquals(ferry, op instanceof FerryGroupAggregateOperator, "planned operator " + op);
                @SuppressWarnings("unchecked")
                KeySelector<RowData, RowData> selector = (KeySelector<RowData, RowData>) node.getStatePartitioners()[0];
                @SuppressWarnings("unchecked")
                OneInputStreamOperator<RowData, RowData> operator = (OneInputStreamOperator<RowData, RowData>) op;
                // The aggregate's own output (a Calc may follow it), from its serializer's field types.
                Field fieldTypes = RowDataSerializer.class.getDeclaredField("types");
                fieldTypes.setAccessible(true);
                RowType outputType = RowType.of((LogicalType[]) fieldTypes.get(node.getTypeSerializerOut()));
                // The harness feeds source rows: the aggregate must read them as they are.
                LogicalType[] in = (LogicalType[]) fieldTypes.get(node.getTypeSerializersIn()[0]);
                assertEquals(1 + cols.size(), in.length, "the aggregate reads the source row unchanged");
                return new Planned(operator, selector, ((RowDataKeySelector) selector).getProducedType(), outputType,
                        "forst".equals(options.get("state.backend.type")), cols);
            }
        }
        throw new AssertionError("no group aggregate in the plan");
    }

    static TypeInformation<?> typeInfo(String sqlType) {
        switch (sqlType) {
            case "BIGINT":
                return Types.LONG;
            case "INT":
                return Types.INT;
            case "SMALLINT":
                return Types.SHORT;
            case "TINYINT":
                return Types.BYTE;
            case "DOUBLE":
                return Types.DOUBLE;
            case "FLOAT":
                return Types.FLOAT;
            case "STRING":
                return Types.STRING;
            case "BOOLEAN":
                return Types.BOOLEAN;
            case "TINYINT NOT NULL": // a NOT NULL key: no NULL group
                return Types.BYTE;
            case "DATE":
                return Types.LOCAL_DATE;
            case "TIMESTAMP(3)":
            case "TIMESTAMP(6)":
            case "TIMESTAMP(9)":
                return Types.LOCAL_DATE_TIME;
            case "BYTES":
            case "BINARY(3)":
                return Types.PRIMITIVE_ARRAY(Types.BYTE);
            case "DECIMAL(10, 2)":
                return BigDecimalTypeInfo.of(10, 2);
            case "DECIMAL(38, 4)":
                return BigDecimalTypeInfo.of(38, 4);
            default:
                throw new IllegalArgumentException(sqlType);
        }
    }

    /** Random changelog rows over a small key domain. */
    static List<RowData> input(long seed, String keyType, boolean changelog, int n) {
        return input(seed, keyType, changelog, n, 0);
    }

    /** Random changelog rows over {@code keyDomain} keys (0: a small random domain). */
    static List<RowData> input(long seed, String keyType, boolean changelog, int n, int keyDomain) {
        return input(seed, keyType, changelog, n, keyDomain, VALUE_TYPES);
    }

    static List<RowData> input(long seed, String keyType, boolean changelog, int n, int keyDomain, List<Col> cols) {
        Random r = new Random(seed);
        List<RowData> rows = new ArrayList<>();
        List<RowData> sent = new ArrayList<>();
        int keys = 1 + r.nextInt(8);
        if (keyDomain > 0) {
            keys = keyDomain;
        }
        for (int i = 0; i < n; i++) {
            RowKind kind = RowKind.INSERT;
            GenericRowData row;
            int x = r.nextInt(10);
            if (changelog && x < 2 && !sent.isEmpty()) {
                GenericRowData old = (GenericRowData) sent.remove(r.nextInt(sent.size()));
                row = copy(old);
                kind = r.nextBoolean() ? RowKind.UPDATE_BEFORE : RowKind.DELETE;
            } else {
                row = newRow(r, keyType, keys, cols);
                if (changelog && x == 2) {
                    kind = r.nextBoolean() ? RowKind.UPDATE_BEFORE : RowKind.DELETE; // never accumulated
                } else if (changelog && x == 3) {
                    kind = RowKind.UPDATE_AFTER;
                }
                if (kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER) {
                    sent.add(row);
                }
            }
            row.setRowKind(kind);
            rows.add(row);
        }
        return rows;
    }

    /** A random row: a key of keyType from {@code keys} keys (or NULL), then a value per column. */
    static GenericRowData newRow(Random r, String keyType, int keys, List<Col> cols) {
        GenericRowData row = new GenericRowData(1 + cols.size());
        row.setField(0, key(r, keyType, keys));
        for (int c = 0; c < cols.size(); c++) {
            row.setField(1 + c, cols.get(c).gen().apply(r));
        }
        return row;
    }

    static GenericRowData copy(GenericRowData row) {
        GenericRowData c = new GenericRowData(row.getArity());
        for (int i = 0; i < row.getArity(); i++) {
            c.setField(i, row.getField(i));
        }
        return c;
    }

    static Object key(Random r, String keyType, int keys) {
        int k = r.nextInt(keys + 1);
        if (k == keys && !keyType.endsWith("NOT NULL")) {
            return null; // a NULL key is a group of its own
        }
        switch (keyType) {
            case "BIGINT":
                return (long) k * 1_000_000_007L;
            case "INT":
                return k - 3;
            case "STRING":
                return StringData.fromString(k % 2 == 0 ? "k" + k : "a longer key " + k + " ü😀");
            case "SMALLINT":
                return (short) (k * 4000 - 16000);
            case "TINYINT NOT NULL":
                return (byte) (k * 37 - 128);
            case "BOOLEAN":
                return k % 2 == 0;
            case "DATE":
                return k * 10_000 - 40_000; // days since 1970, before and after
            case "TIMESTAMP(3)":
                return TimestampData.fromEpochMillis(k * 86_400_123L - 300_000_000L);
            case "TIMESTAMP(9)":
                return TimestampData.fromEpochMillis(k * 86_400_123L - 300_000_000L, k * 111);
            case "BYTES": // lengths 0 to 7, prefixes of one another
                return Arrays.copyOf(new byte[] {(byte) 0x80, 0, 'k', (byte) 0xff, 1, 2, 3}, k % 8);
            case "BINARY(3)":
                return new byte[] {(byte) k, (byte) -k, 0};
            case "DECIMAL(10, 2)":
                return dec(BigDecimal.valueOf(k * 12_345_678L - 40_000_000L, 2), 10, 2);
            case "DECIMAL(38, 4)":
                return dec(k == 0 ? MAX38_4 : BigDecimal.valueOf(k * 1_000_000_007L, 4).negate(), 38, 4);
            default:
                throw new IllegalArgumentException(keyType);
        }
    }

    /** Runs rows through a fresh copy of the planned operator, snapshotting and restoring at the given row indices. */
    static List<String> run(Planned p, List<RowData> rows, int[] restoreAt) throws Exception {
        return run(p, rows, restoreAt, null);
    }

    /**
     * @param times processing time per row (non-decreasing), or null: Flink's state TTL reads its
     *     TTL clock, Ferry the processing-time service when a batch is processed, so each time step
     *     first flushes Ferry's batch (a checkpoint-barrier flush, harmless for Flink's operator)
     */
    static List<String> run(Planned p, List<RowData> rows, int[] restoreAt, long[] times) throws Exception {
        RowDataSerializer out = new RowDataSerializer(p.outputType());
        List<String> result = new ArrayList<>();
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = harness(p, out, null);
        long cp = 0;
        try {
            for (int i = 0; i < rows.size(); i++) {
                if (times != null && (i == 0 || times[i] != times[i - 1])) {
                    h.prepareSnapshotPreBarrier(++cp);
                    h.setProcessingTime(times[i]);
                    h.setStateTtlProcessingTime(times[i]);
                }
                if (Arrays.binarySearch(restoreAt, i) >= 0) {
                    h.prepareSnapshotPreBarrier(++cp);
                    OperatorSubtaskState state = h.snapshot(cp, cp);
                    collect(h, p.outputType(), result);
                    h.close();
                    h = harness(p, out, state);
                    if (times != null) {
                        h.setProcessingTime(times[i]);
                        h.setStateTtlProcessingTime(times[i]);
                    }
                }
                h.processElement(new StreamRecord<>(rows.get(i)));
            }
            h.prepareSnapshotPreBarrier(++cp); // flushes Ferry's last batch
        } catch (Exception e) {
            // Flink closes a failed task's operators without finishing them (the harness's close
            // would finish first): the operator must release everything native then
            try {
                h.getOperator().close();
            } catch (Exception closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        collect(h, p.outputType(), result);
        h.close();
        return result;
    }

    static KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> harness(
            Planned p, RowDataSerializer out, OperatorSubtaskState state) throws Exception {
        OneInputStreamOperator<RowData, RowData> operator = InstantiationUtil.clone(p.operator());
        // Flink's async-state operator needs its own harness, as Flink's HarnessTestBase does it
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h =
                operator instanceof AsyncKeyOrderedProcessingOperator
                        ? AsyncKeyedOneInputStreamOperatorTestHarness.create(operator, p.keySelector(), p.keyType())
                        : new KeyedOneInputStreamOperatorTestHarness<>(operator, p.keySelector(), p.keyType());
        HarnessMemory.outsideBudget(h); // miniBatchManyKeys' state outgrows the harness's 1.5 MiB
        if (p.forst()) {
            h.setStateBackend(new ForStStateBackend());
        }
        h.setup(out);
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        return h;
    }

    static void collect(KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h, RowType type, List<String> into) {
        for (RowData row : h.extractOutputValues()) {
            into.add(render(row, type));
        }
        h.getOutput().clear();
    }

    /** A row as text; NaN compares as NaN whatever its bits, -0.0 stays apart from 0.0. */
    static String render(RowData row, RowType type) {
        StringBuilder b = new StringBuilder(row.getRowKind().shortString()).append('[');
        for (int i = 0; i < type.getFieldCount(); i++) {
            if (i > 0) {
                b.append(", ");
            }
            LogicalType t = type.getTypeAt(i);
            Object v = RowData.createFieldGetter(t, i).getFieldOrNull(row);
            if (v instanceof Double && (Double) v == 0 && 1 / (Double) v < 0) {
                b.append("-0.0");
            } else if (v instanceof Float && (Float) v == 0 && 1 / (Float) v < 0) {
                b.append("-0.0f");
            } else if (v instanceof byte[]) {
                b.append(Arrays.toString((byte[]) v));
            } else {
                b.append(v);
                if (v instanceof Float) {
                    b.append('f');
                }
            }
        }
        return b.append(']').toString();
    }

    void check(String keyType, boolean changelog, long seeds) throws Exception {
        check(keyType, changelog, seeds, AGGS, java.util.Map.of(), false);
    }

    void check(String keyType, boolean changelog, long seeds, String aggs, java.util.Map<String, String> options, boolean clock)
            throws Exception {
        check(keyType, changelog, seeds, aggs, options, clock, new int[] {1, 3, 4096});
    }

    void check(String keyType, boolean changelog, long seeds, String aggs, java.util.Map<String, String> options, boolean clock,
            int[] batchSizes) throws Exception {
        check(keyType, changelog, seeds, aggs, options, clock, batchSizes, 400, 0);
    }

    void check(String keyType, boolean changelog, long seeds, String aggs, java.util.Map<String, String> options, boolean clock,
            int[] batchSizes, int rowCount, int keyDomain) throws Exception {
        check(keyType, changelog, seeds, aggs, options, clock, batchSizes, rowCount, keyDomain, VALUE_TYPES);
    }

    void check(String keyType, boolean changelog, long seeds, String aggs, java.util.Map<String, String> options, boolean clock,
            int[] batchSizes, int rowCount, int keyDomain, List<Col> cols) throws Exception {
        Planned stock = plan(keyType, changelog, false, 1, aggs, options, cols);
        for (int batch : batchSizes) {
            Planned ferry = plan(keyType, changelog, true, batch, aggs, options, cols);
            assertInstanceOf(FerryGroupAggregateOperator.class, ferry.operator());
            for (long seed = 0; seed < seeds; seed++) {
                List<RowData> rows = input(seed * 31 + batch, keyType, changelog, rowCount, keyDomain, cols);
                long[] times = null;
                if (clock) { // steps of up to 40 ms against a TTL of 50 ms
                    Random r = new Random(seed);
                    times = new long[rows.size()];
                    for (int i = 1; i < times.length; i++) {
                        times[i] = times[i - 1] + (r.nextInt(10) == 0 ? r.nextInt(40) : 0);
                    }
                }
                // ForSt restores no harness snapshot (its full snapshots are the canonical format it
                // refuses): FailoverTest restores ForSt checkpoints and savepoints in real jobs
                int[] restoreAt = stock.forst() ? new int[0] : new int[] {37, 100 + (int) (seed % 50), rowCount - 1};
                List<String> want = run(stock, rows, restoreAt, times);
                List<String> got = run(ferry, rows, restoreAt, times);
                assertTrue(want.size() > 0, "stock produced no output");
                if (stock.forst()) { // ForSt's asynchronous backend interleaves keys: compare per key
                    want = perKey(want);
                    got = perKey(got);
                }
                for (int i = 0; i < Math.min(want.size(), got.size()); i++) {
                    assertEquals(want.get(i), got.get(i),
                            "seed " + seed + " batch " + batch + ": first difference at output row " + i);
                }
                assertEquals(want.size(), got.size(), "seed " + seed + " batch " + batch + ": output length");
            }
        }
    }

    /**
     * Switching Ferry on across a snapshot: Flink's operator snapshotted mid-stream, then Flink's
     * and Ferry's restored from that snapshot and fed the rest. Ferry imports Flink's {@code
     * accState} ({@link FlinkAccState}) and its output must be Flink's, row for row: plain
     * accumulators of every value type on insert-only input, on retracting input with a COUNT(*)
     * and with the count1 Flink inserts, DISTINCT value sets (bits and counts, FILTER, idle-state
     * TTL per entry), MIN/MAX with retraction (their value→count MapViews), with and without
     * mini-batch (SavepointSwitchTest covers RocksDB in whole jobs). State Ferry does not import
     * (FIRST_VALUE, LAST_VALUE and LISTAGG with retraction keep other views) refuses to start,
     * naming the reason.
     */
    @Test
    void switchingOnAcrossASnapshot() throws Exception {
        switchOn("BIGINT", false, AGGS, java.util.Map.of());
        switchOn("INT", true, TwoPhaseAggregateDifferentialTest.RETRACTING_AGGS, java.util.Map.of());
        switchOn("STRING", true, TwoPhaseAggregateDifferentialTest.COUNT1_AGGS, java.util.Map.of());
        switchOn("DECIMAL(38, 4)", true, TwoPhaseAggregateDifferentialTest.RETRACTING_AGGS, miniBatch(7));
        switchOn("TIMESTAMP(9)", false, AGGS, miniBatch(100));
        switchOn("BIGINT", false, "STDDEV_POP(vb), VAR_SAMP(vd), STDDEV_SAMP(vf), COUNT(*), " + countOfEveryColumn(), java.util.Map.of());
        switchOn("INT", true, TwoPhaseAggregateDifferentialTest.RETRACTING_AGGS, TTL_50_MS);
        switchOn("STRING", true, TwoPhaseAggregateDifferentialTest.COUNT1_AGGS, TTL_50_MS);
        switchOn("BIGINT", false, DISTINCT_AND_FILTER_AGGS, java.util.Map.of());
        switchOn("STRING", true, TwoPhaseAggregateDifferentialTest.RETRACTING_DISTINCT_AGGS, java.util.Map.of());
        switchOn("INT", true, TwoPhaseAggregateDifferentialTest.RETRACTING_DISTINCT_AGGS, miniBatch(7));
        switchOn("BIGINT", false, DISTINCT_AND_FILTER_AGGS, TTL_50_MS);
        switchOn("INT", true, TwoPhaseAggregateDifferentialTest.RETRACTING_DISTINCT_AGGS, TTL_50_MS);

        switchOn("INT", true, AGGS, java.util.Map.of()); // MIN/MAX with retraction: their MapViews
        switchOn("STRING", true, EXTREME_AGGS + ", " + countOfEveryColumn(), TTL_50_MS);

        Planned stock = plan("INT", true, false, 64, RETRACT_FN_AGGS, java.util.Map.of());
        Planned ferry = plan("INT", true, true, 64, RETRACT_FN_AGGS, java.util.Map.of());
        OperatorSubtaskState state = stockSnapshot(stock, input(5, "INT", true, 300));
        Exception refused = assertThrows(Exception.class, () -> harness(ferry, new RowDataSerializer(stock.outputType()), state));
        String why = String.valueOf(refused.getMessage()) + refused.getCause();
        assertTrue(why.contains("holds managed keyed state of Flink's own operator (") && why.contains("accState")
                && why.contains("Flink keeps a data view of it in a MapState"), why);
    }

    private void switchOn(String keyType, boolean changelog, String aggs, java.util.Map<String, String> options) throws Exception {
        Planned stock = plan(keyType, changelog, false, 1, aggs, options);
        Planned ferry = plan(keyType, changelog, true, 64, aggs, options);
        assertInstanceOf(FerryGroupAggregateOperator.class, ferry.operator());
        List<RowData> rows = input(11, keyType, changelog, 800);
        int half = rows.size() / 2;
        OperatorSubtaskState state = stockSnapshot(stock, rows.subList(0, half));
        RowDataSerializer out = new RowDataSerializer(stock.outputType());
        List<List<String>> outs = new ArrayList<>();
        for (Planned restored : List.of(stock, ferry)) {
            long imported = FlinkAccState.importedKeys();
            KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = harness(restored, out, state);
            if (restored == ferry) {
                assertTrue(FlinkAccState.importedKeys() > imported, "Ferry imported Flink's accState");
            }
            feedAfterRestore(h, rows.subList(half, rows.size()), options);
            h.prepareSnapshotPreBarrier(2); // flushes Ferry's last batch
            List<String> result = new ArrayList<>();
            collect(h, stock.outputType(), result);
            h.close();
            outs.add(result);
        }
        String what = "GROUP BY " + keyType + (changelog ? " (changelog) " : " ") + options + ": " + aggs;
        assertTrue(outs.get(0).size() > 20, what + ": Flink's restored operator emitted " + outs.get(0).size());
        for (int i = 0; i < Math.min(outs.get(0).size(), outs.get(1).size()); i++) {
            assertEquals(outs.get(0).get(i), outs.get(1).get(i), what + ": first difference at output row " + i);
        }
        assertEquals(outs.get(0).size(), outs.get(1).size(), what + ": output length");
    }

    /**
     * Switching Ferry off across a savepoint: Ferry's operator savepointed mid-stream writes
     * Flink's {@code accState} instead of its own raw keyed state, and Flink's operator restored
     * from that savepoint continues exactly as Flink's own run does; Ferry's operator restored from
     * it imports the state back. A checkpoint (not a savepoint) stays in Ferry's form.
     */
    @Test
    void switchingOffAcrossASavepoint() throws Exception {
        switchOff("BIGINT", false, AGGS, java.util.Map.of());
        switchOff("INT", true, TwoPhaseAggregateDifferentialTest.RETRACTING_AGGS, java.util.Map.of());
        switchOff("STRING", true, TwoPhaseAggregateDifferentialTest.COUNT1_AGGS, java.util.Map.of());
        switchOff("DECIMAL(38, 4)", true, TwoPhaseAggregateDifferentialTest.RETRACTING_AGGS, miniBatch(7));
        switchOff("BIGINT", false, "STDDEV_POP(vb), VAR_SAMP(vd), STDDEV_SAMP(vf), COUNT(*), " + countOfEveryColumn(), java.util.Map.of());
        switchOff("INT", true, TwoPhaseAggregateDifferentialTest.RETRACTING_AGGS, TTL_50_MS);
        switchOff("BIGINT", false, AGGS, TTL_50_MS);
        switchOff("BIGINT", false, DISTINCT_AND_FILTER_AGGS, java.util.Map.of());
        switchOff("STRING", true, TwoPhaseAggregateDifferentialTest.RETRACTING_DISTINCT_AGGS, miniBatch(7));
        switchOff("BIGINT", false, DISTINCT_AND_FILTER_AGGS, TTL_50_MS);
        switchOff("INT", true, TwoPhaseAggregateDifferentialTest.RETRACTING_DISTINCT_AGGS, TTL_50_MS);
        switchOff("INT", true, AGGS, miniBatch(7));
        switchOff("STRING", true, EXTREME_AGGS + ", " + countOfEveryColumn(), TTL_50_MS);
    }

    private void switchOff(String keyType, boolean changelog, String aggs, java.util.Map<String, String> options) throws Exception {
        Planned stock = plan(keyType, changelog, false, 1, aggs, options);
        Planned ferry = plan(keyType, changelog, true, 64, aggs, options);
        List<RowData> rows = input(13, keyType, changelog, 800);
        int half = rows.size() / 2;
        RowDataSerializer out = new RowDataSerializer(stock.outputType());
        OperatorSubtaskState stockState = stockSnapshot(stock, rows.subList(0, half));

        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = harness(ferry, out, null);
        for (RowData row : rows.subList(0, half)) {
            h.processElement(new StreamRecord<>(row));
        }
        h.prepareSnapshotPreBarrier(1);
        OperatorSubtaskState checkpoint = h.snapshot(1, 1);
        OperatorSubtaskState savepoint =
                h.snapshotWithLocalState(2, 2, SavepointType.savepoint(SavepointFormatType.CANONICAL)).getJobManagerOwnedState();
        h.close();
        assertTrue(checkpoint.getRawKeyedState().hasState() && checkpoint.getManagedKeyedState().stream().allMatch(
                        k -> k.getStateSize() < 1024), "a checkpoint keeps Ferry's raw keyed state");
        assertTrue(!savepoint.getRawKeyedState().hasState(), "a savepoint holds no raw keyed state");

        String what = "GROUP BY " + keyType + (changelog ? " (changelog) " : " ") + options + ": " + aggs;
        List<String> want = continueFrom(stock, stockState, rows.subList(half, rows.size()), out, options);
        assertTrue(want.size() > 20, what + ": Flink's restored operator emitted " + want.size());
        for (Planned restored : List.of(stock, ferry)) {
            List<String> got = continueFrom(restored, savepoint, rows.subList(half, rows.size()), out, options);
            String who = (restored == stock ? "Flink's" : "Ferry's") + " operator from Ferry's savepoint, " + what;
            for (int i = 0; i < Math.min(want.size(), got.size()); i++) {
                assertEquals(want.get(i), got.get(i), who + ": first difference at output row " + i);
            }
            assertEquals(want.size(), got.size(), who + ": output length");
        }
    }

    /** Idle-state TTL of 50 ms, for the switching tests. */
    static final java.util.Map<String, String> TTL_50_MS = java.util.Map.of("table.exec.state.ttl", "50 ms");

    /**
     * Feeds the rows after a restore. With idle-state TTL ({@code options}) the clock moves: the
     * first third at 30 ms, the rest at 70 ms, so the keys the snapshot holds (written at 0) and
     * the first third does not touch expire (a barrier flushes Ferry's batch at each step).
     */
    static void feedAfterRestore(KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h, List<RowData> rows,
            java.util.Map<String, String> options) throws Exception {
        boolean clock = options.containsKey("table.exec.state.ttl");
        for (int i = 0; i < rows.size(); i++) {
            if (clock && (i == 0 || i == rows.size() / 3)) {
                long t = i == 0 ? 30 : 70;
                h.prepareSnapshotPreBarrier(100 + i);
                h.setProcessingTime(t);
                h.setStateTtlProcessingTime(t);
            }
            h.processElement(new StreamRecord<>(rows.get(i)));
        }
    }

    /** The output of {@code p} restored from {@code state} and fed {@code rows}. */
    static List<String> continueFrom(Planned p, OperatorSubtaskState state, List<RowData> rows, RowDataSerializer out,
            java.util.Map<String, String> options) throws Exception {
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = harness(p, out, state);
        feedAfterRestore(h, rows, options);
        h.prepareSnapshotPreBarrier(3);
        List<String> result = new ArrayList<>();
        collect(h, p.outputType(), result);
        h.close();
        return result;
    }

    /** A COUNT of every value column: the aggregate then reads the source row unchanged. */
    static String countOfEveryColumn() {
        List<String> calls = new ArrayList<>();
        for (Col c : VALUE_TYPES) {
            calls.add(c.name().startsWith("f") ? "COUNT(*) FILTER (WHERE " + c.name() + ")" : "COUNT(" + c.name() + ")");
        }
        return String.join(", ", calls);
    }

    /** A snapshot of Flink's operator {@code stock} after {@code rows}. */
    static OperatorSubtaskState stockSnapshot(Planned stock, List<RowData> rows) throws Exception {
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h =
                harness(stock, new RowDataSerializer(stock.outputType()), null);
        for (RowData row : rows) {
            h.processElement(new StreamRecord<>(row));
        }
        h.prepareSnapshotPreBarrier(1);
        OperatorSubtaskState state = h.snapshot(1, 1);
        h.close();
        return state;
    }

    /** The rows grouped by their first field (the key), each key's rows in their order. */
    static List<String> perKey(List<String> rows) {
        java.util.TreeMap<String, List<String>> keys = new java.util.TreeMap<>();
        for (String row : rows) {
            String key = row.substring(row.indexOf('[') + 1, row.indexOf(", "));
            keys.computeIfAbsent(key, k -> new ArrayList<>()).add(row);
        }
        List<String> out = new ArrayList<>();
        keys.values().forEach(out::addAll);
        return out;
    }

    @Test
    void distinctAndFilterInsertOnly() throws Exception {
        check("BIGINT", false, 4, DISTINCT_AND_FILTER_AGGS, java.util.Map.of(), false);
    }

    @Test
    void distinctAndFilterRetracting() throws Exception {
        check("STRING", true, 4, DISTINCT_AND_FILTER_AGGS, java.util.Map.of(), false);
    }

    @Test
    void idleStateTtl() throws Exception {
        java.util.Map<String, String> ttl = java.util.Map.of("table.exec.state.ttl", "50 ms");
        check("INT", true, 4, TTL_AGGS, ttl, true);
        check("BIGINT", false, 3, AGGS, ttl, true); // insert-only: plain MIN/MAX, no MapView
    }

    /**
     * Idle-state TTL with MapViews: DISTINCT value sets (bits and counts, with FILTER) and the
     * multisets of MIN/MAX with retraction expire entry by entry, apart from the accumulators.
     */
    @Test
    void idleStateTtlWithMapViews() throws Exception {
        java.util.Map<String, String> ttl = java.util.Map.of("table.exec.state.ttl", "50 ms");
        check("BIGINT", false, 3, DISTINCT_AND_FILTER_AGGS, ttl, true);
        check("INT", true, 3, DISTINCT_AND_FILTER_AGGS, ttl, true);
        check("STRING", true, 3, AGGS, ttl, true); // MIN/MAX with retraction over every type
        for (int size : new int[] {1, 7, 100}) {
            java.util.Map<String, String> mb = new java.util.HashMap<>(miniBatch(size));
            mb.put("table.exec.state.ttl", "50 ms");
            check("INT", true, 2, DISTINCT_AND_FILTER_AGGS, mb, true, new int[] {1});
            check("BIGINT", true, 2, AGGS, mb, true, new int[] {1});
        }
    }

    /**
     * Async state on: Ferry's operator against Flink's async-state GROUP BY on the heap backend,
     * whose state never expires whatever {@code table.exec.state.ttl} says (its descriptor's TTL is
     * dropped on the way to the heap backend: GroupAggregateKind#effectiveStateTtlMs). The TTL
     * clock steps past the retention many times; snapshots and restores in between.
     */
    @Test
    void asyncStateIgnoresTtlAsFlinkDoes() throws Exception {
        java.util.Map<String, String> async =
                java.util.Map.of("table.exec.async-state.enabled", "true", "table.exec.state.ttl", "50 ms");
        assertInstanceOf(AsyncKeyedProcessOperator.class, plan("INT", true, false, 1, TTL_AGGS, async).operator());
        check("INT", true, 3, TTL_AGGS, async, true);
        check("BIGINT", false, 3, AGGS, async, true); // insert-only: plain MIN/MAX, no DataView
        check("STRING", true, 2, TTL_AGGS, java.util.Map.of("table.exec.async-state.enabled", "true"), false);
    }

    /**
     * Async state on the ForSt backend: Flink's async-state GROUP BY runs on ForSt's asynchronous
     * backend, which applies the TTL; Ferry's operator, on ForSt's synchronous one, applies it too.
     */
    @Test
    void asyncStateOnForStAppliesTtl() throws Exception {
        java.util.Map<String, String> forst =
                java.util.Map.of("table.exec.async-state.enabled", "true", "table.exec.state.ttl", "50 ms",
                        "state.backend.type", "forst");
        check("INT", true, 2, TTL_AGGS, forst, true, new int[] {1, 4096});
    }

    /**
     * FIRST_VALUE/LAST_VALUE and LISTAGG with retraction (Flink's ...WithRetractAggFunction):
     * retractions of the first, last and middle occurrences, of values never accumulated, NULLs,
     * duplicates, DISTINCT and FILTER, snapshots mid-stream, one-phase mini-batch; LISTAGG's list
     * under idle-state TTL, its elements expiring one by one.
     */
    @Test
    void retractingFirstLastValueAndListAgg() throws Exception {
        check("STRING", true, 4, RETRACT_FN_AGGS, java.util.Map.of(), false);
        check("INT", true, 3, RETRACT_FN_AGGS, java.util.Map.of(), false, new int[] {2}, 1500, 3);
        java.util.Map<String, String> ttl = java.util.Map.of("table.exec.state.ttl", "50 ms");
        check("BIGINT", true, 4, RETRACT_LISTAGGS, ttl, true);
        for (int size : new int[] {1, 7, 100}) {
            check("STRING", true, 2, RETRACT_FN_AGGS, miniBatch(size), false, new int[] {1});
            java.util.Map<String, String> mb = new java.util.HashMap<>(miniBatch(size));
            mb.put("table.exec.state.ttl", "50 ms");
            check("INT", true, 2, RETRACT_LISTAGGS, mb, true, new int[] {1});
        }
    }

    @Test
    void insertOnlyBigintKeys() throws Exception {
        check("BIGINT", false, 6);
    }

    @Test
    void retractingIntKeys() throws Exception {
        check("INT", true, 6);
    }

    @Test
    void retractingStringKeys() throws Exception {
        check("STRING", true, 4);
    }

    /**
     * Random aggregate lists: calls drawn from the fixed lists above (DISTINCT sharing value sets
     * in any order, FILTERs, every value type), with a random key type, input kind and batch size.
     * A COUNT of every column is mixed in, so the aggregate reads the source row unchanged.
     * {@code -Dferry.differential.combos=N} runs N combinations (default 12) drawn with
     * {@code -Dferry.differential.seed=S} (default 2026).
     */
    @Test
    void randomAggregateLists() throws Exception {
        List<String> pool = new ArrayList<>();
        for (String list : List.of(AGGS, DISTINCT_AND_FILTER_AGGS)) {
            for (String call : list.split(",(?![^(]*\\))")) {
                pool.add(call.trim());
            }
        }
        List<String> keyTypes = List.of("BIGINT", "INT", "STRING", "SMALLINT", "TINYINT NOT NULL", "BOOLEAN", "DATE",
                "TIMESTAMP(3)", "TIMESTAMP(9)", "DECIMAL(10, 2)", "DECIMAL(38, 4)");
        int combos = Integer.getInteger("ferry.differential.combos", 12);
        Random r = new Random(Long.getLong("ferry.differential.seed", 2026));
        for (int combo = 0; combo < combos; combo++) {
            List<String> calls = new ArrayList<>();
            for (int n = 1 + r.nextInt(6); n > 0; n--) {
                calls.add(pool.get(r.nextInt(pool.size())));
            }
            for (Col c : VALUE_TYPES) {
                calls.add(c.name().startsWith("f") ? "COUNT(*) FILTER (WHERE " + c.name() + ")" : "COUNT(" + c.name() + ")");
            }
            java.util.Collections.shuffle(calls, r);
            String aggs = String.join(", ", calls);
            String keyType = keyTypes.get(r.nextInt(keyTypes.size()));
            boolean changelog = r.nextBoolean();
            int batch = new int[] {1, 2, 7, 64}[r.nextInt(4)];
            try {
                check(keyType, changelog, 2, aggs, java.util.Map.of(), false, new int[] {batch});
            } catch (AssertionError e) {
                throw new AssertionError("combo " + combo + ": GROUP BY " + keyType + (changelog ? " (changelog)" : "")
                        + ", batch " + batch + ": " + aggs + ": " + e.getMessage(), e);
            }
        }
    }

    static java.util.Map<String, String> miniBatch(int size) {
        return java.util.Map.of(
                "table.exec.mini-batch.enabled", "true",
                "table.exec.mini-batch.allow-latency", "1 s",
                "table.exec.mini-batch.size", Integer.toString(size),
                "table.optimizer.agg-phase-strategy", "ONE_PHASE");
    }

    /**
     * Mini-batch: Flink's KeyedMapBundleOperator running MiniBatchGroupAggFunction, bundles cut by
     * its count trigger (1, 3, 7 and 100 rows) and by checkpoint barriers; results per key per
     * bundle, keys in HashMap order.
     */
    @Test
    void miniBatch() throws Exception {
        for (int size : new int[] {1, 3, 7, 100}) {
            check("STRING", true, 3, AGGS, miniBatch(size), false, new int[] {1});
            check("BIGINT", false, 2, DISTINCT_AND_FILTER_AGGS, miniBatch(size), false, new int[] {1});
            check("DECIMAL(38, 4)", true, 2, DISTINCT_AND_FILTER_AGGS, miniBatch(size), false, new int[] {1});
            java.util.Map<String, String> ttl = new java.util.HashMap<>(miniBatch(size));
            ttl.put("table.exec.state.ttl", "50 ms");
            check("INT", true, 3, TTL_AGGS, ttl, true, new int[] {1}); // expiry between and within bundles
            check("BIGINT", false, 2, EXTREME_AGGS, ttl, true, new int[] {1}); // unchanged results re-emit
        }
    }

    /**
     * Mini-batch over thousands of keys: bundles of hundreds of distinct keys grow Flink's HashMap
     * table (it keeps its size from bundle to bundle, and starts over after a restore), which
     * decides the order in which keys emit.
     */
    @Test
    void miniBatchManyKeys() throws Exception {
        for (int size : new int[] {500, 2000}) {
            check("BIGINT", true, 1, AGGS, miniBatch(size), false, new int[] {1}, 6000, 3000);
            check("STRING", false, 1, DISTINCT_AND_FILTER_AGGS, miniBatch(size), false, new int[] {1}, 6000, 3000);
        }
    }

    /**
     * The value columns of the types added after {@link #VALUE_TYPES}: BOOLEAN (nullable), TIMESTAMP(6)
     * and TIMESTAMP(9) (digits below the millisecond, before and after the epoch), BYTES (empty,
     * prefixes, bytes above 0x7f), with INT, STRING and DECIMAL for SINGLE_VALUE, and a FILTER flag.
     */
    static final List<Col> NEW_VALUE_TYPES =
            List.of(
                    new Col("vi", "INT", VALUE_TYPES.get(1).gen()),
                    new Col("vc", "STRING", VALUE_TYPES.get(8).gen()),
                    new Col("vm", "DECIMAL(10, 2)", VALUE_TYPES.get(6).gen()),
                    new Col("bo", "BOOLEAN", r -> maybeNull(r, r.nextBoolean())),
                    new Col("t6", "TIMESTAMP(6)", r -> maybeNull(r, TimestampData.fromEpochMillis(
                            pick(r, -62_135_596_800_000L, 0L, -1L, (long) r.nextInt(20) - 10), r.nextInt(4) * 1000))),
                    new Col("t9", "TIMESTAMP(9)", r -> maybeNull(r, TimestampData.fromEpochMillis(
                            pick(r, 253_402_300_799_999L, 0L, -1L, (long) r.nextInt(6) - 3), pick(r, 0, 999_999, r.nextInt(5))))),
                    new Col("vy", "BYTES", r -> maybeNull(r, pick(r, new byte[0], new byte[] {(byte) 0xff},
                            new byte[] {0, (byte) 0x80}, new byte[] {(byte) r.nextInt(4)}))),
                    new Col("fa", "BOOLEAN NOT NULL", Random::nextBoolean));

    /** MIN/MAX over BOOLEAN, TIMESTAMP(6) and TIMESTAMP(9) (with FILTER), COUNT over BYTES. */
    static final String NEW_TYPES_AGGS =
            "MIN(bo), MAX(bo), MIN(t6), MAX(t6), MIN(t9), MAX(t9), MAX(bo) FILTER (WHERE fa), MIN(t9) FILTER (WHERE fa),"
                    + " COUNT(vy), COUNT(vy) FILTER (WHERE fa), COUNT(*), COUNT(vi), COUNT(vc), COUNT(vm)";

    /**
     * MIN/MAX over BOOLEAN and TIMESTAMP(p > 3), COUNT over BYTES, and BYTES/BINARY(3) keys:
     * insert-only (plain MIN/MAX) and retracting (their multisets), NULLs, snapshots, idle-state
     * TTL expiring the multisets' entries, mini-batch.
     */
    @Test
    void newValueAndKeyTypes() throws Exception {
        java.util.Map<String, String> none = java.util.Map.of();
        java.util.Map<String, String> ttl = java.util.Map.of("table.exec.state.ttl", "50 ms");
        int[] batches = {1, 3, 4096};
        check("BYTES", false, 2, NEW_TYPES_AGGS, none, false, batches, 400, 0, NEW_VALUE_TYPES);
        check("BINARY(3)", true, 2, NEW_TYPES_AGGS, none, false, batches, 400, 0, NEW_VALUE_TYPES);
        check("INT", true, 2, NEW_TYPES_AGGS, ttl, true, batches, 400, 0, NEW_VALUE_TYPES);
        check("BYTES", true, 2, NEW_TYPES_AGGS, miniBatch(7), false, new int[] {1}, 400, 0, NEW_VALUE_TYPES);
    }

    static final String SINGLE_VALUES = "SINGLE_VALUE(vi), SINGLE_VALUE(vc), SINGLE_VALUE(vm), SINGLE_VALUE(bo), SINGLE_VALUE(t6),"
            + " SINGLE_VALUE(t9), COUNT(vy), COUNT(*) FILTER (WHERE fa)";

    /**
     * Rows SINGLE_VALUE accepts over keyDomain keys: a key holds at most one row (an insert only
     * where it holds none, a retraction only of the row it holds), and a key never seen before may
     * start with a retraction of no row, which Flink ignores (per record, and in a bundle's leading
     * retractions). With {@code extra}, one more insert for a key that holds a row at the end,
     * which Flink throws on.
     */
    static List<RowData> singleValueInput(long seed, String keyType, int n, int keyDomain, boolean extra) {
        Random r = new Random(seed);
        java.util.Map<Object, GenericRowData> held = new java.util.HashMap<>();
        java.util.Set<Object> seen = new java.util.HashSet<>();
        List<RowData> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            GenericRowData row = newRow(r, keyType, keyDomain, NEW_VALUE_TYPES);
            Object k = row.getField(0) instanceof byte[] ? Arrays.toString((byte[]) row.getField(0)) : row.getField(0);
            if (held.containsKey(k)) {
                row = copy(held.remove(k));
                row.setRowKind(r.nextBoolean() ? RowKind.DELETE : RowKind.UPDATE_BEFORE);
            } else if (seen.add(k) && r.nextInt(4) == 0) {
                row.setRowKind(r.nextBoolean() ? RowKind.DELETE : RowKind.UPDATE_BEFORE);
            } else {
                row.setRowKind(r.nextBoolean() ? RowKind.INSERT : RowKind.UPDATE_AFTER);
                held.put(k, row);
            }
            rows.add(row);
        }
        if (extra) {
            GenericRowData first = held.values().iterator().next();
            GenericRowData second = newRow(r, keyType, keyDomain, NEW_VALUE_TYPES);
            second.setField(0, first.getField(0));
            rows.add(second);
        }
        return rows;
    }

    /**
     * SINGLE_VALUE over INT, STRING, DECIMAL, BOOLEAN and TIMESTAMP(6)/(9): a row per key, its
     * retraction and a retraction with no row before it must match Flink's changelog, with
     * snapshots, on BYTES and INT keys, per record and in mini-batches; a second row for a key
     * fails both operators with Flink's TableRuntimeException and message.
     */
    @Test
    void singleValue() throws Exception {
        for (java.util.Map<String, String> options : List.of(java.util.Map.<String, String>of(), miniBatch(5))) {
            for (String keyType : List.of("BYTES", "INT")) {
                Planned stock = plan(keyType, true, false, 1, SINGLE_VALUES, options, NEW_VALUE_TYPES);
                for (int batch : new int[] {1, 64}) {
                    Planned ferry = plan(keyType, true, true, batch, SINGLE_VALUES, options, NEW_VALUE_TYPES);
                    assertInstanceOf(FerryGroupAggregateOperator.class, ferry.operator());
                    for (long seed = 0; seed < 2; seed++) {
                        List<RowData> rows = singleValueInput(seed, keyType, 300, 40, false);
                        int[] restoreAt = {37, 150, 299};
                        List<String> want = run(stock, rows, restoreAt);
                        assertTrue(want.size() > 100, "Flink's output: " + want.size() + " rows");
                        assertEquals(want, run(ferry, rows, restoreAt), keyType + " " + options + ", batch " + batch);

                        List<RowData> bad = singleValueInput(seed, keyType, 300, 40, true);
                        for (Planned p : List.of(stock, ferry)) {
                            Exception e = assertThrows(Exception.class,
                                    () -> run(p, bad, new int[] {37}));
                            Throwable t = e;
                            while (t != null && !(t instanceof TableRuntimeException)) {
                                t = t.getCause();
                            }
                            assertNotNull(t, "no TableRuntimeException in " + e);
                            assertEquals("SingleValueAggFunction received more than one element.", t.getMessage());
                        }
                    }
                }
            }
        }
    }

    /** Every other key type Ferry hashes (BinaryRowData layout, key groups), NULL keys included. */
    @Test
    void otherKeyTypes() throws Exception {
        for (String keyType : List.of("SMALLINT", "TINYINT NOT NULL", "BOOLEAN", "DATE", "TIMESTAMP(3)", "TIMESTAMP(9)",
                "DECIMAL(10, 2)", "DECIMAL(38, 4)")) {
            check(keyType, true, 1, AGGS, java.util.Map.of(), false, new int[] {3});
        }
    }
}
