package io.ferrystream.ferry.kinds.lookupjoin;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.nativelib.NativeOperator;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.table.connector.source.lookup.LookupOptions;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarBinaryType;

/**
 * Flink's JDBC lookup against PostgreSQL ({@code JdbcRowDataLookupFunction} of
 * flink-connector-jdbc-postgres 4.0.0-2.0) done by Go, one statement per batch: a native operator
 * of kind {@code jdbc_lookup} (docs/operators/lookup-join.md). Built from the temporal table's
 * connector options (the JDBC connector's, read as {@code JdbcDynamicTableFactory} reads them),
 * the projected fields and the key names. {@link #fetch} writes the key rows as one Arrow batch,
 * Go deduplicates them, answers what its partial cache holds, fetches the rest with one
 * statement (retried as Flink retries) and returns each key row's rows, which this class groups
 * by the key row's ordinal. The URL becomes a pgx connection string without credentials; the
 * user name and password reach Go through their own call, never a spec or a message.
 *
 * <p>Serializable with its operator (configuration only); opened on the TaskManager. Not
 * thread-safe: one instance per operator instance (per subtask).
 */
public final class PostgresBatchLookup implements BatchFetcher, AutoCloseable {
    /** The JDBC connector's option keys this class reads (JdbcConnectorOptions, LookupOptions). */
    static final String URL = "url";
    static final String TABLE_NAME = "table-name";
    static final String USERNAME = "username";
    static final String PASSWORD = "password";
    static final String LEGACY_CACHE_MAX_ROWS = "lookup.cache.max-rows";
    static final String LEGACY_CACHE_TTL = "lookup.cache.ttl";
    static final String LEGACY_CACHE_MISSING_KEY = "lookup.cache.caching-missing-key";

    /** pgjdbc's default connectTimeout (seconds), which the pgx connection keeps. */
    private static final int PGJDBC_CONNECT_TIMEOUT_S = 10;
    private static final ObjectMapper JSON = new ObjectMapper();

    private static final long serialVersionUID = 1L;

    /** The temporal table's connector options (credentials included, as Flink's own lookup function holds them). */
    private final LinkedHashMap<String, String> options;
    private final RowType projected;
    private final RowType keyType;

    /** Set by {@link #open(BufferAllocator)}; closed by {@link #close}. */
    private transient BufferAllocator allocator;
    /** The root {@link #open(RuntimeContext)} made for the lookup; null when the caller gave the parent. */
    private transient BufferAllocator root;
    private transient NativeOperator op;
    private transient RowDataArrowWriter keys;
    private transient VectorSchemaRoot out;
    private transient ArrowRowDataReader reader;
    private transient RowData.FieldGetter[] getters;

    /**
     * A lookup to open on the TaskManager ({@link #open(RuntimeContext)}). Throws {@link
     * IllegalArgumentException} with {@link #reasonNotNative}'s reason when the table cannot go
     * this way.
     *
     * @param options the temporal table's connector options ({@code 'connector' = 'jdbc'})
     * @param projected the fields the lookup returns (Flink's projected physical row type), in order
     * @param keyNames the lookup keys' names in {@code projected}, in Flink's key order
     */
    public PostgresBatchLookup(Map<String, String> options, RowType projected, String[] keyNames) {
        String reason = reasonNotNative(options, projected, keyNames, false);
        if (reason != null) {
            throw new IllegalArgumentException("the JDBC lookup cannot run natively: " + reason);
        }
        this.options = new LinkedHashMap<>(options);
        this.projected = projected;
        List<RowType.RowField> keyFields = new ArrayList<>();
        for (String k : keyNames) {
            keyFields.add(new RowType.RowField(k, projected.getTypeAt(projected.getFieldIndex(k)).copy(true)));
        }
        this.keyType = new RowType(keyFields);
    }

