package io.ferrystream.ferry.arrow;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.flink.runtime.state.ttl.TtlValue;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.runtime.typeutils.ExternalSerializer;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RawType;
import org.apache.flink.table.types.logical.TimestampType;

/**
 * The distinct maps of Flink's two-phase partial rows as Ferry carries them (docs/abi.md, "Data
 * views"). Flink's local aggregate emits each DISTINCT argument list's map as a {@code RAW} field
 * holding a heap {@link MapView} from the argument's internal value (NULL included) to a {@code
 * Long} or {@code long[]} (DataViewUtils.createDistinctViewDataType); across Ferry's boundary it
 * is one VARBINARY value:
 *
 * <pre>
 * map   := words uint32 LE, entry*
 * entry := null byte (0 value, 1 NULL) [key] words × int64 LE
 * key   := VARCHAR/CHAR: uint32 LE length, UTF-8 bytes; BOOLEAN: 1 byte;
 *          other types: their Arrow value bytes (little-endian; FLOAT/DOUBLE with NaN canonical)
 * </pre>
 *
 * <p>{@code words} is 1 for a {@code Long} value, the array's length for a {@code long[]}.
 */
public final class DistinctViews {
    private DistinctViews() {}

    /**
     * Whether {@code type} is the type Flink gives a distinct map in a partial row: a RAW of
     * {@link MapView} whose ExternalSerializer's map has BIGINT or ARRAY&lt;BIGINT&gt; values and
     * a key type Ferry carries.
     */
    public static boolean isDistinctView(LogicalType type) {
        try {
            codecOf(type);
            return true;
        } catch (UnsupportedOperationException e) {
            return false;
        }
    }

    /** The codec of a distinct map's RAW type; UnsupportedOperationException for other types. */
    public static Codec codecOf(LogicalType type) {
        if (!(type instanceof RawType) || ((RawType<?>) type).getOriginatingClass() != MapView.class) {
            throw ArrowTypes.unsupported(type);
        }
        TypeSerializer<?> serializer = ((RawType<?>) type).getTypeSerializer();
        if (!(serializer instanceof ExternalSerializer)) {
            throw ArrowTypes.unsupported(type);
        }
        DataType view = ((ExternalSerializer<?, ?>) serializer).getDataType();
        if (view.getChildren().size() != 1 || !(view.getChildren().get(0).getLogicalType() instanceof MapType)) {
            throw ArrowTypes.unsupported(type);
        }
        MapType map = (MapType) view.getChildren().get(0).getLogicalType();
        LogicalType value = map.getValueType();
        boolean array = value instanceof ArrayType;
        LogicalType word = array ? ((ArrayType) value).getElementType() : value;
        if (word.getTypeRoot() != LogicalTypeRoot.BIGINT) {
            throw ArrowTypes.unsupported(type);
        }
        LogicalType key = ArrowTypes.carried(map.getKeyType());
        ArrowTypes.arrowTypeOf(key); // a key type Ferry carries
        @SuppressWarnings("unchecked")
        TypeSerializer<MapView<Object, Object>> s = (TypeSerializer<MapView<Object, Object>>) serializer;
        return new Codec(key, array, s);
    }

    /**
     * The codec of Flink's MapState {@code distinctAcc_<i>} of a key type Ferry carries, values
     * {@code long[]} when {@code array}, else {@code Long}; it has no RAW serializer.
     */
    public static Codec stateCodec(LogicalType keyType, boolean array) {
        LogicalType key = ArrowTypes.carried(keyType);
        ArrowTypes.arrowTypeOf(key);
        return new Codec(key, array, null);
    }

    /** Encodes and decodes the maps of one RAW type. Not thread-safe (reuses a buffer). */
    public static final class Codec {
        private final LogicalType keyType;
        private final boolean array;
        private final TypeSerializer<MapView<Object, Object>> serializer;
        private ByteBuffer buf = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);

        Codec(LogicalType keyType, boolean array, TypeSerializer<MapView<Object, Object>> serializer) {
            this.keyType = keyType;
            this.array = array;
            this.serializer = serializer;
        }

        /** The RAW type's serializer (Flink's ExternalSerializer of the MapView). */
        public TypeSerializer<MapView<Object, Object>> serializer() {
            return serializer;
        }

