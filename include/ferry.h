/*
 * ferry.h — the C ABI of libferry.so, Ferry's native operator library.
 *
 * This header is the contract; the cgo-generated header is not shipped. Every exported
 * symbol of libferry.so is declared here and nothing else is exported (build.sh checks it).
 *
 * Conventions shared by every function:
 *  - Status: functions return FERRY_OK (0) or one of the FERRY_E* codes below. On failure the
 *    caller's FerryError is filled: the caller zero-initialises it before the call and, when
 *    err->release is not NULL afterwards, calls err->release(err) once it has read the message.
 *    Errors are never kept in thread-local storage: calls may come from any thread.
 *  - Handles: opaque non-zero 64-bit values, typed by object kind and generation-checked. A zero,
 *    stale (closed), forged or wrong-kind handle yields FERRY_EINVAL, never a crash. One handle is
 *    used by one thread at a time; a concurrent call on the same handle yields FERRY_ESTATE.
 *  - Input batches are always consumed: on success and on every error path, the input ArrowArray
 *    has been released (its release callback called, release set to NULL) when the call returns.
 *    Ferry keeps no reference to input memory after a call returns: an operator that needs rows
 *    later (to continue its output, or as state) copies them.
 *  - Output structs are zero-initialised by the caller. On FERRY_OK an output ArrowArray is either
 *    filled (release != NULL) or left untouched (release == NULL) when there are no output rows.
 *    Output buffers live in C memory allocated by Ferry; the caller may keep them after the call
 *    and frees them by calling release (from any thread). Releasing never calls back into Go.
 *  - Output in chunks: process, advance, flush, export and next write one chunk of output and set *more
 *    to 1 when more follows, else to 0 (also on every error). While more is 1 the caller calls
 *    ferry_operator_next, with a fresh zero-initialised ArrowArray each time, until *more is 0;
 *    any other call on the handle before that fails with FERRY_ESTATE, except close, which is
 *    always allowed (the rest of the output is dropped). An operator whose output is bounded by a
 *    small multiple of its input (the group aggregate: at most two rows per input row) emits one
 *    chunk per call; others emit chunks of at most the spec's chunk_rows rows (default 4096).
 *  - Panics: every function recovers Go panics and returns FERRY_EINTERNAL with the panic message.
 *    A panic in a call on an operator handle poisons that operator, whose state can no longer be
 *    trusted: every later call on it but ferry_operator_close returns FERRY_EPOISONED, and close
 *    frees it; every other operator and new ones work on (the host fails the task, which restores
 *    into a new operator). A panic outside any operator (ferry_init, ferry_operator_open, a
 *    goroutine Ferry starts) poisons the library: every later call (except ferry_abi_version,
 *    ferry_version, ferry_output_bytes_outstanding and ferry_runtime_memory) returns
 *    FERRY_EPOISONED, and the host restarts the process.
 *  - Memory: after FERRY_ENOMEM, or an error that lost part of a chunked output, the operator is
 *    broken: every later call but close fails with FERRY_ESTATE (restore from a checkpoint).
 *  - Query failures: where Flink's generated code throws a TableRuntimeException for the data
 *    (SINGLE_VALUE's second row), the call fails with FERRY_EQUERY, emits nothing, and the
 *    operator is broken as after FERRY_ENOMEM; the message is Flink's exception message alone.
 *
 * Operator kinds come in two shapes; the verbs below are the same for every kind of a shape,
 * and a kind's particulars travel in its spec and its batches, never in an entry point of its
 * own (docs/abi.md):
 *  - A keyed operator (stateful, keyed by its inputs' key columns):
 *      open(spec) -> process(batches, runs, now)* / advance(watermark, now) / flush(now),
 *                    each followed by next() while more
 *                 -> snapshot(key group)* / restore(key group, blob)* / import / export
 *                 -> close
 *  - A function (stateless, one input; e.g. a lookup): open(spec, secrets) -> process (its call),
 *    followed by next() while more -> close. advance and flush emit nothing, snapshot writes
 *    nothing, restore, import and export fail.
 *
 * Batches: an input batch of input i is a struct array (format "+s") whose children are the
 * columns of the spec's inputs[i] in order, followed by one non-null int8 column holding Flink's
 * RowKind byte (0 +I, 1 -U, 2 +U, 3 -D). Output batches have the same shape: the operator's
 * output columns, then the RowKind column. Column types cross as (docs/abi.md):
 *   BOOLEAN "b", TINYINT "c", SMALLINT "s", INT "i", BIGINT "l", FLOAT "f", DOUBLE "g",
 *   DECIMAL(p,s) "d:p,s" (decimal128), VARCHAR/CHAR "u", DATE "tdD",
 *   TIMESTAMP(p<=3) "tsm:" (epoch millis), TIMESTAMP(p>3) "w:12" (int64 epoch millis LE then
 *   int32 nano-of-millisecond LE, Flink's TimestampData over its whole range).
 */
