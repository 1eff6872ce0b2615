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
 *    Ferry keeps no reference to input memory after a call returns.
 *  - Output structs are zero-initialised by the caller. On FERRY_OK an output ArrowArray is either
 *    filled (release != NULL) or left untouched (release == NULL) when there are no output rows.
 *    Output buffers live in C memory allocated by Ferry; the caller may keep them after the call
 *    and frees them by calling release (from any thread). Releasing never calls back into Go.
 *  - Panics: every function recovers Go panics and returns FERRY_EINTERNAL with the panic message.
 *    After a panic the library is poisoned: every later call (except ferry_abi_version,
 *    ferry_version and ferry_output_bytes_outstanding) returns FERRY_EPOISONED, because operator
 *    state can no longer be trusted. The host restarts the process.
 *
 * Operator lifecycle, identical for every operator kind:
 *   open(spec) -> process(batch, now)* / advance(watermark, now) / flush(now)
 *              -> snapshot(key group)* / restore(key group, blob)* -> close
 *
 * Batches: an input batch is a struct array (format "+s") whose children are the spec's input
 * columns in order, followed by one non-null int8 column holding Flink's RowKind byte
 * (0 +I, 1 -U, 2 +U, 3 -D). Output batches have the same shape: the operator's output columns,
 * then the RowKind column. Column types cross as (docs/abi.md):
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
#define FERRY_ABI_VERSION 3

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
  FERRY_ESTATE = 3,       /* call not valid now: concurrent use of one handle */
  FERRY_EUNSUPPORTED = 4, /* valid request Ferry does not implement (host falls back) */
  FERRY_ENOMEM = 5,       /* a memory limit was reached */
  FERRY_EINTERNAL = 6,    /* a Go panic was recovered; the library is now poisoned */
  FERRY_EPOISONED = 7     /* an earlier panic poisoned the library */
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
};

/* The ABI version of the loaded library (FERRY_ABI_VERSION it was built with). */
int32_t ferry_abi_version(void);

/* A static, NUL-terminated version string, e.g. "ferry 0.1.0 (abi 1)". Never freed. */
const char* ferry_version(void);

/* Applies process-wide Go runtime settings from a JSON object (all fields optional):
 *   {"max_procs": 2, "memory_limit_bytes": 1073741824, "gc_percent": 100,
 *    "crash_output": "/path/to/ferry-crash.log", "test_hooks": false}
 * max_procs sets GOMAXPROCS, memory_limit_bytes the Go soft memory limit, crash_output the file
 * Go fatal errors are written to (traceback "all"). test_hooks enables test-only spec options
 * (panic injection); production hosts leave it off. May be called again to change settings. */
int32_t ferry_init(const char* options_json, struct FerryError* err);

/* Opens an operator from a NUL-terminated JSON spec (docs/abi.md). input_schema may be NULL;
 * when given it is checked against the spec's input columns plus the RowKind column, and it is
 * always consumed (released). On success *out holds the new handle. */
int32_t ferry_operator_open(const char* spec_json, struct ArrowSchema* input_schema,
                            FerryHandle* out, struct FerryError* err);

/* Exports the schema of the operator's output batches into the zero-initialised *out. The
 * caller releases it. */
int32_t ferry_operator_output_schema(FerryHandle h, struct ArrowSchema* out,
                                     struct FerryError* err);

/* Processes one input batch at processing time now_ms (epoch milliseconds, the host's clock for
 * idle-state TTL: the JVM wrapper passes the clock Flink's state TTL reads, the wall clock in a
 * job) and fills *output with the changelog it produces, in order. input is always consumed. */
int32_t ferry_operator_process(FerryHandle h, struct ArrowArray* input, int64_t now_ms,
                               struct ArrowArray* output, struct FerryError* err);

/* Advances event time to watermark_ms and processing time to now_ms; fills *output with rows
 * this releases (timers, expiry). */
int32_t ferry_operator_advance(FerryHandle h, int64_t watermark_ms, int64_t now_ms,
                               struct ArrowArray* output, struct FerryError* err);

/* Emits everything the operator buffers (called before a checkpoint barrier and at end of
 * input). */
int32_t ferry_operator_flush(FerryHandle h, int64_t now_ms, struct ArrowArray* output,
                             struct FerryError* err);

/* Serialises the state of one key group as a sequence of chunks (docs/abi.md, snapshot/blob.go):
 * each call fills *out with the key group's next chunk, each chunk self-delimiting, checksummed
 * and zstd-compressed, holding at most about 4 MiB of state. The call after the last chunk (which
 * is flagged as last) leaves *out empty and ends the sequence; so does the first call for a key
 * group without state. Calling for another key group abandons an unfinished sequence. The
 * operator's state must not change between the calls of one sequence. key_group must lie in the
 * operator's key-group range. */
int32_t ferry_operator_snapshot(FerryHandle h, int32_t key_group, struct FerryBlob* out,
                                struct FerryError* err);

/* Restores one chunk written by ferry_operator_snapshot. The chunk is validated before it is
 * read; data is only read during the call. The key group must lie in the operator's range; its
 * first chunk requires that it holds no state, later chunks must follow in order, and until the
 * last chunk arrives every call but restore fails (the state would be incomplete). */
int32_t ferry_operator_restore(FerryHandle h, int32_t key_group, const uint8_t* data,
                               int64_t length, struct FerryError* err);

/* Fills *out with the figures of the operator's state. Cheap (no pass over the state); like
 * every call on a handle, not concurrently with another call on it. */
int32_t ferry_operator_stats(FerryHandle h, struct FerryOperatorStats* out, struct FerryError* err);

/* Closes the operator and frees its state. The handle is invalid afterwards. Output batches
 * already handed out stay valid until released. */
int32_t ferry_operator_close(FerryHandle h, struct FerryError* err);

/* Bytes of output memory (batches, schemas, blobs) handed out and not yet released. */
int64_t ferry_output_bytes_outstanding(void);

#ifdef __cplusplus
}
#endif

#endif /* FERRY_H */