    /** {@link #PostgresBatchLookup(Map, RowType, String[])}, opened at once with {@code allocator}. */
    public PostgresBatchLookup(Map<String, String> options, RowType projected, String[] keyNames,
            BufferAllocator allocator) {
        this(options, projected, keyNames);
        open(allocator);
    }

    /** Opens on the operator's thread with an allocator of its own, closed with the lookup. */
    @Override
    public void open(RuntimeContext context) {
        root = new RootAllocator(Long.MAX_VALUE);
        try {
            open(root);
        } catch (RuntimeException | Error e) {
            root.close();
            root = null;
            throw e;
        }
    }

    /**
     * Opens the native lookup and connects it (the table and columns are checked by PostgreSQL
     * here): {@code FerryException} when Go refuses it or PostgreSQL fails.
     *
     * @param parent the parent of this lookup's Arrow memory
     */
    private void open(BufferAllocator parent) {
        this.allocator = parent.newChildAllocator("ferry-jdbc-lookup", 0, Long.MAX_VALUE);
        NativeOperator opened = null;
        RowDataArrowWriter writer = null;
        VectorSchemaRoot root = null;
        try {
            opened = NativeOperator.openFunction(spec(options, projected, keyType),
                    secrets(dsn(options.get(URL)), options.get(USERNAME), options.get(PASSWORD)),
                    ArrowTypes.schemaOf(keyType), this.allocator);
            writer = RowDataArrowWriter.create(keyType, this.allocator, 1024);
            root = VectorSchemaRoot.create(opened.outputSchema(), this.allocator);
            List<RowType.RowField> outFields = new ArrayList<>();
            outFields.add(new RowType.RowField("ordinal", new IntType(false)));
            outFields.addAll(projected.getFields());
            this.reader = new ArrowRowDataReader(root, new RowType(outFields)); // BYTES columns need their type
        } catch (RuntimeException | Error e) {
            closeAll(e, root, writer, opened);
            this.allocator.close();
            this.allocator = null;
            throw e;
        }
        this.op = opened;
        this.keys = writer;
        this.out = root;
        this.getters = new RowData.FieldGetter[projected.getFieldCount()];
        for (int i = 0; i < getters.length; i++) {
            getters[i] = RowData.createFieldGetter(projected.getTypeAt(i), i + 1); // after the ordinal
        }
    }

    @Override
    public List<List<RowData>> fetch(List<RowData> keyRows) {
        List<List<RowData>> result = new ArrayList<>(keyRows.size());
        for (int i = 0; i < keyRows.size(); i++) {
            result.add(new ArrayList<>(1));
        }
        if (keyRows.isEmpty()) {
            return result;
        }
        keys.reset();
        for (RowData k : keyRows) {
            keys.write(k);
        }
        keys.finish();
        op.process(0, keys.root(), System.currentTimeMillis(), out, chunk -> {
            reader.load();
            for (int i = 0; i < reader.rowCount(); i++) {
                RowData r = reader.read(i);
                GenericRowData row = new GenericRowData(getters.length);
                for (int f = 0; f < getters.length; f++) {
                    row.setField(f, getters[f].getFieldOrNull(r));
                }
                result.get(r.getInt(0)).add(row);
            }
        });
        return result;
    }

    @Override
    public void close() {
        if (allocator == null) {
            return; // never opened, or its open failed and cleaned up
        }
        Throwable first = closeAll(null, out, keys, op, allocator, root);
        allocator = null;
        root = null;
        if (first instanceof RuntimeException re) {
            throw re;
        }
        if (first instanceof Error err) {
            throw err;
        }
    }

