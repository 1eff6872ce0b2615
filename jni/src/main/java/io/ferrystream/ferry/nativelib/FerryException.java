package io.ferrystream.ferry.nativelib;

import java.nio.charset.StandardCharsets;

/**
 * A failed call into libferry.so. {@link #code()} is one of the status codes of
 * {@code include/ferry.h} ({@link #EINVAL} … {@link #EEXTERNAL}), or {@link #ELOAD} when the
 * library itself could not be loaded. The message is the native one, {@code "function: detail"}
 * ({@link #EQUERY}: Flink's message alone).
 */
public class FerryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Java-side only: the native library could not be loaded or is incompatible. */
    public static final int ELOAD = -1;
    /** FERRY_EINVAL: bad argument, NULL pointer, bad handle, invalid spec or options. */
    public static final int EINVAL = 1;
    /** FERRY_EDATA: malformed input: Arrow structure, schema mismatch, corrupt blob. */
    public static final int EDATA = 2;
    /** FERRY_ESTATE: call not valid now (concurrent use of one handle, earlier failure). */
    public static final int ESTATE = 3;
    /** FERRY_EUNSUPPORTED: a valid request Ferry does not implement; the host falls back. */
    public static final int EUNSUPPORTED = 4;
    /** FERRY_ENOMEM: a memory limit was reached. */
    public static final int ENOMEM = 5;
    /**
     * FERRY_EINTERNAL: a Go panic was recovered; the operator it happened in is poisoned (a panic
     * outside any operator poisons the library).
     */
    public static final int EINTERNAL = 6;
    /**
     * FERRY_EPOISONED: an earlier panic poisoned the operator (close it; a new one, restored from a
     * checkpoint, works) or, outside any operator, the library (restart the process).
     */
    public static final int EPOISONED = 7;
    /**
     * FERRY_EQUERY: the query failed at run time where Flink's generated code throws a {@code
     * TableRuntimeException}; the message is Flink's, verbatim (the operator throws that
     * exception with it); the native operator is broken afterwards.
     */
    public static final int EQUERY = 8;
    /**
     * FERRY_EEXTERNAL: an external system the operator talks to failed (the JDBC lookup's
     * PostgreSQL: down, credentials refused, a missing table, errors after the retries); the
     * operator stays usable, the message never contains the password.
     */
    public static final int EEXTERNAL = 9;

    private final int code;

    public FerryException(int code, String message) {
        super(message);
        this.code = code;
    }

    public FerryException(int code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    /** The status code, one of the constants of this class. */
    public int code() {
        return code;
    }

    /** The symbolic name of {@link #code()}, e.g. {@code "EDATA"}. */
    public String codeName() {
        return nameOf(code);
    }

    /** The symbolic name of a status code. */
    public static String nameOf(int code) {
        switch (code) {
            case ELOAD: return "ELOAD";
            case 0: return "OK";
            case EINVAL: return "EINVAL";
            case EDATA: return "EDATA";
            case ESTATE: return "ESTATE";
            case EUNSUPPORTED: return "EUNSUPPORTED";
            case ENOMEM: return "ENOMEM";
            case EINTERNAL: return "EINTERNAL";
            case EPOISONED: return "EPOISONED";
            case EQUERY: return "EQUERY";
            case EEXTERNAL: return "EEXTERNAL";
            default: return "E" + code;
        }
    }

    /** Whether the native operator is unusable from now on: close it (Flink's task failover does). */
    public boolean isFatal() {
        return code == EINTERNAL || code == EPOISONED;
    }

    @Override
    public String toString() {
        return getClass().getName() + " [" + codeName() + "]: " + getMessage();
    }

    /**
     * Called by the JNI glue: the native message arrives as UTF-8 bytes (JNI's modified UTF-8
     * cannot carry supplementary characters).
     */
    static FerryException fromNative(int code, byte[] utf8Message) {
        return new FerryException(code, new String(utf8Message, StandardCharsets.UTF_8));
    }
}
