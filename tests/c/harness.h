/* harness.h — the C harness's tiny test framework and shared declarations.
 *
 * Every CHECK counts one check; a failing check prints file:line and what differed, and the
 * harness exits 1 when any check failed. */
#ifndef FERRY_HARNESS_H
#define FERRY_HARNESS_H

#include <stdint.h>
#include <stdio.h>

#include "ferry.h"

extern long g_checks;
extern long g_failures;
extern const char* g_scenario; /* name of the running scenario, printed with failures */

void check_fail(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define CHECK(cond)                                                   \
  do {                                                                \
    g_checks++;                                                       \
    if (!(cond)) check_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
  } while (0)

#define CHECK_MSG(cond, ...)                                \
  do {                                                      \
    g_checks++;                                             \
    if (!(cond)) check_fail(__FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

#define CHECK_EQ(got, want)                                                              \
  do {                                                                                   \
    long long got_ = (long long)(got), want_ = (long long)(want);                        \
    g_checks++;                                                                          \
    if (got_ != want_)                                                                   \
      check_fail(__FILE__, __LINE__, "%s == %s: got %lld, want %lld", #got, #want, got_, \
                 want_);                                                                 \
  } while (0)


/* Status helpers (checks.c). */

/* rc must be FERRY_OK and err untouched; on failure the message is printed and released. */
#define CHECK_OK(rc, err) check_ok_at(__FILE__, __LINE__, (rc), &(err))
void check_ok_at(const char* file, int line, int32_t rc, struct FerryError* err);

/* rc and err->code must be want; err->message must read "<fn>: ..." and contain every
 * non-NULL substring in subs (up to two); err->release must be set and must free the message
 * and reset the struct. err is zeroed afterwards for reuse. */
#define CHECK_ERR(rc, err, want, fn, sub1, sub2) \
  check_err_at(__FILE__, __LINE__, (rc), &(err), (want), (fn), (sub1), (sub2))
void check_err_at(const char* file, int line, int32_t rc, struct FerryError* err, int32_t want,
                  const char* fn, const char* sub1, const char* sub2);

/* *more of the output calls whose chunking a check does not look at (the group aggregate emits
 * one chunk per call). */
extern int32_t g_more;

/* The input_schemas arguments of ferry_operator_open for an operator of one input. */
#define ONE_SCHEMA(s) 1, (struct ArrowSchema* const[]){(s)}

/* The batches and runs arguments of ferry_operator_process for a call of one input's batch. */
#define ONE_BATCH(a) 1, (struct ArrowArray* const[]){(a)}, 0, NULL

extern long g_errors_received; /* error structs filled by Ferry */
extern long g_errors_released; /* ... and released through err->release */

/* Operator helpers (harness.c). */

/* Opens an operator (no input schema) and checks FERRY_OK; returns the handle (0 on failure). */
#define OPEN_OK(spec) open_ok_at(__FILE__, __LINE__, (spec))
FerryHandle open_ok_at(const char* file, int line, const char* spec);

/* Processes the built batch *in (id from ab_batch) into *out, which this zero-initialises:
 * status FERRY_OK and the input released exactly once. */
#define PROCESS_OK(h, in, id, out) process_ok_at(__FILE__, __LINE__, (h), (in), (id), (out))
void process_ok_at(const char* file, int line, FerryHandle h, struct ArrowArray* in, int64_t id,
                   struct ArrowArray* out);

/* The input built as batch id was released exactly once (release callback ran, field NULL). */
#define CHECK_CONSUMED(in, id) check_consumed_at(__FILE__, __LINE__, &(in), (id))
void check_consumed_at(const char* file, int line, const struct ArrowArray* in, int64_t id);

#define CLOSE_OK(h) close_ok_at(__FILE__, __LINE__, (h))
void close_ok_at(const char* file, int line, FerryHandle h);

/* Scenarios. */
void scenario_init_options(void);
void scenario_insert_only(void);
void scenario_retracting(void);
void scenario_output_schema(void);
void scenario_snapshot_restore(void);
void scenario_errors(void);
void scenario_chunked_output(void);
void scenario_process_runs(void);
void scenario_leaks(void);
void scenario_poison(void);
int run_demo(void);

#endif