        /**
         * Encodes a map; the returned buffer (position 0, limit the size) is valid until the next
         * call.
         */
        public ByteBuffer encode(MapView<Object, Object> view) {
            buf.clear();
            appendMap(view);
            buf.flip();
            return buf;
        }

        /**
         * Encodes a MIN/MAX-with-retraction accumulator whose map this codec encodes ({@link
         * MinMaxAccumulators}): {@code min} (null: NULL), {@code mapSize}, then the map. The
         * returned buffer is valid until the next call.
         */
        ByteBuffer encodeAccumulator(Object min, long mapSize, MapView<Object, Object> view) {
            return encodeAccumulatorState(min, mapSize, view.getMap().entrySet(), false);
        }

        /**
         * Encodes a MIN/MAX-with-retraction accumulator as Flink's single-phase and global
         * aggregates keep it: {@code min} and {@code mapSize} from {@code accState}, the entries of
         * its MapState {@code agg<a>$map}, with {@code times} TtlValues whose last write follows
         * each count. The returned buffer is valid until the next call.
         */
        public ByteBuffer encodeAccumulatorState(Object min, long mapSize, Iterable<Map.Entry<Object, Object>> entries,
                boolean times) {
            buf.clear();
            ensure(1);
            if (min == null) {
                buf.put((byte) 1);
            } else {
                buf.put((byte) 0);
                putKey(min);
            }
            ensure(8);
            buf.putLong(mapSize);
            appendEntries(entries, times);
            buf.flip();
            return buf;
        }

        /**
         * Where the value bytes of the non-NULL key at {@code at} lie: {offset, length}, after its
         * length prefix when the type has one; IllegalArgumentException when they pass {@code end}.
         */
        private long[] keySpan(ArrowBuf data, long at, long end) {
            int n = keyWidth();
            if (n < 0) {
                need(at, 4, end);
                n = data.getInt(at);
                at += 4;
                if (n < 0) {
                    throw malformed("negative key length");
                }
            }
            need(at, n, end);
            return new long[] {at, n};
        }

        /**
         * Decodes an accumulator {@link #encodeAccumulator} wrote: {min, mapSize, map}, with
         * internal values; IllegalArgumentException when malformed.
         */
        Object[] decodeAccumulator(ArrowBuf data, long start, int len) {
            Map<Object, Object> map = new HashMap<>();
            Object[] acc = decodeAccumulatorState(data, start, len, false, (key, value, lastWrite) -> {
                if (key == null) {
                    throw malformed("a NULL value in the accumulator's map");
                }
                if (map.put(key, value) != null) {
                    throw malformed("duplicate key " + key);
                }
            });
            MapView<Object, Object> view = new MapView<>();
            view.setMap(map);
            return new Object[] {acc[0], acc[1], view};
        }

        /**
         * Decodes an accumulator {@link #encodeAccumulatorState} wrote: returns {min, mapSize}
         * and hands each entry of its map to {@code consumer}; IllegalArgumentException when
         * malformed.
         */
        public Object[] decodeAccumulatorState(ArrowBuf data, long start, int len, boolean times, EntryConsumer consumer) {
            long end = start + len;
            long at = start;
            need(at, 1, end);
            byte flag = data.getByte(at++);
            Object min = null;
            if (flag == 0) {
                long[] span = keySpan(data, at, end);
                min = key(data, span[0], (int) span[1]);
                at = span[0] + span[1];
            } else if (flag != 1) {
                throw malformed("NULL flag " + flag);
            }
            need(at, 8, end);
            long mapSize = data.getLong(at);
            at += 8;
            forEachEntry(data, at, (int) (end - at), times, consumer);
            return new Object[] {min, mapSize};
        }

        /** Appends the map's encoding to buf (the body of {@link #encode}). */
        private void appendMap(MapView<Object, Object> view) {
            appendEntries(view.getMap().entrySet(), false);
        }

        /**
         * Encodes the entries of Flink's MapState {@code distinctAcc_<i>}, values {@code Long} or
         * {@code long[]}; with {@code times} they are TtlValues and each entry's last write follows
         * its value (docs/state.md, "Switching Ferry on or off"). The returned buffer is valid
         * until the next call.
         */
        public ByteBuffer encodeState(Iterable<Map.Entry<Object, Object>> entries, boolean times) {
            buf.clear();
            appendEntries(entries, times);
            buf.flip();
            return buf;
        }

