package io.ferrystream.ferry.planner;

import java.util.Objects;

/** A kind's decision on one node: native, or the fallback reason shown in EXPLAIN. */
public final class Decision {
    private static final Decision NATIVE = new Decision(null);

    private final String reason;

    private Decision(String reason) {
        this.reason = reason;
    }

    /** The node runs natively. */
    public static Decision nativeNode() {
        return NATIVE;
    }

    /** The node stays Flink's, for {@code reason}. */
    public static Decision fallback(String reason) {
        return new Decision(Objects.requireNonNull(reason));
    }

    public boolean isNative() {
        return reason == null;
    }

    /** Why the node stays Flink's; null when native. */
    public String reason() {
        return reason;
    }

    @Override
    public String toString() {
        return isNative() ? "native" : reason;
    }
}
