package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.nativelib.NativeLibrary;

import org.apache.flink.table.types.logical.BooleanType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeFamily;
import org.apache.flink.table.types.logical.RowType;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The plan-time description of one native group aggregate: everything of Ferry's operator spec
 * (docs/abi.md) except the subtask's key-group range, which {@link #toJson(int, int, int)} adds
 * when the operator opens. Built by the planner from Flink's {@code StreamExecGroupAggregate}
 * arguments; serializable so it travels inside the operator.
 *
 * <p>Only the fields the aggregation reads cross into Go: {@link #projection()} lists them (keys
 * first, then arguments and FILTER fields, each once), and the spec's indices refer to that
 * projected row. After them come the Java-String flags: for each string argument of MIN or MAX,
 * a BOOLEAN NOT NULL field (listed by {@link #javaStringSources()}) that is TRUE where the string
 * still holds the Java String it was built from — Flink compares two such strings in UTF-16
 * order, any other pair by UTF-8 bytes (docs/operators/group-by.md).
 */
public final class GroupAggregateSpec implements Serializable {
    private static final long serialVersionUID = 1L;

    /** One aggregate call, in Flink's {@code aggCalls} order. */
    public static final class Call implements Serializable {
        private static final long serialVersionUID = 1L;

        /** {@code COUNT}, {@code SUM}, {@code AVG}, {@code MIN} or {@code MAX}. */
        public final String function;
        /** Argument field indices of the input row; empty for {@code COUNT(*)}. */
        public final int[] args;
        /** Flink's {@code aggCallNeedRetractions[i]}: use the retracting variant. */
        public final boolean retract;
        /** Output field name. */
        public final String name;
        /** DISTINCT: the call sees each argument value once per key. */
        public final boolean distinct;
        /** The BOOLEAN field of FILTER (WHERE ...), or -1. */
        public final int filter;
        /** The Java-String flag field of a MIN/MAX string argument, or -1. */
        final int javaStrings;

        public Call(String function, int[] args, boolean retract, String name) {
            this(function, args, retract, name, false, -1);
        }

        public Call(String function, int[] args, boolean retract, String name, boolean distinct, int filter) {
            this(function, args, retract, name, distinct, filter, -1);
        }

        private Call(String function, int[] args, boolean retract, String name, boolean distinct, int filter, int javaStrings) {
            this.function = Objects.requireNonNull(function);
            this.args = args.clone();
            this.retract = retract;
            this.name = Objects.requireNonNull(name);
            this.distinct = distinct;
            this.filter = filter;
            this.javaStrings = javaStrings;
        }
    }

    private final String name;
    private final int[] projection;
    private final int[] javaStringSources;
    private final RowType inputType;
    private final int[] grouping;
    private final List<Call> calls;
    private final boolean needRetraction;
    private final boolean generateUpdateBefore;
    private final long stateTtlMs;
    private final boolean miniBatch;

    /**
     * @param name the operator's description, used in messages
     * @param fullInputType the input row type of Flink's aggregate
     * @param grouping Flink's grouping field indices into fullInputType
     * @param calls the aggregate calls, their arguments indexing fullInputType
     * @param miniBatch whether each batch is one bundle of Flink's mini-batch aggregate
     */
    public GroupAggregateSpec(
            String name,
            RowType fullInputType,
            int[] grouping,
            List<Call> calls,
            boolean needRetraction,
            boolean generateUpdateBefore,
            long stateTtlMs,
            boolean miniBatch) {
        this.name = Objects.requireNonNull(name);
        List<Integer> used = new ArrayList<>();
        for (int g : grouping) {
            if (!used.contains(g)) {
                used.add(g);
            }
        }
        for (Call c : calls) {
            for (int a : c.args) {
                if (!used.contains(a)) {
                    used.add(a);
                }
            }
            if (c.filter >= 0 && !used.contains(c.filter)) {
                used.add(c.filter);
            }
        }
        this.projection = used.stream().mapToInt(Integer::intValue).toArray();
        List<RowType.RowField> fields = new ArrayList<>();
        for (int p : projection) {
            fields.add(fullInputType.getFields().get(p));
        }
        this.grouping = new int[grouping.length];
        for (int i = 0; i < grouping.length; i++) {
            this.grouping[i] = used.indexOf(grouping[i]);
        }
        List<Integer> javaSources = new ArrayList<>();
        List<Call> remapped = new ArrayList<>();
        for (Call c : calls) {
            int[] args = new int[c.args.length];
            for (int i = 0; i < args.length; i++) {
                args[i] = used.indexOf(c.args[i]);
            }
            int javaStrings = -1;
            if ((c.function.equals("MIN") || c.function.equals("MAX")) && args.length == 1
                    && fields.get(args[0]).getType().is(LogicalTypeFamily.CHARACTER_STRING)) {
                if (!javaSources.contains(args[0])) {
                    javaSources.add(args[0]);
                }
                javaStrings = projection.length + javaSources.indexOf(args[0]);
            }
            remapped.add(new Call(c.function, args, c.retract, c.name, c.distinct,
                    c.filter < 0 ? -1 : used.indexOf(c.filter), javaStrings));
        }
        this.javaStringSources = javaSources.stream().mapToInt(Integer::intValue).toArray();
        for (int src : javaStringSources) {
            fields.add(new RowType.RowField(fields.get(src).getName() + "$java", new BooleanType(false)));
        }
        this.inputType = new RowType(false, fields);
        this.calls = List.copyOf(remapped);
        this.needRetraction = needRetraction;
        this.generateUpdateBefore = generateUpdateBefore;
        this.stateTtlMs = stateTtlMs;
        this.miniBatch = miniBatch;
    }

    /** Whether each batch is one bundle of Flink's mini-batch aggregate (MiniBatchGroupAggFunction). */
    public boolean miniBatch() {
        return miniBatch;
    }

    public String name() {
        return name;
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

    /** The projected input row type Go sees, Java-String flags included. */
    public RowType inputType() {
        return inputType;
    }

    /**
     * The spec JSON for a subtask owning key groups [keyGroupStart, keyGroupEnd] (docs/abi.md):
     * the common header with the one input, then the group aggregate's params.
     */
    public String toJson(int maxParallelism, int keyGroupStart, int keyGroupEnd) {
        StringBuilder b = new StringBuilder(256);
        b.append("{\"kind\":\"group_aggregate\",\"name\":");
        NativeLibrary.appendJsonString(b, name);
        b.append(",\"inputs\":[{\"fields\":[");
        List<RowType.RowField> fields = inputType.getFields();
        for (int i = 0; i < fields.size(); i++) {
            LogicalType t = fields.get(i).getType();
            if (i > 0) {
                b.append(',');
            }
            b.append("{\"name\":");
            NativeLibrary.appendJsonString(b, fields.get(i).getName());
            b.append(",\"type\":");
            NativeLibrary.appendJsonString(b, t.copy(true).asSerializableString());
            b.append(",\"nullable\":").append(t.isNullable()).append('}');
        }
        b.append("],\"keys\":").append(ints(grouping)).append("}]");
        b.append(",\"max_parallelism\":").append(maxParallelism);
        b.append(",\"key_group_start\":").append(keyGroupStart);
        b.append(",\"key_group_end\":").append(keyGroupEnd);
        b.append(",\"params\":{\"aggs\":[");
        for (int i = 0; i < calls.size(); i++) {
            Call c = calls.get(i);
            if (i > 0) {
                b.append(',');
            }
            b.append("{\"func\":");
            NativeLibrary.appendJsonString(b, c.function);
            b.append(",\"args\":").append(ints(c.args));
            b.append(",\"retract\":").append(c.retract).append(",\"name\":");
            NativeLibrary.appendJsonString(b, c.name);
            if (c.distinct) {
                b.append(",\"distinct\":true");
            }
            if (c.filter >= 0) {
                b.append(",\"filter\":").append(c.filter);
            }
            if (c.javaStrings >= 0) {
                b.append(",\"java_strings\":").append(c.javaStrings);
            }
            b.append('}');
        }
        b.append("],\"need_retraction\":").append(needRetraction);
        b.append(",\"generate_update_before\":").append(generateUpdateBefore);
        b.append(",\"state_ttl_ms\":").append(Math.max(0, stateTtlMs));
        if (miniBatch) {
            b.append(",\"mini_batch\":true");
        }
        return b.append("}}").toString();
    }

    private static String ints(int[] values) {
        List<String> s = new ArrayList<>(values.length);
        for (int v : values) {
            s.add(Integer.toString(v));
        }
        return "[" + String.join(",", s) + "]";
    }
}