        private void appendEntries(Iterable<Map.Entry<Object, Object>> entries, boolean times) {
            int header = buf.position();
            int words = -1;
            ensure(4);
            buf.putInt(0); // words, patched below
            for (Map.Entry<Object, Object> e : entries) {
                Object k = e.getKey();
                Object v = e.getValue();
                long lastWrite = 0;
                if (times) {
                    TtlValue<?> t = (TtlValue<?>) v;
                    v = t.getUserValue();
                    lastWrite = t.getLastAccessTimestamp();
                }
                long[] a = null;
                int w = 1;
                if (array) {
                    a = (long[]) v;
                    w = a.length;
                }
                if (words < 0) {
                    words = w;
                } else if (w != words) {
                    throw new IllegalArgumentException("distinct map with values of " + words + " and " + w + " words");
                }
                ensure(1);
                if (k == null) {
                    buf.put((byte) 1);
                } else {
                    buf.put((byte) 0);
                    putKey(k);
                }
                ensure(8 * w + 8);
                if (a == null) {
                    buf.putLong((Long) v);
                } else {
                    for (long x : a) {
                        buf.putLong(x);
                    }
                }
                if (times) {
                    buf.putLong(lastWrite);
                }
            }
            buf.putInt(header, words < 0 ? (array ? 0 : 1) : words);
        }

        private void ensure(int n) {
            if (buf.remaining() < n) {
                ByteBuffer b = ByteBuffer.allocate(Math.max(buf.capacity() * 2, buf.position() + n)).order(ByteOrder.LITTLE_ENDIAN);
                buf.flip();
                b.put(buf);
                buf = b;
            }
        }

        private void putKey(Object k) {
            switch (keyType.getTypeRoot()) {
                case BOOLEAN:
                    ensure(1);
                    buf.put((byte) ((Boolean) k ? 1 : 0));
                    return;
                case TINYINT:
                    ensure(1);
                    buf.put((Byte) k);
                    return;
                case SMALLINT:
                    ensure(2);
                    buf.putShort((Short) k);
                    return;
                case INTEGER:
                case DATE:
                    ensure(4);
                    buf.putInt((Integer) k);
                    return;
                case BIGINT:
                    ensure(8);
                    buf.putLong((Long) k);
                    return;
                case FLOAT:
                    ensure(4);
                    buf.putInt(Float.floatToIntBits((Float) k));
                    return;
                case DOUBLE:
                    ensure(8);
                    buf.putLong(Double.doubleToLongBits((Double) k));
                    return;
                case DECIMAL: {
                    DecimalData d = (DecimalData) k;
                    BigInteger u = d.toBigDecimal().unscaledValue();
                    ensure(16);
                    long lo = u.longValue();
                    long hi = u.shiftRight(64).longValue();
                    buf.putLong(lo);
                    buf.putLong(hi);
                    return;
                }
                case CHAR:
                case VARCHAR: {
                    byte[] b = ((StringData) k).toBytes();
                    ensure(4 + b.length);
                    buf.putInt(b.length);
                    buf.put(b);
                    return;
                }
                case TIMESTAMP_WITHOUT_TIME_ZONE: {
                    TimestampData ts = (TimestampData) k;
                    ensure(12);
                    buf.putLong(ts.getMillisecond());
                    if (((TimestampType) keyType).getPrecision() > 3) {
                        buf.putInt(ts.getNanoOfMillisecond());
                    }
                    return;
                }
                default:
                    throw ArrowTypes.unsupported(keyType);
            }
        }

        /**
         * Decodes the map of {@code len} bytes at {@code start} of {@code data}, with internal
         * keys as Flink's local aggregate puts them; IllegalArgumentException when malformed.
         */
        public MapView<Object, Object> decode(ArrowBuf data, long start, int len) {
            Map<Object, Object> map = new HashMap<>();
            forEachEntry(data, start, len, false, (key, value, lastWrite) -> {
                if (map.put(key, value) != null) {
                    throw malformed("duplicate key " + key);
                }
            });
            MapView<Object, Object> view = new MapView<>();
            view.setMap(map);
            return view;
        }

