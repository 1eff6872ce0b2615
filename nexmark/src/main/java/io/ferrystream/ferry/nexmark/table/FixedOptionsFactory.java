package io.ferrystream.ferry.nexmark.table;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.table.factories.Factory;

import java.util.Set;

/**
 * A table factory of this module whose identifier and options are fixed when it is made: the
 * Nexmark source, the checksum sink and q13's side input.
 */
abstract class FixedOptionsFactory implements Factory {
    private final String identifier;
    private final Set<ConfigOption<?>> required;
    private final Set<ConfigOption<?>> optional;

    FixedOptionsFactory(String identifier, Set<ConfigOption<?>> required, Set<ConfigOption<?>> optional) {
        this.identifier = identifier;
        this.required = Set.copyOf(required);
        this.optional = Set.copyOf(optional);
    }

    @Override
    public final String factoryIdentifier() {
        return identifier;
    }

    @Override
    public final Set<ConfigOption<?>> requiredOptions() {
        return required;
    }

    @Override
    public final Set<ConfigOption<?>> optionalOptions() {
        return optional;
    }
}
