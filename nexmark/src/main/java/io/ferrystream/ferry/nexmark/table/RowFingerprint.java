package io.ferrystream.ferry.nexmark.table;

import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import java.io.Serializable;

/**
 * A 64-bit hash of a row's values, whatever class holds them: the same values give the same
 * hash from Flink's generic rows, its binary rows, joined rows or Ferry's output rows, because each
 * field is read through its type (strings by their UTF-8 bytes, timestamps by milliseconds and
 * nanoseconds, decimals by unscaled value and scale, floating point by its bits) and never by the
 * row's memory layout. The row kind is not part of it. Types a Nexmark result never has (rows,
 * arrays, maps, multisets, raw) are refused at construction.
 */
final class RowFingerprint implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final long NULL = 0x6e756c6c6e756c6cL;

    private final LogicalType[] types;

    RowFingerprint(RowType type) {
        types = type.getChildren().toArray(new LogicalType[0]);
        for (int i = 0; i < types.length; i++) {
            switch (types[i].getTypeRoot()) {
                case BOOLEAN, TINYINT, SMALLINT, INTEGER, DATE, TIME_WITHOUT_TIME_ZONE, INTERVAL_YEAR_MONTH, BIGINT,
                        INTERVAL_DAY_TIME, FLOAT, DOUBLE, CHAR, VARCHAR, BINARY, VARBINARY, DECIMAL,
                        TIMESTAMP_WITHOUT_TIME_ZONE, TIMESTAMP_WITH_LOCAL_TIME_ZONE -> { }
                default -> throw new IllegalArgumentException("nexmark-checksum: column " + type.getFieldNames().get(i)
                        + " has type " + types[i].asSummaryString() + ", which the checksum does not read");
            }
        }
    }

    long hash(RowData row) {
        if (row.getArity() != types.length) {
            throw new IllegalStateException("nexmark-checksum: a row of " + row.getArity() + " fields, the table has " + types.length);
        }
        long h = 0x4e65786d61726b21L;
        for (int i = 0; i < types.length; i++) {
            h = mix(h + 0x9e3779b97f4a7c15L * (i + 1) ^ (row.isNullAt(i) ? NULL : field(row, i, types[i])));
        }
        return mix(h ^ types.length);
    }

    private static long field(RowData row, int i, LogicalType type) {
        return switch (type.getTypeRoot()) {
            case BOOLEAN -> row.getBoolean(i) ? 1 : 2;
            case TINYINT -> row.getByte(i);
            case SMALLINT -> row.getShort(i);
            case INTEGER, DATE, TIME_WITHOUT_TIME_ZONE, INTERVAL_YEAR_MONTH -> row.getInt(i);
            case BIGINT, INTERVAL_DAY_TIME -> row.getLong(i);
            case FLOAT -> Float.floatToRawIntBits(row.getFloat(i));
            case DOUBLE -> Double.doubleToRawLongBits(row.getDouble(i));
            case CHAR, VARCHAR -> string(row.getString(i));
            case BINARY, VARBINARY -> bytes(row.getBinary(i));
            case DECIMAL -> decimal(row, i, (DecimalType) type);
            case TIMESTAMP_WITHOUT_TIME_ZONE, TIMESTAMP_WITH_LOCAL_TIME_ZONE -> timestamp(row, i, type);
            default -> throw new IllegalStateException("unreachable: " + type);
        };
    }

    private static long decimal(RowData row, int i, DecimalType type) {
        DecimalData d = row.getDecimal(i, type.getPrecision(), type.getScale());
        return DecimalData.isCompact(type.getPrecision()) ? d.toUnscaledLong() : bytes(d.toUnscaledBytes());
    }

    private static long timestamp(RowData row, int i, LogicalType type) {
        int precision = type instanceof org.apache.flink.table.types.logical.TimestampType t ? t.getPrecision()
                : ((org.apache.flink.table.types.logical.LocalZonedTimestampType) type).getPrecision();
        TimestampData t = row.getTimestamp(i, precision);
        return mix(t.getMillisecond()) ^ t.getNanoOfMillisecond();
    }

    /** The UTF-8 bytes of a string, read in place when it is one binary segment. */
    private static long string(StringData s) {
        if (s instanceof BinaryStringData b) {
            b.ensureMaterialized();
            MemorySegment[] segments = b.getSegments();
            if (segments.length == 1) {
                return segment(segments[0], b.getOffset(), b.getSizeInBytes());
            }
        }
        return bytes(s.toBytes());
    }

    private static long segment(MemorySegment segment, int offset, int length) {
        long h = length;
        int i = 0;
        for (; i + 8 <= length; i += 8) {
            h = mix(h ^ segment.getLongLittleEndian(offset + i));
        }
        long tail = 0;
        for (int shift = 0; i < length; i++, shift += 8) {
            tail |= (segment.get(offset + i) & 0xffL) << shift;
        }
        return mix(h ^ tail ^ 0x5bd1e995L);
    }

    private static long bytes(byte[] b) {
        long h = b.length;
        int i = 0;
        for (; i + 8 <= b.length; i += 8) {
            long w = 0;
            for (int k = 7; k >= 0; k--) {
                w = w << 8 | (b[i + k] & 0xffL);
            }
            h = mix(h ^ w);
        }
        long tail = 0;
        for (int shift = 0; i < b.length; i++, shift += 8) {
            tail |= (b[i] & 0xffL) << shift;
        }
        return mix(h ^ tail ^ 0x5bd1e995L);
    }

    /** SplitMix64's finalizer. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
