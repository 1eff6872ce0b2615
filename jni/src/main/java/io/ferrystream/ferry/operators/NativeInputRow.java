package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.data.utils.JoinedRowData;
import org.apache.flink.table.data.utils.ProjectedRowData;

/**
 * One input row as Go reads it ({@link NativeSpec.Input#type()}): the input's projection of
 * Flink's row, then its Java-String flags. A flag is TRUE where the string field it describes is
 * a {@link BinaryStringData} still holding its Java String ({@code getJavaObject() != null}), as
 * rows built in the JVM are until serialized; Flink's {@code BinaryStringData.compareTo} orders
 * two such strings by UTF-16 code units. Only a state backend that keeps live objects (the heap)
 * lets such strings reach Flink's accumulators, so {@code trackJavaStrings} false sets every flag
 * FALSE. A reused view: each {@link #of} replaces the previous row. Not thread-safe.
 */
public final class NativeInputRow {
    private final ProjectedRowData projected;
    private final int[] projection;
    private final int[] javaSources;
    private final boolean trackJavaStrings;
    private final GenericRowData flags;
    private final JoinedRowData joined = new JoinedRowData();

    public NativeInputRow(NativeSpec.Input input, boolean trackJavaStrings) {
        this.projection = input.projection();
        this.projected = ProjectedRowData.from(projection);
        this.javaSources = input.javaStringSources();
        this.trackJavaStrings = trackJavaStrings;
        this.flags = new GenericRowData(javaSources.length);
        for (int i = 0; i < javaSources.length; i++) {
            flags.setField(i, false);
        }
    }

    /** The view of {@code row}, valid until the next call. */
    public RowData of(RowData row) {
        RowData p = projected.replaceRow(row);
        if (javaSources.length == 0) {
            return p;
        }
        if (trackJavaStrings) {
            for (int i = 0; i < javaSources.length; i++) {
                flags.setField(i, holdsJavaString(p, javaSources[i]));
            }
        }
        joined.replace(p, flags);
        joined.setRowKind(row.getRowKind());
        return joined;
    }

    /**
     * Appends the view of {@code row} to {@code writer}: from a BinaryRowData (the form rows
     * arrive in after an exchange) without the view when there are no flags to add.
     */
    public void writeTo(RowDataArrowWriter writer, RowData row) {
        if (javaSources.length == 0 && row instanceof BinaryRowData
                && writer.writeProjected((BinaryRowData) row, projection)) {
            return;
        }
        writer.write(of(row));
    }

    private static boolean holdsJavaString(RowData row, int pos) {
        if (row.isNullAt(pos)) {
            return false;
        }
        StringData s = row.getString(pos);
        return s instanceof BinaryStringData && ((BinaryStringData) s).getJavaObject() != null;
    }
}
