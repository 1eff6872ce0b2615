package io.ferrystream.ferry.exchange;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.io.network.api.writer.SubtaskStateMapper;
import org.apache.flink.runtime.plugable.SerializationDelegate;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;

/**
 * The Java half of Ferry's columnar exchange without the library: the frame header Java reads,
 * the serializer's wire form and its errors, and the partitioner's routing against Flink's own
 * key-group arithmetic. Frames here are headers with an opaque body; NativeFrameRoutingTest
 * checks frames the library writes.
 */
class FerryExchangeTest {
    /** A frame: the header fields Java reads, then {@code body} opaque bytes. */
    static byte[] frame(int kgFirst, int kgLast, int maxP, int p, int channel, int rows, int body) {
        ByteBuffer b = ByteBuffer.allocate(FerryFrame.HEADER_BYTES + body).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(FerryFrame.MAGIC).putShort((short) 1).putShort((short) 0);
        b.putInt(kgFirst).putInt(kgLast).putInt(maxP).putInt(p).putInt(channel).putInt(rows);
        for (int i = 0; i < body; i++) {
            b.put((byte) i);
        }
        return b.array();
    }

    @Test
    void headerFields() {
        FerryFrame f = new FerryFrame(frame(3, 9, 128, 2, 0, 17, 8));
        assertEquals(1, f.version());
        assertEquals(3, f.keyGroupFirst());
        assertEquals(9, f.keyGroupLast());
        assertEquals(128, f.maxParallelism());
        assertEquals(2, f.parallelism());
        assertEquals(0, f.channel());
        assertEquals(17, f.rows());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new FerryFrame(new byte[31]));
        assertTrue(e.getMessage().contains("31 bytes"), e.getMessage());
        byte[] bad = frame(0, 0, 128, 1, 0, 1, 0);
        bad[0] = 'G';
        e = assertThrows(IllegalArgumentException.class, () -> new FerryFrame(bad));
        assertTrue(e.getMessage().startsWith("not a Ferry frame: magic"), e.getMessage());
    }

    @Test
    void serializerRoundTripsBytes() throws IOException {
        FerryFrameSerializer s = FerryFrameSerializer.INSTANCE;
        byte[] bytes = frame(1, 2, 128, 1, 0, 5, 1000);
        FerryFrame f = new FerryFrame(bytes);
        assertSame(f, s.copy(f));
        DataOutputSerializer out = new DataOutputSerializer(16);
        s.serialize(f, out);
        s.serialize(f, out);
        assertEquals(2 * (4 + bytes.length), out.length());
        DataInputDeserializer in = new DataInputDeserializer(out.getCopyOfBuffer());
        assertArrayEquals(bytes, s.deserialize(in).bytes());
        DataOutputSerializer copied = new DataOutputSerializer(4096); // write(DataInputView, n) does not grow the buffer
        s.copy(in, copied);
        assertEquals(0, in.available());
        assertArrayEquals(s.deserialize(new DataInputDeserializer(copied.getCopyOfBuffer())).bytes(), bytes);

        TypeSerializerSnapshot<FerryFrame> snapshot = s.snapshotConfiguration();
        assertSame(s, snapshot.restoreSerializer());
        assertTrue(s.snapshotConfiguration().resolveSchemaCompatibility(snapshot).isCompatibleAsIs());
        assertFalse(TypeSerializerSchemaCompatibility.<FerryFrame>incompatible().isCompatibleAsIs());
    }

    @Test
    void serializerRefusesWhatIsNotAFrame() throws IOException {
        FerryFrameSerializer s = FerryFrameSerializer.INSTANCE;
        for (int length : new int[] {0, -1, FerryFrameSerializer.MAX_FRAME_BYTES + 1}) {
            DataOutputSerializer out = new DataOutputSerializer(8);
            out.writeInt(length);
            IOException e = assertThrows(IOException.class, () -> s.deserialize(new DataInputDeserializer(out.getCopyOfBuffer())));
            assertTrue(e.getMessage().contains("frame length of " + length + " bytes"), e.getMessage());
        }
        DataOutputSerializer out = new DataOutputSerializer(64);
        out.writeInt(40);
        out.write(new byte[40]);
        IOException e = assertThrows(IOException.class, () -> s.deserialize(new DataInputDeserializer(out.getCopyOfBuffer())));
        assertTrue(e.getMessage().contains("not a Ferry frame: magic 0x00000000"), e.getMessage());
    }

    /** Flink's channel for each key group, at the channel counts and max parallelisms a job can have. */
    @Test
    void partitionerRoutesAsFlink() {
        for (int maxP : new int[] {1, 2, 127, 128, 129, 4096, 32768}) {
            for (int p : new int[] {1, 2, 3, 7}) {
                if (p > maxP) {
                    continue;
                }
                FerryKeyGroupPartitioner partitioner = new FerryKeyGroupPartitioner(128);
                partitioner.configure(maxP);
                partitioner.setup(p);
                Random r = new Random(maxP * 31L + p);
                for (int i = 0; i < 200; i++) {
                    int kg = r.nextInt(maxP);
                    int channel = KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(maxP, p, kg);
                    int[] range = {kg, kg};
                    // widen to the channel's whole range sometimes: a frame of many key groups
                    if (r.nextBoolean()) {
                        range[0] = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(maxP, p, channel).getStartKeyGroup();
                        range[1] = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(maxP, p, channel).getEndKeyGroup();
                    }
                    FerryFrame f = new FerryFrame(frame(range[0], range[1], maxP, p, channel, 1, 0));
                    SerializationDelegate<StreamRecord<FerryFrame>> d = new SerializationDelegate<>(null);
                    d.setInstance(new StreamRecord<>(f));
                    assertEquals(channel, partitioner.selectChannel(d), f.toString());
                }
            }
        }
    }

    @Test
    void partitionerRefusesMisroutedFrames() {
        FerryKeyGroupPartitioner partitioner = new FerryKeyGroupPartitioner(128);
        partitioner.configure(256);
        partitioner.setup(2);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> partitioner.channelOf(new FerryFrame(frame(0, 0, 128, 2, 0, 1, 0))));
        assertTrue(e.getMessage().contains("was routed for max parallelism 128 and 2 channels, the exchange has 256 and 2"), e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> partitioner.channelOf(new FerryFrame(frame(0, 0, 256, 3, 0, 1, 0))));
        assertTrue(e.getMessage().contains("256 and 2"), e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> partitioner.channelOf(new FerryFrame(frame(100, 200, 256, 2, 0, 1, 0))));
        assertTrue(e.getMessage().contains("spans channels 0 to 1"), e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> partitioner.channelOf(new FerryFrame(frame(200, 200, 256, 2, 0, 1, 0))));
        assertTrue(e.getMessage().contains("spans channels 1 to 1"), e.getMessage());
        assertEquals(SubtaskStateMapper.RANGE, partitioner.getDownstreamSubtaskStateMapper());
        assertFalse(partitioner.isPointwise());
        assertFalse(partitioner.isSupportsUnalignedCheckpoint());
    }
}