    /** Closes each resource (nulls skipped); returns first, or the first failure, with the rest suppressed. */
    private static Throwable closeAll(Throwable first, AutoCloseable... resources) {
        for (AutoCloseable c : resources) {
            if (c == null) {
                continue;
            }
            try {
                c.close();
            } catch (Exception | Error e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        return first;
    }

    /**
     * Why the temporal table of a lookup join cannot go the Go way, or null when it can: the
     * options must be the JDBC connector's with a {@code jdbc:postgresql:} URL whose every part
     * maps to pgx ({@link #dsn}), no filter pushed into the source (a {@code lookup.cache = FULL} the
     * connector ignores, and so does {@link #cacheParams}),
     * every projected field of a type the PostgreSQL dialect supports and Ferry carries, and the
     * JVM's default zone a fixed offset (timestamptz values are its wall clock, and Go's and the
     * JVM's zone rules could differ).
     *
     * @param pushedFilters whether the planner pushed a filter into the source (the lookup's
     *     statement then has Flink's extra predicates, which the native statement does not)
     */
    public static String reasonNotNative(Map<String, String> options, RowType projected, String[] keyNames,
            boolean pushedFilters) {
        String url = options.get(URL);
        if (!"jdbc".equals(options.get("connector"))) {
            return "not the JDBC connector";
        }
        if (url == null || !url.startsWith("jdbc:postgresql:")) {
            return "the URL is not a jdbc:postgresql: URL";
        }
        try {
            dsn(url);
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
        if (options.get(TABLE_NAME) == null) {
            return "no 'table-name'";
        }
        if (options.containsKey("compatible-mode")) {
            return "'compatible-mode' is set";
        }
        if (pushedFilters) {
            return "a filter is pushed into the JDBC source";
        }
        for (String k : keyNames) {
            if (projected.getFieldIndex(k) < 0) {
                return "key " + k + " is not a projected field";
            }
        }
        for (RowType.RowField f : projected.getFields()) {
            String why = typeReason(f.getType());
            if (why != null) {
                return "field " + f.getName() + ": " + why;
            }
        }
        ZoneId zone = ZoneId.systemDefault();
        if (!zone.getRules().isFixedOffset()) {
            return "the JVM's default zone " + zone.getId() + " is not a fixed offset";
        }
        try {
            cacheParams(Configuration.fromMap(options));
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
        return null;
    }

    /** Why a field's type does not go the Go way, or null. */
    private static String typeReason(LogicalType t) {
        switch (t.getTypeRoot()) {
            case BOOLEAN:
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
            case FLOAT:
            case DOUBLE:
            case CHAR:
            case VARCHAR:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return null;
            case DECIMAL:
                return ((DecimalType) t).getPrecision() <= 38 ? null : "DECIMAL precision above 38";
            case VARBINARY:
                return ((VarBinaryType) t).getLength() == VarBinaryType.MAX_LENGTH ? null
                        : "the PostgreSQL dialect supports only BYTES, not " + t.asSummaryString();
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                int p = ((TimestampType) t).getPrecision();
                return p >= 1 && p <= 6 ? null : "TIMESTAMP precision outside the dialect's 1..6";
            }
            default:
                return "type " + t.asSummaryString() + " is not carried natively";
        }
    }

    /**
     * The secrets of the native lookup (ferry_operator_open's {@code secrets_json}, kept out of
     * the spec): the connection string and the credentials; user and password may be null (the
     * DSN's or the driver's default).
     */
    static String secrets(String dsn, String user, String password) {
        ObjectNode s = JSON.createObjectNode().put("dsn", dsn);
        if (user != null) {
            s.put("user", user);
        }
        if (password != null) {
            s.put("password", password);
        }
        return s.toString();
    }

    /**
     * The pgx connection string of a {@code jdbc:postgresql:} URL, without credentials: host, port
     * and database, {@code sslmode}, {@code connectTimeout} (default pgjdbc's 10 s),
     * {@code ApplicationName} and {@code currentSchema}. One host only; any other URL parameter
     * (e.g. {@code stringtype}, {@code binaryTransfer} or {@code preferQueryMode}, which change
     * how keys are typed), a user or password in the URL and a Unix socket are refused with an
     * {@link IllegalArgumentException} naming them (never their values).
     */
    static String dsn(String url) {
        if (url == null || !url.startsWith("jdbc:postgresql:")) {
            throw new IllegalArgumentException("the URL is not a jdbc:postgresql: URL");
        }
        String rest = url.substring("jdbc:postgresql:".length());
        String query = "";
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        String host = "localhost";
        String port = "5432";
        String db;
        if (rest.startsWith("//")) {
            rest = rest.substring(2);
            int slash = rest.indexOf('/');
            String hostPort = slash < 0 ? rest : rest.substring(0, slash);
            db = slash < 0 ? "" : rest.substring(slash + 1);
            if (hostPort.contains(",")) {
                throw new IllegalArgumentException("the URL names several hosts");
            }
            if (!hostPort.isEmpty()) {
                if (hostPort.startsWith("[")) { // [IPv6]:port
                    int end = hostPort.indexOf(']');
                    host = hostPort.substring(1, end);
                    if (end + 1 < hostPort.length()) {
                        port = hostPort.substring(end + 2);
                    }
                } else {
                    int colon = hostPort.lastIndexOf(':');
                    host = colon < 0 ? hostPort : hostPort.substring(0, colon);
                    if (colon >= 0) {
                        port = hostPort.substring(colon + 1);
                    }
                }
            }
        } else {
            db = rest;
        }
        if (!port.matches("[0-9]{1,5}")) {
            throw new IllegalArgumentException("the URL's port is not a number");
        }
        Map<String, String> kv = new LinkedHashMap<>();
        kv.put("host", host);
        kv.put("port", port);
        if (!db.isEmpty()) {
            kv.put("dbname", decode(db));
        }
        kv.put("connect_timeout", Integer.toString(PGJDBC_CONNECT_TIMEOUT_S));
        for (String param : query.isEmpty() ? new String[0] : query.split("&")) {
            int eq = param.indexOf('=');
            String name = eq < 0 ? param : param.substring(0, eq);
            String value = eq < 0 ? "" : decode(param.substring(eq + 1));
            switch (name) {
                case "sslmode":
                    if (!List.of("disable", "allow", "prefer", "require", "verify-ca", "verify-full").contains(value)) {
                        throw new IllegalArgumentException("URL parameter sslmode has a value pgx does not take");
                    }
                    kv.put("sslmode", value);
                    break;
                case "connectTimeout":
                    if (!value.matches("[0-9]{1,6}")) {
                        throw new IllegalArgumentException("URL parameter connectTimeout is not a number of seconds");
                    }
                    kv.put("connect_timeout", value);
                    break;
                case "ApplicationName":
                    kv.put("application_name", value);
                    break;
                case "currentSchema":
                    kv.put("search_path", value);
                    break;
                default:
                    throw new IllegalArgumentException("URL parameter " + name + " is not mapped to the native lookup");
            }
        }
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, String> e : kv.entrySet()) {
            if (b.length() > 0) {
                b.append(' ');
            }
            b.append(e.getKey()).append("='").append(e.getValue().replace("\\", "\\\\").replace("'", "\\'")).append('\'');
        }
        return b.toString();
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    /** The jdbc_lookup spec (docs/abi.md): no URL, no credentials. */
    static String spec(Map<String, String> options, RowType projected, RowType keyType) {
        Configuration config = Configuration.fromMap(options);
        ObjectNode root = JSON.createObjectNode();
        root.put("kind", "jdbc_lookup");
        root.put("name", "JdbcLookup(table=[" + options.get(TABLE_NAME) + "])");
        ObjectNode input = root.putArray("inputs").addObject();
        ArrayNode fields = input.putArray("fields");
        input.putArray("keys");
        ObjectNode params = JSON.createObjectNode();
        params.put("table", options.get(TABLE_NAME));
        ArrayNode keys = params.putArray("keys");
        for (RowType.RowField f : keyType.getFields()) {
            fields.addObject().put("name", f.getName()).put("type", ArrowTypes.specTypeOf(f.getType()));
            keys.addObject().put("name", f.getName()).put("type", flinkType(f.getType()));
        }
        ArrayNode out = params.putArray("fields");
        for (RowType.RowField f : projected.getFields()) {
            out.addObject().put("name", f.getName()).put("type", flinkType(f.getType()));
        }
        params.put("max_retries", config.get(LookupOptions.MAX_RETRIES));
        ObjectNode cache = cacheParams(config);
        if (cache != null) {
            params.set("cache", cache);
        }
        params.put("zone", ZoneId.systemDefault().normalized().getId());
        root.put("max_parallelism", 1);
        root.set("params", params);
        try {
            return JSON.writeValueAsString(root);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A Flink type as lookup/pg parses it ({@code pg.ParseType}). */
    private static String flinkType(LogicalType t) {
        if (t instanceof VarBinaryType) {
            return "BYTES";
        }
        String s = t.copy(true).asSerializableString();
        return s.equals("VARCHAR(" + Integer.MAX_VALUE + ")") ? "STRING" : s;
    }

    /**
     * The cache params, as JdbcDynamicTableFactory.getLookupCache builds the cache: the legacy
     * {@code lookup.cache.max-rows} + {@code lookup.cache.ttl} make a cache when both are above 0
     * (maximumSize + expireAfterWrite + {@code lookup.cache.caching-missing-key}); {@code
     * lookup.cache = PARTIAL} replaces it with {@code DefaultLookupCache.fromConfig}; null: none.
     */
    static ObjectNode cacheParams(ReadableConfig config) {
        ObjectNode cache = null;
        long legacyRows = config.get(ConfigOptions.key(LEGACY_CACHE_MAX_ROWS).longType().defaultValue(-1L));
        Duration legacyTtl = config.get(ConfigOptions.key(LEGACY_CACHE_TTL).durationType().defaultValue(Duration.ofSeconds(10)));
        if (legacyRows > 0 && legacyTtl.compareTo(Duration.ZERO) > 0) {
            cache = JSON.createObjectNode();
            cache.put("mode", "PARTIAL");
            cache.put("max_rows", legacyRows);
            cache.put("expire_after_write_ms", legacyTtl.toMillis());
            cache.put("cache_missing_key",
                    config.get(ConfigOptions.key(LEGACY_CACHE_MISSING_KEY).booleanType().defaultValue(true)));
        }
        if (config.get(LookupOptions.CACHE_TYPE) == LookupOptions.LookupCacheType.PARTIAL) {
            boolean bounded = config.getOptional(LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_ACCESS).isPresent()
                    || config.getOptional(LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_WRITE).isPresent()
                    || config.getOptional(LookupOptions.PARTIAL_CACHE_MAX_ROWS).isPresent();
            if (!bounded) {
                throw new IllegalArgumentException(String.format(Locale.ROOT,
                        "Missing '%s', '%s' or '%s' in the configuration.",
                        LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_ACCESS.key(),
                        LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_WRITE.key(), LookupOptions.PARTIAL_CACHE_MAX_ROWS.key()));
            }
            cache = JSON.createObjectNode();
            cache.put("mode", "PARTIAL");
            ObjectNode c = cache;
            config.getOptional(LookupOptions.PARTIAL_CACHE_MAX_ROWS).ifPresent(n -> c.put("max_rows", n));
            config.getOptional(LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_WRITE).ifPresent(d -> c.put("expire_after_write_ms", d.toMillis()));
            config.getOptional(LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_ACCESS).ifPresent(d -> c.put("expire_after_access_ms", d.toMillis()));
            c.put("cache_missing_key", config.get(LookupOptions.PARTIAL_CACHE_CACHE_MISSING_KEY));
        }
        return cache;
    }

    /** The key row type Go receives (for tests). */
    RowType keyType() {
        return keyType;
    }

    @Override
    public String toString() {
        return "PostgresBatchLookup" + Arrays.toString(projected.getFieldNames().toArray());
    }
}
