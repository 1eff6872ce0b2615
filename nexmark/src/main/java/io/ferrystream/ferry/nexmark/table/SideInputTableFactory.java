package io.ferrystream.ferry.nexmark.table;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.lookup.LookupFunctionProvider;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.LookupFunction;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code 'connector' = 'nexmark-side-input', 'path' = FILE}: q13's side input, a lookup table of
 * {@code (key BIGINT, value STRING)} read from a CSV file of {@code key,value} lines, as Nexmark's
 * legacy file system table was: each lookup function reads the whole file when it opens and
 * answers lookups on {@code key} from memory. {@link #write} writes Nexmark's file (its side input
 * generator's content: 10,000 lines {@code i,i}).
 */
public final class SideInputTableFactory extends FixedOptionsFactory implements DynamicTableSourceFactory {
    public static final String IDENTIFIER = "nexmark-side-input";
    public static final ConfigOption<String> PATH = ConfigOptions.key("path").stringType().noDefaultValue()
            .withDescription("The CSV file: one key,value line per row.");

    /** Writes Nexmark's side input: {@code rows} lines {@code i,i} for i from 0. */
    public static void write(Path file, int rows) throws IOException {
        StringBuilder b = new StringBuilder(rows * 12);
        for (int i = 0; i < rows; i++) {
            b.append(i).append(',').append(i).append('\n');
        }
        Files.createDirectories(file.toAbsolutePath().getParent());
        Files.writeString(file, b, StandardCharsets.UTF_8);
    }

    public SideInputTableFactory() {
        super(IDENTIFIER, Set.of(PATH), Set.of());
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        RowType type = (RowType) context.getCatalogTable().getResolvedSchema().toPhysicalRowDataType().getLogicalType();
        if (type.getFieldCount() != 2 || type.getTypeAt(0).getTypeRoot() != LogicalTypeRoot.BIGINT
                || type.getTypeAt(1).getTypeRoot() != LogicalTypeRoot.VARCHAR) {
            throw new ValidationException(IDENTIFIER + ": the table must be (key BIGINT, value STRING), got "
                    + type.asSummaryString());
        }
        return new Source(helper.getOptions().get(PATH));
    }

    private record Source(String path) implements LookupTableSource {
        @Override
        public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
            int[][] keys = context.getKeys();
            if (keys.length != 1 || keys[0].length != 1 || keys[0][0] != 0) {
                throw new ValidationException(IDENTIFIER + ": lookups must be on the key column alone");
            }
            return LookupFunctionProvider.of(new Lookup(path));
        }

        @Override
        public DynamicTableSource copy() {
            return new Source(path);
        }

        @Override
        public String asSummaryString() {
            return IDENTIFIER;
        }
    }

    /** The file's rows by key, read when the function opens. */
    public static final class Lookup extends LookupFunction {
        private static final long serialVersionUID = 1L;

        private final String path;
        private transient Map<Long, List<RowData>> rows;

        public Lookup(String path) {
            this.path = path;
        }

        @Override
        public void open(FunctionContext context) throws IOException {
            rows = new HashMap<>();
            try (BufferedReader in = Files.newBufferedReader(Path.of(path), StandardCharsets.UTF_8)) {
                String line;
                int n = 0;
                while ((line = in.readLine()) != null) {
                    n++;
                    int comma = line.indexOf(',');
                    if (comma < 0) {
                        throw new IOException(IDENTIFIER + ": " + path + " line " + n + " is not key,value: " + line);
                    }
                    long key;
                    try {
                        key = Long.parseLong(line.substring(0, comma).trim());
                    } catch (NumberFormatException e) {
                        throw new IOException(IDENTIFIER + ": " + path + " line " + n + " has no BIGINT key: " + line, e);
                    }
                    rows.computeIfAbsent(key, k -> new java.util.ArrayList<>(1))
                            .add(GenericRowData.of(key, StringData.fromString(line.substring(comma + 1))));
                }
            }
        }

        @Override
        public Collection<RowData> lookup(RowData keyRow) {
            return keyRow.isNullAt(0) ? List.of() : rows.getOrDefault(keyRow.getLong(0), List.of());
        }
    }
}
