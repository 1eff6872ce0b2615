package io.ferrystream.ferry.planner;

import java.lang.reflect.Field;

/**
 * Reads a private field of one of Flink 2.3.0's classes: Flink's physical and exec nodes keep
 * constructor parameters without accessors, and the lookup join's runners and operator factories
 * what Ferry takes over. Ferry checks the exact Flink version before it runs (the planner shim
 * fails closed on another), so the names are those of 2.3.0; a missing field fails with the class
 * and field named.
 */
public final class FlinkFields {
    private FlinkFields() {}

    /** The value of {@code declaring}'s field {@code name} in {@code target}. */
    @SuppressWarnings("unchecked")
    public static <T> T read(Object target, Class<?> declaring, String name) {
        try {
            Field f = declaring.getDeclaredField(name);
            f.setAccessible(true);
            return (T) f.get(target);
        } catch (NoSuchFieldException | IllegalAccessException | RuntimeException e) {
            throw new IllegalStateException("Ferry needs the field " + name + " of Flink's " + declaring.getName()
                    + " (Flink 2.3.0), which it cannot read: " + e, e);
        }
    }
}
