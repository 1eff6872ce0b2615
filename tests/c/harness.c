/* harness.c — entry point of the C harness of libferry.so.
 *
 *   ferry_harness        run every scenario; the panic-poisoning scenario runs last. Needs a
 *                        libferry.so built with the ferrytest tag (test hooks, test_fanout)
 *   ferry_harness demo   a small readable Nexmark-shaped run (no poisoning)
 *
 * Exit status: 0 when every check passed, 1 otherwise. */
#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_build.h"

long g_checks;
long g_failures;
const char* g_scenario = "";
int32_t g_more;
long g_errors_received;
long g_errors_released;

void check_fail(const char* file, int line, const char* fmt, ...) {
  g_failures++;
  fprintf(stderr, "FAIL %s:%d [%s]: ", file, line, g_scenario);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

void check_ok_at(const char* file, int line, int32_t rc, struct FerryError* err) {
  g_checks++;
  if (rc != FERRY_OK) {
    check_fail(file, line, "status %d, want FERRY_OK; message: %s", rc,
               err->message ? err->message : "(none)");
  } else if (err->release || err->message || err->code) {
    check_fail(file, line, "FERRY_OK but the error struct was written");
  }
  if (err->release) {
    g_errors_received++;
    err->release(err);
    g_errors_released++;
  }
  memset(err, 0, sizeof *err);
}

void check_err_at(const char* file, int line, int32_t rc, struct FerryError* err, int32_t want,
                  const char* fn, const char* sub1, const char* sub2) {
  const char* msg = err->message ? err->message : "";
  g_checks++;
  if (rc != want) check_fail(file, line, "status %d, want %d; message: %s", rc, want, msg);
  g_checks++;
  if (err->code != want) check_fail(file, line, "err.code %d, want %d", err->code, want);
  g_checks++;
  size_t fl = strlen(fn);
  if (!err->message || !err->message[0] || strncmp(msg, fn, fl) != 0 || msg[fl] != ':')
    check_fail(file, line, "message must read \"%s: ...\", got \"%s\"", fn, msg);
  const char* subs[2] = {sub1, sub2};
  for (int i = 0; i < 2; i++) {
    if (!subs[i]) continue;
    g_checks++;
    if (!strstr(msg, subs[i]))
      check_fail(file, line, "message \"%s\" does not mention \"%s\"", msg, subs[i]);
  }
  g_checks++;
  if (!err->release) {
    check_fail(file, line, "err.release is NULL after a failing call");
  } else {
    g_errors_received++;
    err->release(err);
    g_errors_released++;
    g_checks++;
    if (err->release || err->message)
      check_fail(file, line, "err.release did not reset the error struct");
  }
  memset(err, 0, sizeof *err);
}

FerryHandle open_ok_at(const char* file, int line, const char* spec) {
  struct FerryError err = {0};
  FerryHandle h = 0;
  check_ok_at(file, line, ferry_operator_open(spec, NULL, 0, NULL, &h, &err), &err);
  g_checks++;
  if (h == 0) check_fail(file, line, "ferry_operator_open returned handle 0");
  return h;
}

void check_consumed_at(const char* file, int line, const struct ArrowArray* in, int64_t id) {
  g_checks++;
  if (in->release != NULL) check_fail(file, line, "input batch %lld not released", (long long)id);
  g_checks++;
  if (ab_releases(id) != 1)
    check_fail(file, line, "input batch %lld released %d times, want 1", (long long)id,
               ab_releases(id));
}

void process_ok_at(const char* file, int line, FerryHandle h, struct ArrowArray* in, int64_t id,
                   struct ArrowArray* out) {
  struct FerryError err = {0};
  memset(out, 0, sizeof *out);
  int32_t more = -1;
  check_ok_at(file, line, ferry_operator_process(h, ONE_BATCH(in), 1000, out, &more, &err), &err);
  check_consumed_at(file, line, in, id);
  g_checks++;
  if (more != 0) check_fail(file, line, "*more = %d, want 0 (one output chunk per call)", more);
}

void close_ok_at(const char* file, int line, FerryHandle h) {
  struct FerryError err = {0};
  check_ok_at(file, line, ferry_operator_close(h, &err), &err);
}

static void run(const char* name, void (*fn)(void)) {
  long checks = g_checks, failures = g_failures;
  g_scenario = name;
  fn();
  printf("%-22s %5ld checks, %ld failed\n", name, g_checks - checks, g_failures - failures);
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "demo") == 0) {
    int rc = run_demo();
    ab_cleanup();
    return rc;
  }
  if (argc > 1) {
    fprintf(stderr, "usage: %s [demo]\n", argv[0]);
    return 2;
  }
  /* Under valgrind (its preload library is in LD_PRELOAD), Go's signal-based preemption makes
   * valgrind report invalid writes in runtime.asyncPreempt that cannot be told apart from real
   * errors in libferry.so's Go code (see go-runtime.supp). */
  const char* preload = getenv("LD_PRELOAD");
  const char* godebug = getenv("GODEBUG");
  if (preload && strstr(preload, "vgpreload") && !(godebug && strstr(godebug, "asyncpreemptoff=1")))
    fprintf(stderr,
            "harness: running under valgrind without GODEBUG=asyncpreemptoff=1: reports of "
            "Invalid write/read of size 8 in a goroutine stack are Go's async preemption\n");
  printf("%s, ABI %d\n", ferry_version(), ferry_abi_version());
  g_checks++;
  if (ferry_abi_version() != FERRY_ABI_VERSION) check_fail(__FILE__, __LINE__, "ABI version");

  run("init options", scenario_init_options);
  run("insert-only aggregate", scenario_insert_only);
  run("retracting aggregate", scenario_retracting);
  run("output schema", scenario_output_schema);
  run("snapshot/restore", scenario_snapshot_restore);
  run("error paths", scenario_errors);
  run("chunked output", scenario_chunked_output);
  run("process runs", scenario_process_runs);
  run("leak accounting", scenario_leaks);
  /* Last: it turns the test hooks on. */
  run("panic poisoning", scenario_poison);

  ab_cleanup();
  printf("%ld checks, %ld failed\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
