package io.ferrystream.ferry.exchange;

import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** The type of the records of Ferry's columnar exchange: {@link FerryFrame}s. Not a key type. */
public final class FerryFrameTypeInfo extends TypeInformation<FerryFrame> {
    private static final long serialVersionUID = 1L;

    public static final FerryFrameTypeInfo INSTANCE = new FerryFrameTypeInfo();

    @Override
    public boolean isBasicType() {
        return false;
    }

    @Override
    public boolean isTupleType() {
        return false;
    }

    @Override
    public int getArity() {
        return 1;
    }

    @Override
    public int getTotalFields() {
        return 1;
    }

    @Override
    public Class<FerryFrame> getTypeClass() {
        return FerryFrame.class;
    }

    @Override
    public boolean isKeyType() {
        return false;
    }

    @Override
    public TypeSerializer<FerryFrame> createSerializer(SerializerConfig config) {
        return FerryFrameSerializer.INSTANCE;
    }

    @Override
    public String toString() {
        return "FerryFrame";
    }

    @Override
    public boolean equals(Object obj) {
        return obj instanceof FerryFrameTypeInfo;
    }

    @Override
    public int hashCode() {
        return FerryFrameTypeInfo.class.hashCode();
    }

    @Override
    public boolean canEqual(Object obj) {
        return obj instanceof FerryFrameTypeInfo;
    }
}
