package io.ferrystream.ferry.exchange;

import org.apache.flink.runtime.io.network.api.writer.SubtaskStateMapper;
import org.apache.flink.runtime.plugable.SerializationDelegate;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.runtime.partitioner.ConfigurableStreamPartitioner;
import org.apache.flink.streaming.runtime.partitioner.StreamPartitioner;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Routes each {@link FerryFrame} to the channel that owns its key groups, as Flink's {@code
 * KeyGroupStreamPartitioner} routes each row: channel = {@code
 * computeOperatorIndexForKeyGroup(maxParallelism, channels, keyGroup)}, with the consumer's max
 * parallelism and channel count as Flink configures them at run time. The native local computed the
 * same key groups and channel for every row of the frame; a frame computed for another max
 * parallelism or channel count, or whose key groups span channels, fails the task here, before
 * any of its rows could reach a subtask that does not own them.
 *
 * <p>A frame holds the rows of many key groups, which the recovery of in-flight data under
 * unaligned checkpoints cannot split; the partitioner therefore disables unaligned checkpoints on
 * its edge (the planner uses it only when they are off: docs/operators/group-by.md).
 */
public final class FerryKeyGroupPartitioner extends StreamPartitioner<FerryFrame> implements ConfigurableStreamPartitioner {
    private static final long serialVersionUID = 1L;

    private int maxParallelism;

    /** @param maxParallelism the planner's max parallelism, replaced by the consumer's at run time */
    public FerryKeyGroupPartitioner(int maxParallelism) {
        this.maxParallelism = maxParallelism;
        disableUnalignedCheckpoints();
    }

    @Override
    public int selectChannel(SerializationDelegate<StreamRecord<FerryFrame>> record) {
        return channelOf(record.getInstance().getValue());
    }

    /** The channel {@code frame} belongs to, checked against what its sender computed. */
    int channelOf(FerryFrame frame) {
        if (frame.maxParallelism() != maxParallelism || frame.parallelism() != numberOfChannels) {
            throw new IllegalStateException("Ferry's columnar exchange: " + frame + " was routed for max parallelism "
                    + frame.maxParallelism() + " and " + frame.parallelism() + " channels, the exchange has "
                    + maxParallelism + " and " + numberOfChannels);
        }
        int channel = KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(maxParallelism, numberOfChannels, frame.keyGroupFirst());
        int last = KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(maxParallelism, numberOfChannels, frame.keyGroupLast());
        if (channel != last || channel != frame.channel()) {
            throw new IllegalStateException("Ferry's columnar exchange: " + frame + " spans channels " + channel + " to " + last);
        }
        return channel;
    }

    @Override
    public void configure(int maxParallelism) {
        KeyGroupRangeAssignment.checkParallelismPreconditions(maxParallelism);
        this.maxParallelism = maxParallelism;
    }

    @Override
    public SubtaskStateMapper getDownstreamSubtaskStateMapper() {
        return SubtaskStateMapper.RANGE;
    }

    @Override
    public StreamPartitioner<FerryFrame> copy() {
        return this;
    }

    @Override
    public boolean isPointwise() {
        return false;
    }

    @Override
    public String toString() {
        return "HASH(columnar)";
    }

    @Override
    public boolean equals(Object o) {
        return super.equals(o) && maxParallelism == ((FerryKeyGroupPartitioner) o).maxParallelism;
    }

    @Override
    public int hashCode() {
        return 31 * super.hashCode() + maxParallelism;
    }
}
