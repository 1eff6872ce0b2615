package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec.Call;
import io.ferrystream.ferry.operators.NativeSpec.Input;

import org.apache.flink.table.types.logical.RowType;

import java.util.ArrayList;
import java.util.List;

/**
 * The fields of Flink's row an aggregate's calls read, and the calls with their indices into
 * them: the grouping fields, then the calls' arguments and FILTER fields, each once in order of
 * first use; then, when asked for, a Java-String flag per string argument of MIN or MAX
 * (docs/group-aggregate.md#string-order). Shared by the aggregate kinds' specs (the window
 * aggregate's too, whose row time follows the calls' fields).
 */
public final class ProjectedCalls {
    final Input input;
    final List<Call> calls;
    private final int[] projection;

    private ProjectedCalls(Input input, List<Call> calls, int[] projection) {
        this.input = input;
        this.calls = calls;
        this.projection = projection;
    }

    /** The input that crosses into Go: the projected fields (then any Java-String flags), keyed by the grouping. */
    public Input input() {
        return input;
    }

    /** The calls, their arguments and FILTER fields indexing the projected row. */
    public List<Call> calls() {
        return calls;
    }

    /** The projected index of field {@code field} of Flink's row; -1 when it does not cross. */
    public int indexOf(int field) {
        for (int i = 0; i < projection.length; i++) {
            if (projection[i] == field) {
                return i;
            }
        }
        return -1;
    }

    /** With Java-String flags: the input of an operator that compares strings as Flink's does. */
    static ProjectedCalls of(RowType fullInputType, int[] grouping, List<Call> calls) {
        return of(fullInputType, grouping, calls, true);
    }

    /**
     * The calls of a merging aggregate (global, incremental) over the local aggregate's output
     * {@code localInputType}: without their FILTERs, which the local aggregate applied; no grouping
     * fields, no Java-String flags.
     */
    static ProjectedCalls ofLocalInput(RowType localInputType, List<Call> calls) {
        List<Call> unfiltered = new ArrayList<>(calls.size());
        for (Call c : calls) {
            unfiltered.add(new Call(c.function, c.args, c.retract, c.name, c.distinct, -1));
        }
        return of(localInputType, new int[0], unfiltered, false);
    }

    static ProjectedCalls of(RowType fullInputType, int[] grouping, List<Call> calls, boolean javaStringFlags) {
        return of(fullInputType, grouping, calls, javaStringFlags, new int[0]);
    }

    /**
     * As {@link #of(RowType, int[], List, boolean)}, with the fields {@code extra} of Flink's row
     * crossing too, after the calls' fields (a field already used keeps its place).
     */
    public static ProjectedCalls of(RowType fullInputType, int[] grouping, List<Call> calls, boolean javaStringFlags, int[] extra) {
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
        for (int e : extra) {
            if (!used.contains(e)) {
                used.add(e);
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
            if (javaStringFlags && r.comparesStrings(projected)) {
                if (!javaSources.contains(args[0])) {
                    javaSources.add(args[0]);
                }
                javaStrings = projection.length + javaSources.indexOf(args[0]);
            }
            remapped.add(new Call(r.function, r.args, r.retract, r.name, r.distinct, r.filter, javaStrings));
        }
        Input input = Input.of(fullInputType, projection, keys, javaSources.stream().mapToInt(Integer::intValue).toArray());
        return new ProjectedCalls(input, List.copyOf(remapped), projection);
    }
}