#ifndef FERRY_H
#define FERRY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. The JVM wrapper refuses a library reporting another. */
#define FERRY_ABI_VERSION 13

/* ---- Arrow C Data Interface (https://arrow.apache.org/docs/format/CDataInterface.html) ---- */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

/* ---- Status codes ---- */
enum {
  FERRY_OK = 0,
  FERRY_EINVAL = 1,       /* bad argument: NULL pointer, bad handle, invalid spec or options */
  FERRY_EDATA = 2,        /* malformed input: Arrow structure, schema mismatch, corrupt blob */
  FERRY_ESTATE = 3,       /* call not valid now: concurrent use, output pending, broken operator */
  FERRY_EUNSUPPORTED = 4, /* valid request Ferry does not implement (host falls back) */
  FERRY_ENOMEM = 5,       /* a memory limit was reached */
  FERRY_EINTERNAL = 6,    /* a Go panic was recovered; its operator (or the library) is poisoned */
  FERRY_EPOISONED = 7,    /* an earlier panic poisoned the operator (or the library) */
  FERRY_EQUERY = 8,       /* the query failed at run time as Flink's would (TableRuntimeException);
                             the message is Flink's, verbatim; the operator is broken afterwards */
  FERRY_EEXTERNAL = 9     /* an external system the operator talks to failed (the lookup's
                             PostgreSQL: down, credentials refused, a missing table, errors after
                             the retries); the operator stays usable */
};

/* A caller-owned error. Zero-initialise before a call; after a failing call, read code and
 * message, then call release (when not NULL), which frees message and resets the struct. */
struct FerryError {
  int32_t code;
  char* message; /* NUL-terminated UTF-8, "function: detail" */
  void (*release)(struct FerryError*);
};

/* A caller-owned byte blob allocated by Ferry in C memory. Zero-initialise before a call; when
 * release is not NULL afterwards, call it once to free data. An empty blob has data == NULL,
 * length == 0 and release == NULL. */
struct FerryBlob {
  uint8_t* data;
  int64_t length;
  void (*release)(struct FerryBlob*);
};

/* An opaque operator handle; 0 is never valid. */
typedef uint64_t FerryHandle;

/* Figures of an operator's state, for the host's metrics. */
struct FerryOperatorStats {
  int64_t keys;        /* keys (groups) the state holds */
  int64_t state_bytes; /* estimated bytes of memory the state owns */
  int64_t next_timer_ms; /* the earliest pending processing-time timer (epoch ms), INT64_MAX when
                            none: the host calls ferry_operator_advance once its processing
                            time reaches it */
};

/* The ABI version of the loaded library (FERRY_ABI_VERSION it was built with). */
int32_t ferry_abi_version(void);

/* A static, NUL-terminated version string, e.g. "ferry 0.1.0 (abi 6)". Never freed. */
const char* ferry_version(void);

/* Applies process-wide Go runtime settings from a JSON object (all fields optional):
 *   {"max_procs": 2, "memory_limit_bytes": 1073741824, "gc_percent": 100,
 *    "crash_output": "/path/to/ferry-crash.log", "test_hooks": false}
 * max_procs sets GOMAXPROCS, memory_limit_bytes the Go soft memory limit, crash_output the file
 * Go fatal errors are written to (traceback "all"). test_hooks enables test-only spec options
 * (panic injection); only a library built for tests (build tag ferrytest) accepts true. May be
 * called again to change settings. */
int32_t ferry_init(const char* options_json, struct FerryError* err);

/* Opens an operator from a NUL-terminated JSON spec (docs/abi.md: a common header with the
 * operator's inputs, plus the kind's params). secrets_json is NULL or a NUL-terminated JSON
 * object a function kind takes beside its spec (for jdbc_lookup: the connection string, user
 * and password), kept out of the spec so it never reaches logs; no error message quotes it. A
 * function opened without secrets (NULL) is a spec check: it connects nothing and its process
 * fails with FERRY_ESTATE; one opened with them connects and checks the external side (the
 * lookup's table and columns), FERRY_EEXTERNAL when that fails. A keyed kind takes no secrets.
 * n_schemas is 0 (no schema check) or the spec's number of inputs (at most 64): input_schemas[i],
 * when not NULL, is checked against input i's columns plus the RowKind column. Every non-NULL
 * schema is consumed (released), also on error. On success *out holds the new handle. */
