package io.ferrystream.ferry.operators;

import org.apache.flink.table.types.logical.LogicalTypeFamily;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The spec of one native group aggregate (kind {@value #KIND}): the common part of {@link
 * NativeSpec} (one input, keyed by the grouping fields) and the aggregate's own parameters (calls,
 * retraction, UPDATE_BEFORE, idle-state TTL, mini-batch). Built by the planner from Flink's {@code
 * StreamExecGroupAggregate} arguments.
 *
 * <p>Only the fields the aggregation reads cross into Go: {@link #projection()} lists them (keys
 * first, then arguments and FILTER fields, each once), and the spec's indices refer to that
 * projected row. After them come the Java-String flags: for each string argument of MIN or MAX,
 * a BOOLEAN NOT NULL field (listed by {@link #javaStringSources()}) that is TRUE where the string
 * still holds the Java String it was built from — Flink compares two such strings in UTF-16
 * order, any other pair by UTF-8 bytes (docs/group-aggregate.md#string-order).
 */
public final class GroupAggregateSpec extends NativeSpec {
    private static final long serialVersionUID = 2L;

    /** The library's name of this operator kind. */
    public static final String KIND = "group_aggregate";

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

        /** MIN or MAX over a string field of {@code row}: Flink's comparison needs a Java-String flag. */
        boolean comparesStrings(RowType row) {
            return (function.equals("MIN") || function.equals("MAX")) && args.length == 1
                    && row.getTypeAt(args[0]).is(LogicalTypeFamily.CHARACTER_STRING);
        }
    }

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
        this(name, Projected.of(fullInputType, grouping, calls), needRetraction, generateUpdateBefore, stateTtlMs, miniBatch);
    }

    private GroupAggregateSpec(
            String name, Projected p, boolean needRetraction, boolean generateUpdateBefore, long stateTtlMs, boolean miniBatch) {
        super(KIND, name, List.of(p.input));
        this.calls = p.calls;
        this.needRetraction = needRetraction;
        this.generateUpdateBefore = generateUpdateBefore;
        this.stateTtlMs = stateTtlMs;
        this.miniBatch = miniBatch;
    }

    /** The input Go sees and the calls with their indices into it. */
    private static final class Projected {
        final Input input;
        final List<Call> calls;

        private Projected(Input input, List<Call> calls) {
            this.input = input;
            this.calls = calls;
        }

        /**
         * The grouping fields, then the calls' arguments and FILTER fields, each once; then a
         * Java-String flag per string argument of MIN or MAX.
         */
        static Projected of(RowType fullInputType, int[] grouping, List<Call> calls) {
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
            int[] projection = used.stream().mapToInt(Integer::intValue).toArray();
            int[] keys = new int[grouping.length];
            for (int i = 0; i < grouping.length; i++) {
                keys[i] = used.indexOf(grouping[i]);
            }
            List<RowType.RowField> fields = new ArrayList<>();
            for (int p : projection) {
                fields.add(fullInputType.getFields().get(p));
            }
            RowType projected = new RowType(false, fields);
            List<Integer> javaSources = new ArrayList<>();
            List<Call> remapped = new ArrayList<>();
            for (Call c : calls) {
                int[] args = new int[c.args.length];
                for (int i = 0; i < args.length; i++) {
                    args[i] = used.indexOf(c.args[i]);
                }
                Call r = new Call(c.function, args, c.retract, c.name, c.distinct, c.filter < 0 ? -1 : used.indexOf(c.filter));
                int javaStrings = -1;
                if (r.comparesStrings(projected)) {
                    if (!javaSources.contains(args[0])) {
                        javaSources.add(args[0]);
                    }
                    javaStrings = projection.length + javaSources.indexOf(args[0]);
                }
                remapped.add(new Call(r.function, r.args, r.retract, r.name, r.distinct, r.filter, javaStrings));
            }
            Input input = Input.of(fullInputType, projection, keys, javaSources.stream().mapToInt(Integer::intValue).toArray());
            return new Projected(input, List.copyOf(remapped));
        }
    }

    /** Whether each batch is one bundle of Flink's mini-batch aggregate (MiniBatchGroupAggFunction). */
    public boolean miniBatch() {
        return miniBatch;
    }

    /** The input fields that cross into Go, as indices into Flink's input row. */
    public int[] projection() {
        return input(0).projection();
    }

    /**
     * Per Java-String flag field (they follow the projected fields), the projected field whose
     * string it describes.
     */
    public int[] javaStringSources() {
        return input(0).javaStringSources();
    }

    /** The projected input row type Go sees, Java-String flags included. */
    public RowType inputType() {
        return input(0).type();
    }

    /**
     * The aggregate's parameters (docs/abi.md): {@code aggs} (per call {@code func}, {@code args},
     * {@code retract}, {@code name}, and when set {@code distinct}, {@code filter}, {@code
     * java_strings}), {@code need_retraction}, {@code generate_update_before}, {@code
     * state_ttl_ms}, and {@code mini_batch} when true.
     */
    @Override
    protected void writeParams(ObjectNode params) {
        ArrayNode aggs = params.putArray("aggs");
        for (Call c : calls) {
            ObjectNode a = aggs.addObject();
            a.put("func", c.function);
            a.set("args", ints(c.args));
            a.put("retract", c.retract);
            a.put("name", c.name);
            if (c.distinct) {
                a.put("distinct", true);
            }
            if (c.filter >= 0) {
                a.put("filter", c.filter);
            }
            if (c.javaStrings >= 0) {
                a.put("java_strings", c.javaStrings);
            }
        }
        params.put("need_retraction", needRetraction);
        params.put("generate_update_before", generateUpdateBefore);
        params.put("state_ttl_ms", Math.max(0, stateTtlMs));
        if (miniBatch) {
            params.put("mini_batch", true);
        }
    }
}
