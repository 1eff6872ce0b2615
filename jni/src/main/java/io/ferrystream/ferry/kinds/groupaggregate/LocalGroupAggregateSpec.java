package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.exchange.ExchangeTarget;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec.Call;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.FrameWritingSpec;
import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * The spec of the local half of a two-phase aggregate (kind {@value #KIND}): Flink's {@code
 * MapBundleOperator} running {@code MiniBatchLocalGroupAggFunction}. One input, not keyed by
 * Flink; its bundle is keyed by the grouping fields. Its calls are Flink's {@code
 * AggregateInfoList} of the local aggregate in order, the count1 Flink inserts for retracting
 * input included, because the row it emits per key is the grouping fields followed by every
 * call's accumulator fields (docs/group-aggregate.md#the-local-aggregate).
 *
 * <p>Only the fields the aggregation reads cross into Go ({@link ProjectedCalls}), with a
 * Java-String flag per string argument of MIN or MAX: the bundle lives on the heap, where
 * Flink's accumulators keep the strings of the rows they saw.
 */
public final class LocalGroupAggregateSpec extends NativeSpec implements FrameWritingSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "local_group_aggregate";

    private final List<Call> calls;
    private final boolean needRetraction;
    /** The consumer's parallelism when the output is frames of the columnar exchange; 0: rows. */
    private final int exchangeParallelism;

    /**
     * @param name the operator's description, used in messages
     * @param fullInputType the input row type of Flink's local aggregate
     * @param grouping the grouping field indices into fullInputType
     * @param calls the calls of Flink's AggregateInfoList (count1 included), their arguments and
     *     FILTER fields indexing fullInputType
     * @param needRetraction the input retracts (Flink's needRetraction)
     */
    public LocalGroupAggregateSpec(
            String name, RowType fullInputType, int[] grouping, List<Call> calls, boolean needRetraction) {
        this(name, ProjectedCalls.of(fullInputType, grouping, calls), needRetraction);
    }

    private LocalGroupAggregateSpec(String name, ProjectedCalls p, boolean needRetraction) {
        super(KIND, name, List.of(p.input));
        this.calls = p.calls;
        this.needRetraction = needRetraction;
        this.exchangeParallelism = 0;
    }

    private LocalGroupAggregateSpec(LocalGroupAggregateSpec rows, int exchangeParallelism) {
        super(KIND, rows.name(), rows.inputs());
        this.calls = rows.calls;
        this.needRetraction = rows.needRetraction;
        this.exchangeParallelism = exchangeParallelism;
    }

    /**
     * This spec writing its partial rows as frames of the columnar exchange, routed to {@code
     * parallelism} channels (opened with the consumer's max parallelism: docs/abi.md#frames).
     */
    public LocalGroupAggregateSpec forExchange(int parallelism) {
        if (parallelism < 1) {
            throw new IllegalArgumentException("an exchange has at least one channel, not " + parallelism);
        }
        return new LocalGroupAggregateSpec(this, parallelism);
    }

    /**
     * Routes for the consumer's max parallelism, which it is opened with: the local aggregate is
     * not keyed, so its own key groups do not matter.
     */
    @Override
    public NativeOperator openWritingFrames(ExchangeTarget target, int maxParallelism, KeyGroupRange range, BufferAllocator allocator) {
        return forExchange(target.parallelism).open(target.maxParallelism, 0, target.maxParallelism - 1, allocator);
    }

    /** The input fields that cross into Go, as indices into Flink's input row. */
    public int[] projection() {
        return input(0).projection();
    }

    /**
     * The local aggregate's parameters (docs/abi.md): {@code aggs}, {@code need_retraction}, and
     * {@code exchange} when it writes frames.
     */
    @Override
    protected void writeParams(ObjectNode params) {
        GroupAggregateSpec.writeCalls(params.putArray("aggs"), calls);
        params.put("need_retraction", needRetraction);
        if (exchangeParallelism > 0) {
            params.putObject("exchange").put("parallelism", exchangeParallelism);
        }
    }
}