int32_t ferry_operator_open(const char* spec_json, const char* secrets_json, int32_t n_schemas,
                            struct ArrowSchema* const* input_schemas, FerryHandle* out,
                            struct FerryError* err);

/* Exports the schema of the operator's output batches into the zero-initialised *out. The
 * caller releases it. */
int32_t ferry_operator_output_schema(FerryHandle h, struct ArrowSchema* out,
                                     struct FerryError* err);

/* Processes the rows of one call at processing time now_ms (epoch milliseconds, the host's clock
 * for idle-state TTL: the JVM wrapper passes the clock Flink's state TTL reads, the wall clock in
 * a job) and fills *out with the first chunk of the changelog it produces, in order; *more says
 * whether ferry_operator_next must follow. batches holds n_batches pointers (1 to the spec's
 * number of inputs), the batches of inputs 0 .. n_batches-1 in order: NULL for an input without
 * a batch in this call, as every input beyond n_batches; at least one is not NULL. runs holds n_runs (input, rows) pairs of int32,
 * the order the rows arrived in, for an operator whose results depend on how its inputs
 * interleave (the joins): the k-th run is the next runs[2k+1] >= 1 rows of input runs[2k]'s
 * batch, and the runs use every batch's rows exactly once, in order (FERRY_EINVAL otherwise).
 * n_runs 0 means input 0's rows, then input 1's, and so on. Every non-NULL batch is consumed,
 * also on error and when *more is 1 (when n_batches is outside 1..64, none is read, so none can
 * be released). The batch of a one-input operator: n_batches 1, n_runs 0. */
int32_t ferry_operator_process(FerryHandle h, int32_t n_batches,
                               struct ArrowArray* const* batches, int32_t n_runs,
                               const int32_t* runs, int64_t now_ms, struct ArrowArray* out,
                               int32_t* more, struct FerryError* err);

/* Advances event time to watermark_ms and processing time to now_ms; fills *out with the first
 * chunk of the rows this releases (timers, expiry). watermark_ms INT64_MIN is a processing-time
 * callback (next_timer_ms came due): it fires processing-time timers only and leaves event time
 * where it is. */
int32_t ferry_operator_advance(FerryHandle h, int64_t watermark_ms, int64_t now_ms,
                               struct ArrowArray* out, int32_t* more, struct FerryError* err);

/* Emits everything the operator buffers (called before a checkpoint barrier and at end of
 * input), first chunk into *out. */
int32_t ferry_operator_flush(FerryHandle h, int64_t now_ms, struct ArrowArray* out, int32_t* more,
                             struct FerryError* err);

/* Fills the zero-initialised *out with the next chunk of the output of the last process, advance
 * or flush that set *more to 1, and sets *more again. Fails with FERRY_ESTATE when no output is
 * pending. */
int32_t ferry_operator_next(FerryHandle h, struct ArrowArray* out, int32_t* more,
                            struct FerryError* err);

/* Serialises the state of one key group as a sequence of chunks (docs/state.md, snapshot/blob.go):
 * each call fills *out with the key group's next chunk, each chunk self-delimiting, checksummed
 * and zstd-compressed, holding about 128 KiB of state (more when one key holds more). The call
 * after the last chunk (which is flagged as last) leaves *out empty and ends the sequence; so
 * does the first call for a key group without state. Calling for another key group abandons an
 * unfinished sequence. The first call writes the chunks of every key group of the range at once
 * (one pass over the state, compressed on several threads); later calls hand them out until a
 * call that may change the state (any but snapshot and stats) drops them, so the key groups of one
 * checkpoint are called in a row.
 * key_group must lie in the operator's key-group range. */
int32_t ferry_operator_snapshot(FerryHandle h, int32_t key_group, struct FerryBlob* out,
                                struct FerryError* err);

/* Freezes the operator's state for a checkpoint written while calls go on (docs/state.md,
 * "Checkpoints without a stall"): *view receives the id of a consistent view of the state as it
 * is now, taken in time independent of the state's size and without copying it. Views stay open
 * until ferry_operator_release_view or ferry_operator_close; several may be open at once. */
