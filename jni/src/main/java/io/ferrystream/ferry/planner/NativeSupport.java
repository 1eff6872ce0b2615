package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.AbstractNativeOperator;
import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.table.types.logical.RowType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Asks libferry.so whether it runs a spec, of any kind: opens the operator exactly as a subtask
 * would ({@link NativeSpec#open}, for a subtask owning every key group of maxParallelism 128) and
 * closes it. Go is the authority on what is native; a spec it refuses with FERRY_EUNSUPPORTED or
 * FERRY_EINVAL stays Flink's, with Go's message as the reason. Answers are cached per spec JSON.
 */
public final class NativeSupport {
    private static final Logger LOG = LoggerFactory.getLogger(NativeSupport.class);

    /** Cache bound; specs are small, but a long-lived SQL gateway plans many queries. */
    private static final int MAX_CACHED = 4096;
    /** The max parallelism of the probe: every key group of it is the probe's. */
    private static final int PROBE_MAX_PARALLELISM = 128;
    /** Cached answer for a supported spec. */
    private static final String NATIVE = "";

    /** Spec JSON → "" when native, else the reason it is not. */
    private static final Map<String, String> CACHE = new ConcurrentHashMap<>();

    private NativeSupport() {}

    /** Empty when Go opens the spec; otherwise why not. */
    public static Optional<String> check(NativeSpec spec) {
        return check(spec, null);
    }

    /**
     * Empty when Go opens the spec and, given {@code outputType} (Flink's row type of the
     * operator's output), its output columns are the ones Flink's row type declares, column for
     * column as the operator checks them when it opens; otherwise why not.
     */
    public static Optional<String> check(NativeSpec spec, @Nullable RowType outputType) {
        String json = spec.toJson(PROBE_MAX_PARALLELISM, 0, PROBE_MAX_PARALLELISM - 1);
        String key = outputType == null ? json : json + "\n" + outputType.asSerializableString();
        String reason = CACHE.get(key);
        if (reason == null) {
            Answer answer = probe(spec, json, outputType);
            reason = answer.reason;
            if (answer.cacheable) {
                if (CACHE.size() >= MAX_CACHED) {
                    CACHE.clear();
                }
                CACHE.put(key, reason);
            }
        }
        return reason.isEmpty() ? Optional.empty() : Optional.of(reason);
    }

    /** A probe's outcome: {@link #NATIVE} or a reason, and whether it depends only on the spec. */
    private static final class Answer {
        final String reason;
        final boolean cacheable;

        Answer(String reason, boolean cacheable) {
            this.reason = reason;
            this.cacheable = cacheable;
        }
    }

    private static Answer probe(NativeSpec spec, String json, @Nullable RowType outputType) {
        try (BufferAllocator allocator = new RootAllocator();
                NativeOperator op = spec.open(PROBE_MAX_PARALLELISM, 0, PROBE_MAX_PARALLELISM - 1, allocator)) {
            if (outputType != null) {
                try {
                    AbstractNativeOperator.checkOutputSchema(op.outputSchema(), outputType);
                } catch (IllegalStateException e) {
                    return new Answer("output: " + e.getMessage(), true);
                }
            }
            return new Answer(NATIVE, true);
        } catch (FerryException e) {
            if (e.code() == FerryException.EUNSUPPORTED || e.code() == FerryException.EINVAL) {
                return new Answer(nativeReason(e.getMessage(), spec.name()), true);
            }
            // the library is unusable (not loadable, poisoned): says nothing about the spec
            LOG.warn("Ferry: libferry.so could not check the spec {}; Flink's operator is used", json, e);
            return new Answer("libferry.so unavailable (" + e.codeName() + "): " + e.getMessage(), false);
        } catch (RuntimeException | LinkageError e) {
            LOG.warn("Ferry: checking the spec {} failed; Flink's operator is used", json, e);
            return new Answer("native check failed: " + e, false);
        }
    }

    /**
     * Go's message, shortened to its detail: without the ABI function ("ferry_operator_open: "),
     * the spec name Go echoes and the generic "not supported natively: ", e.g.
     * "aggs[0]: AVG over DECIMAL(10, 2): not native yet".
     */
    static String nativeReason(String message, String specName) {
        if (message == null || message.isBlank()) {
            return "refused by libferry.so";
        }
        String m = message;
        if (m.startsWith("ferry_")) {
            int colon = m.indexOf(": ");
            if (colon > 0 && m.substring(0, colon).matches("ferry_[a-z0-9_]+")) {
                m = m.substring(colon + 2);
            }
        }
        if (m.startsWith(specName + ": ")) {
            m = m.substring(specName.length() + 2);
        }
        return m.replaceFirst("not supported natively: ", "");
    }

    /** Forgets every cached answer (tests; a reloaded library). */
    static void clearCache() {
        CACHE.clear();
    }

    static int cacheSize() {
        return CACHE.size();
    }
}
