package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.flink.table.types.logical.LogicalTypeFamily;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.Serializable;
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

        Call(String function, int[] args, boolean retract, String name, boolean distinct, int filter, int javaStrings) {
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
        this(name, ProjectedCalls.of(fullInputType, grouping, calls), needRetraction, generateUpdateBefore, stateTtlMs, miniBatch);
    }

    private GroupAggregateSpec(
            String name, ProjectedCalls p, boolean needRetraction, boolean generateUpdateBefore, long stateTtlMs, boolean miniBatch) {
        super(KIND, name, List.of(p.input));
        this.calls = p.calls;
        this.needRetraction = needRetraction;
        this.generateUpdateBefore = generateUpdateBefore;
        this.stateTtlMs = stateTtlMs;
        this.miniBatch = miniBatch;
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
        writeCalls(params.putArray("aggs"), calls);
        params.put("need_retraction", needRetraction);
        params.put("generate_update_before", generateUpdateBefore);
        params.put("state_ttl_ms", Math.max(0, stateTtlMs));
        if (miniBatch) {
            params.put("mini_batch", true);
        }
    }

    /**
     * Writes calls as the {@code aggs} array every aggregate kind's params share (docs/abi.md):
     * per call {@code func}, {@code args}, {@code retract}, {@code name}, and when set {@code
     * distinct}, {@code filter}, {@code java_strings}.
     */
    public static void writeCalls(ArrayNode aggs, List<Call> calls) {
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
    }
}