int32_t ferry_operator_freeze(FerryHandle h, int64_t* view, struct FerryError* err);

/* ferry_operator_snapshot for a view ferry_operator_freeze returned: the chunks
 * ferry_operator_snapshot would have handed out at the freeze, key group by key group. It may run
 * on any thread, also while other calls on the handle run (each takes turns with the view's
 * writing); calls for one view run one at a time. The first call writes the whole view. A view
 * released, or of a closed operator, fails with FERRY_EINVAL; one released while it is written
 * fails with FERRY_ESTATE. */
int32_t ferry_operator_snapshot_view(FerryHandle h, int64_t view, int32_t key_group, struct FerryBlob* out,
                                     struct FerryError* err);

/* Ends a view, written or not, on any thread, and frees what it kept. Releasing a view twice
 * does nothing. */
int32_t ferry_operator_release_view(FerryHandle h, int64_t view, struct FerryError* err);

/* Restores one chunk written by ferry_operator_snapshot. The key group must lie in the
 * operator's range (FERRY_EINVAL otherwise, checked first); the chunk is validated before it is
 * read; data is only read during the call. The key group's first chunk requires that it holds no
 * state, later chunks must follow in order, and until the last chunk arrives every call but
 * restore, stats, output_schema and close fails (the state would be incomplete). A chunk that
 * fails leaves none of its state behind. */
int32_t ferry_operator_restore(FerryHandle h, int32_t key_group, const uint8_t* data,
                               int64_t length, struct FerryError* err);

/* Imports keyed state Flink's own operator left in a checkpoint or savepoint (docs/state.md,
 * "Switching Ferry on or off"): one row per key, in the operator kind's import layout (for the
 * group aggregates: the key fields, every call's accumulator fields as Flink's accState holds
 * them, for a single-phase aggregate over retracting input the record count, with idle-state TTL
 * the last write time in ms), then the RowKind
 * column. Every key must be new to the operator; state Ferry would not hold exactly as Flink did
 * fails the call (FERRY_EUNSUPPORTED) and no key of the batch is kept. Kinds that do not import
 * fail with FERRY_EUNSUPPORTED. The library releases schema and batch before it returns. */
int32_t ferry_operator_import(FerryHandle h, struct ArrowSchema* schema, struct ArrowArray* batch,
                              struct FerryError* err);

/* Writes the operator's keyed state in the form Flink's own operator keeps, for a savepoint
 * Flink's operator restores (docs/state.md, "Switching Ferry on or off"): output chunks as
 * ferry_operator_advance, one row per key, in the kind's export layout (for the group aggregates:
 * the key as the bytes of Flink's BinaryRowData, then the import layout's accumulator fields and
 * record count), then the RowKind column (+I). While *more is 1, ferry_operator_next hands out the
 * rest. Buffered input rows must have been flushed. Kinds that do not export, and state whose
 * Flink form Ferry does not write, fail with FERRY_EUNSUPPORTED. */
int32_t ferry_operator_export(FerryHandle h, struct ArrowArray* out, int32_t* more, struct FerryError* err);

/* Fills *out with the figures of the operator's state. Cheap (no pass over the state); like
 * every call on a handle, not concurrently with another call on it. */
int32_t ferry_operator_stats(FerryHandle h, struct FerryOperatorStats* out, struct FerryError* err);

/* Closes the operator and frees its state. The handle is invalid afterwards. Output batches
 * already handed out stay valid until released. */
int32_t ferry_operator_close(FerryHandle h, struct FerryError* err);

/* Bytes of output memory (batches, schemas, blobs) handed out and not yet released. */
int64_t ferry_output_bytes_outstanding(void);

/* The Go runtime's memory, process-wide (Go's runtime/metrics): what the host shows next to its
 * own memory figures and checks the soft limit of ferry_init against. */
struct FerryRuntimeMemory {
  int64_t in_use_bytes;    /* memory the Go runtime has mapped and not returned to the OS: what
                              the soft limit (memory_limit_bytes) bounds */
  int64_t heap_live_bytes; /* heap bytes found live by the last garbage collection */
  int64_t limit_bytes;     /* the soft memory limit in force; INT64_MAX when none */
};

/* Fills *out. Never fails, also when the library is poisoned; safe from any thread. */
void ferry_runtime_memory(struct FerryRuntimeMemory* out);

#ifdef __cplusplus
}
#endif

#endif /* FERRY_H */
