package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.exchange.FerryFrame;
import io.ferrystream.ferry.nativelib.NativeLibrary;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.types.logical.BooleanType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The plan-time description of one native operator: what Ferry's operator spec (docs/abi.md) says
 * about it, except the subtask's key-group range, which {@link #toJson(int, int, int)} adds when
 * the operator opens. Built by the planner, serializable so it travels inside the operator.
 *
 * <p>A spec has a common part, the same for every kind (the kind, a name for messages, the inputs
 * with the row type Go sees and the key columns, and at open the max parallelism and key-group
 * range), and the kind's own parameters, which a subclass writes in {@link #writeParams}. The
 * document is built with the Jackson Flink ships (shaded, on every Flink class path), never by
 * hand; {@link #toJson} alone decides where the common part and the parameters go in it.
 *
 * <p>Each input crosses into Go as a projection of Flink's row ({@link Input#projection()}, only
 * the fields the kind reads), optionally followed by Java-String flags ({@link
 * Input#javaStringSources()}): a BOOLEAN NOT NULL field per string field whose Flink comparison
 * depends on whether the string still holds the Java String it was built from ({@link
 * NativeInputRow}). Key columns and the kind's field indices refer to that projected row.
 */
public abstract class NativeSpec implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Jackson, for writing spec documents; thread-safe once configured. */
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * System property: a JSON object every spec of this JVM carries as its {@code test} field
     * (fault injection, e.g. {@code {"panic":"process","once":true}}), only while the library's
     * test hooks are on ({@link NativeLibrary#TEST_HOOKS_PROPERTY}: a ferrytest build).
     */
    public static final String TEST_HOOKS_SPEC_PROPERTY = "ferry.test-hooks.spec";

    /** One input of a native operator: the fields that cross into Go and the key columns. */
    public static final class Input implements Serializable {
        private static final long serialVersionUID = 1L;

        private final int[] projection;
        private final int[] javaStringSources;
        private final RowType type;
        private final int[] keys;

        private Input(int[] projection, int[] javaStringSources, RowType type, int[] keys) {
            this.projection = projection;
            this.javaStringSources = javaStringSources;
            this.type = type;
            this.keys = keys;
        }

        /**
         * @param flinkType the row type of Flink's input
         * @param projection the fields of Flink's row that cross into Go, in Go's order
         * @param keys the key columns, as indices into the projected row (in key order)
         * @param javaStringSources per Java-String flag field (appended after the projected
         *     fields, named {@code <field>$java}), the projected string field it describes
         */
        public static Input of(RowType flinkType, int[] projection, int[] keys, int[] javaStringSources) {
            List<RowType.RowField> fields = new ArrayList<>(projection.length + javaStringSources.length);
            for (int p : projection) {
                fields.add(flinkType.getFields().get(p));
            }
            for (int src : javaStringSources) {
                fields.add(new RowType.RowField(fields.get(src).getName() + "$java", new BooleanType(false)));
            }
            for (int k : keys) {
                if (k < 0 || k >= fields.size()) {
                    throw new IllegalArgumentException("key column " + k + " outside the input's " + fields.size() + " fields");
                }
            }
            return new Input(projection.clone(), javaStringSources.clone(), new RowType(false, fields), keys.clone());
        }

        /** Every field of {@code flinkType} crosses into Go, in order, without Java-String flags. */
        public static Input whole(RowType flinkType, int[] keys) {
            return of(flinkType, firstFields(flinkType.getFieldCount()), keys, new int[0]);
        }

        /** The field indices 0 to {@code n - 1}. */
        public static int[] firstFields(int n) {
            int[] p = new int[n];
            for (int i = 0; i < n; i++) {
                p[i] = i;
            }
            return p;
        }

        /** The input fields that cross into Go, as indices into Flink's input row. */
        public int[] projection() {
            return projection.clone();
        }

        /**
         * Per Java-String flag field (they follow the projected fields), the projected field whose
         * string it describes.
         */
        public int[] javaStringSources() {
            return javaStringSources.clone();
        }

        /** The row type Go sees: the projected fields, then the Java-String flags. */
        public RowType type() {
            return type;
        }

        /** The key columns, as indices into {@link #type()}. */
        public int[] keys() {
            return keys.clone();
        }
    }

    private final String kind;
    private final String name;
    private final List<Input> inputs;
    /**
     * {@code table.exec.mini-batch.size} when input 0 is frames of the columnar exchange, whose
     * bundles the library then cuts itself ({@link FrameReadingSpec}); 0: rows.
     */
    private final long frameBundleSize;

    /**
     * @param kind the operator kind, as the library names it (e.g. {@code group_aggregate})
     * @param name the operator's description, used in messages
     * @param inputs the operator's inputs, in Flink's order (input 0 is Flink's first input)
     */
    protected NativeSpec(String kind, String name, List<Input> inputs) {
        this.kind = Objects.requireNonNull(kind);
        this.name = Objects.requireNonNull(name);
        if (inputs.isEmpty()) {
            throw new IllegalArgumentException("a native operator has at least one input");
        }
        this.inputs = List.copyOf(inputs);
        this.frameBundleSize = 0;
    }

    /**
     * {@code spec}'s kind, name and inputs, reading input 0 from frames of the columnar exchange
     * in bundles of {@code frameBundleSize} rows (0: rows); for a {@link FrameReadingSpec}'s copies.
     */
    protected NativeSpec(NativeSpec spec, long frameBundleSize) {
        if (frameBundleSize < 0) {
            throw new IllegalArgumentException("a bundle holds at least one row, not " + frameBundleSize);
        }
        this.kind = spec.kind;
        this.name = spec.name;
        this.inputs = spec.inputs;
        this.frameBundleSize = frameBundleSize;
    }

    /** The operator kind, as the library names it; also the key of Ferry's per-kind counters. */
    public final String kind() {
        return kind;
    }

    public final String name() {
        return name;
    }

    public final List<Input> inputs() {
        return inputs;
    }

    public final Input input(int i) {
        return inputs.get(i);
    }

    /**
     * The row type of input {@code i}'s Arrow batches: its {@link Input#type()}, unless the kind
     * reads that input's rows from frames of Ferry's columnar exchange (docs/abi.md#frames).
     */
    public RowType batchType(int i) {
        return i == 0 && readsFrames() ? FerryFrame.ROW_TYPE : inputs.get(i).type;
    }

    /** Whether input 0 is frames of the columnar exchange ({@link FrameReadingSpec#withFrames}). */
    public final boolean readsFrames() {
        return frameBundleSize > 0;
    }

    /** The bundle size of a spec reading frames ({@link #readsFrames}); 0 otherwise. */
    protected final long frameBundleSize() {
        return frameBundleSize;
    }

    /**
     * Writes the kind's own parameters into {@code params}, in the order the kind documents them
     * (docs/abi.md). Indices of fields refer to the projected input rows ({@link Input#type()}).
     */
    protected abstract void writeParams(ObjectNode params);

    /**
     * The spec JSON for a subtask owning key groups [keyGroupStart, keyGroupEnd] of
     * {@code maxParallelism}: the common header, {@code {"kind", "name", "inputs": [{"fields":
     * [...], "keys": [...]}, ...], "max_parallelism", "key_group_start", "key_group_end",
     * "params": {...}}}, with {@link #writeParams}'s object as {@code params}, plus {@code frames}
     * when the spec {@link #readsFrames} (docs/abi.md). The
     * library rejects unknown fields. Kinds never override this (tests do, to feed a kind's library
     * operator from two inputs).
     */
    public String toJson(int maxParallelism, int keyGroupStart, int keyGroupEnd) {
        ObjectNode spec = JSON.createObjectNode();
        spec.put("kind", kind);
        spec.put("name", name);
        ArrayNode in = spec.putArray("inputs");
        for (Input input : inputs) {
            ObjectNode i = in.addObject();
            i.set("fields", fields(input));
            i.set("keys", ints(input.keys));
        }
        spec.put("max_parallelism", maxParallelism);
        spec.put("key_group_start", keyGroupStart);
        spec.put("key_group_end", keyGroupEnd);
        ObjectNode params = spec.putObject("params");
        writeParams(params);
        if (readsFrames()) {
            params.putObject("frames").put("bundle_size", frameBundleSize);
        }
        try {
            String hooks = System.getProperty(TEST_HOOKS_SPEC_PROPERTY);
            if (hooks != null && NativeLibrary.load().options().testHooks()) {
                spec.set("test", JSON.readTree(hooks));
            }
            return JSON.writeValueAsString(spec);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("spec " + name + " could not be written as JSON", e);
        }
    }

    /** The input's fields as the spec lists them: name, Flink's type (not null), nullability. */
    private static ArrayNode fields(Input input) {
        ArrayNode fields = JSON.createArrayNode();
        for (RowType.RowField f : input.type.getFields()) {
            LogicalType t = f.getType();
            fields.addObject()
                    .put("name", f.getName())
                    .put("type", ArrowTypes.specTypeOf(t.copy(true)))
                    .put("nullable", t.isNullable());
        }
        return fields;
    }

    /** A JSON array of ints, e.g. for the kind's field indices. */
    protected static ArrayNode ints(int[] values) {
        ArrayNode a = JSON.createArrayNode();
        for (int v : values) {
            a.add(v);
        }
        return a;
    }

    /**
     * Opens this spec in libferry.so for a subtask owning key groups [keyGroupStart,
     * keyGroupEnd]: its JSON and the Arrow schema of its input batches, which the library checks
     * against the spec and {@link NativeOperator#process} checks every batch against. The
     * operators and the planner's support check open specs only through here.
     *
     * @param allocator the allocator imported output batches are counted against
     */
    public final NativeOperator open(int maxParallelism, int keyGroupStart, int keyGroupEnd, BufferAllocator allocator) {
        List<Schema> schemas = new ArrayList<>(inputs.size());
        for (int i = 0; i < inputs.size(); i++) {
            schemas.add(ArrowTypes.schemaOf(batchType(i)));
        }
        return NativeOperator.openInputs(toJson(maxParallelism, keyGroupStart, keyGroupEnd), schemas, allocator);
    }
}