        /** Receives the entries of an encoded map. */
        public interface EntryConsumer {
            /**
             * @param key the internal value, null for NULL
             * @param value {@code Long} or {@code long[]}
             * @param lastWrite the entry's last write (ms) in the state form with times, else 0
             */
            void accept(Object key, Object value, long lastWrite);
        }

        /**
         * Walks the map of {@code len} bytes at {@code start} of {@code data}, in the state form
         * ({@link #encodeState}) when {@code times}; IllegalArgumentException when malformed.
         */
        public void forEachEntry(ArrowBuf data, long start, int len, boolean times, EntryConsumer consumer) {
            long end = start + len;
            long at = start;
            if (len < 4) {
                throw malformed("no header");
            }
            int words = data.getInt(at);
            at += 4;
            if (words < 0 || (!array && words != 1)) {
                throw malformed("values of " + words + " words");
            }
            while (at < end) {
                byte flag = data.getByte(at++);
                Object key = null;
                if (flag == 0) {
                    long[] span = keySpan(data, at, end);
                    key = key(data, span[0], (int) span[1]);
                    at = span[0] + span[1];
                } else if (flag != 1) {
                    throw malformed("NULL flag " + flag);
                }
                need(at, 8L * words + (times ? 8 : 0), end);
                Object value;
                if (array) {
                    long[] a = new long[words];
                    for (int w = 0; w < words; w++) {
                        a[w] = data.getLong(at + 8L * w);
                    }
                    value = a;
                } else {
                    value = data.getLong(at);
                }
                at += 8L * words;
                long lastWrite = 0;
                if (times) {
                    lastWrite = data.getLong(at);
                    at += 8;
                }
                consumer.accept(key, value, lastWrite);
            }
        }

        private static void need(long at, long n, long end) {
            if (at + n > end) {
                throw malformed("entry truncated");
            }
        }

        private static IllegalArgumentException malformed(String what) {
            return new IllegalArgumentException("malformed distinct map from libferry: " + what);
        }

        /** The byte width of a key, -1 for length-prefixed strings. */
        private int keyWidth() {
            switch (keyType.getTypeRoot()) {
                case BOOLEAN:
                case TINYINT:
                    return 1;
                case SMALLINT:
                    return 2;
                case INTEGER:
                case DATE:
                case FLOAT:
                    return 4;
                case BIGINT:
                case DOUBLE:
                    return 8;
                case DECIMAL:
                    return 16;
                case TIMESTAMP_WITHOUT_TIME_ZONE:
                    return ((TimestampType) keyType).getPrecision() > 3 ? 12 : 8;
                default:
                    return -1;
            }
        }

        private Object key(ArrowBuf data, long at, int n) {
            switch (keyType.getTypeRoot()) {
                case BOOLEAN:
                    return data.getByte(at) != 0;
                case TINYINT:
                    return data.getByte(at);
                case SMALLINT:
                    return data.getShort(at);
                case INTEGER:
                case DATE:
                    return data.getInt(at);
                case BIGINT:
                    return data.getLong(at);
                case FLOAT:
                    return data.getFloat(at);
                case DOUBLE:
                    return data.getDouble(at);
                case DECIMAL: {
                    DecimalType d = (DecimalType) keyType;
                    long lo = data.getLong(at);
                    long hi = data.getLong(at + 8);
                    if (DecimalData.isCompact(d.getPrecision())) {
                        return DecimalData.fromUnscaledLong(lo, d.getPrecision(), d.getScale());
                    }
                    BigInteger u = BigInteger.valueOf(hi).shiftLeft(64).or(BigInteger.valueOf(lo).and(MASK64));
                    return DecimalData.fromBigDecimal(new java.math.BigDecimal(u, d.getScale()), d.getPrecision(), d.getScale());
                }
                case CHAR:
                case VARCHAR: {
                    byte[] b = new byte[n];
                    data.getBytes(at, b, 0, n);
                    return BinaryStringData.fromBytes(b);
                }
                case TIMESTAMP_WITHOUT_TIME_ZONE:
                    return TimestampData.fromEpochMillis(data.getLong(at), n == 12 ? data.getInt(at + 8) : 0);
                default:
                    throw ArrowTypes.unsupported(keyType);
            }
        }

        private static final BigInteger MASK64 = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);
    }
}
