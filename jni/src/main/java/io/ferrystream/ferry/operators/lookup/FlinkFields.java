package io.ferrystream.ferry.operators.lookup;

import java.lang.reflect.Field;

/**
 * Reads a private field of one of Flink 2.3's classes (the lookup join runners and operator
 * factories keep what Ferry needs in private fields without getters). A missing field means a
 * Flink version Ferry was not built for: it fails with the class and field named.
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
            throw new IllegalStateException("Ferry's lookup join needs the field " + name + " of Flink's "
                    + declaring.getName() + " (Flink 2.3.0), which it cannot read: " + e, e);
        }
    }
}
