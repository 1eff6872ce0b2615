package io.ferrystream.ferry.kinds.lookupjoin;

import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.Arrays;

/**
 * Builds a probe row's lookup key row as Flink's generated fetcher does: one value per lookup key
 * in ascending dim-column order, a probe field ({@code FieldRef}) or a constant ({@code Constant},
 * internal data); a row with a NULL in any key (constants included) is not looked up.
 *
 * <p>Serializable with its operator: constants travel as bytes of Flink's row serializer.
 */
public final class LookupKeys implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Per key: its dim column (ascending). */
    private final int[] dims;
    /** Per key: the probe field it reads, or -1 for a constant. */
    private final int[] fields;
    /** Per key: its type (the probe field's, or the constant's). */
    private final LogicalType[] types;
    /** The constants as one row (NULL at field positions), serialized. */
    private final byte[] constants;

    private transient RowData.FieldGetter[] getters;
    private transient GenericRowData constantRow;

    /**
     * @param dims per key: its dim column, ascending
     * @param fields per key in dim order: the probe field index, or -1 for a constant
     * @param types per key: the probe field's type, or the constant's
     * @param constantValues per key: the constant's internal value (null for a field key, or a NULL constant)
     */
    public LookupKeys(int[] dims, int[] fields, LogicalType[] types, Object[] constantValues) {
        if (fields.length != dims.length || fields.length != types.length || fields.length != constantValues.length) {
            throw new IllegalArgumentException("one dim column, field, type and constant per key");
        }
        this.dims = dims.clone();
        this.fields = fields.clone();
        this.types = types.clone();
        GenericRowData row = GenericRowData.of(constantValues.clone());
        DataOutputSerializer out = new DataOutputSerializer(64);
        try {
            new RowDataSerializer(types).serialize(row, out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        this.constants = out.getCopyOfBuffer();
    }

    /** The dim column per key, ascending. */
    public int[] dims() {
        return dims.clone();
    }

    /** The probe field per key in dim order, -1 for a constant. */
    public int[] fields() {
        return fields.clone();
    }

    /** The key row type, for a fetcher (names k0, k1, ...). */
    public RowType keyType() {
        String[] names = new String[types.length];
        for (int i = 0; i < names.length; i++) {
            names[i] = "k" + i;
        }
        return RowType.of(types, names);
    }

    /** The key row of {@code probe}, a new row, or null when a key is NULL (the row is not looked up). */
    @Nullable
    public RowData keyRow(RowData probe) {
        if (getters == null) {
            init();
        }
        GenericRowData key = new GenericRowData(fields.length);
        for (int i = 0; i < fields.length; i++) {
            Object v = fields[i] < 0 ? constantRow.getField(i) : getters[i].getFieldOrNull(probe);
            if (v == null) {
                return null;
            }
            key.setField(i, v);
        }
        return key;
    }

    private void init() {
        try {
            constantRow = toGeneric(new RowDataSerializer(types).deserialize(new DataInputDeserializer(constants)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        RowData.FieldGetter[] g = new RowData.FieldGetter[fields.length];
        for (int i = 0; i < fields.length; i++) {
            if (fields[i] >= 0) {
                g[i] = RowData.createFieldGetter(types[i], fields[i]);
            }
        }
        getters = g;
    }

    private GenericRowData toGeneric(RowData row) {
        GenericRowData g = new GenericRowData(types.length);
        for (int i = 0; i < types.length; i++) {
            g.setField(i, RowData.createFieldGetter(types[i], i).getFieldOrNull(row));
        }
        return g;
    }

    @Override
    public String toString() {
        return "LookupKeys(dims " + Arrays.toString(dims) + ", fields " + Arrays.toString(fields) + ")";
    }
}
