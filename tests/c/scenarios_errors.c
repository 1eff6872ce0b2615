/* scenarios_errors.c — error paths, leak accounting and (last) a panic that poisons its operator.
 *
 * Every failing call must return its status, fill the caller's FerryError with a message that
 * reads "<function>: ..." and a release that frees it, and consume its input array exactly
 * once; an output struct stays untouched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_build.h"
#include "harness.h"

/* k BIGINT, x INT, s VARCHAR (not aggregated, still validated), d DOUBLE. */
static const char* spec_e =
    "{\"kind\":\"group_aggregate\",\"name\":\"GroupAggregate(groupBy=[k])\","
    "\"inputs\":[{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},{\"name\":\"x\","
    "\"type\":\"INT\"},{\"name\":\"s\",\"type\":\"VARCHAR\"},{\"name\":\"d\","
    "\"type\":\"DOUBLE\"}],\"keys\":[0]}],\"max_parallelism\":128,"
    "\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[1]},{\"func\":\"COUNT\",\"args\":[]},"
    "{\"func\":\"MAX\",\"args\":[3]}],\"generate_update_before\":true}}";

#define E_IN "liug"
#define E_OUT "lilg"
static const int8_t e_kinds[] = {KI, KI, KI};
static const val e_rows[] = {
    VI(1), VI(10), VS("abc"),             VD(1.0), /* */
    VI(2), VN,     VN,                    VN,      /* */
    VI(1), VI(5),  VS("a-longer-string"), VD(3.0), /* */
};
static const int8_t e_out_kinds[] = {KI, KI, KUB, KUA};
static const val e_out[] = {
    VI(1), VI(10), VI(1), VD(1.0), VI(2), VN,     VI(1), VN,
    VI(1), VI(10), VI(1), VD(1.0), VI(1), VI(15), VI(2), VD(3.0),
};

static int64_t valid_batch(struct ArrowArray* in) { return ab_batch(in, E_IN, 3, e_kinds, e_rows); }

/* A call on a bad handle: EINVAL from every handle-taking function; inputs consumed. */
static void bad_handle(FerryHandle h, const char* what) {
  struct FerryError err = {0};
  struct ArrowArray in, out;
  memset(&out, 0, sizeof out);
  int64_t id = valid_batch(&in);
  CHECK_ERR(ferry_operator_process(h, ONE_BATCH(&in), 0, &out, &g_more, &err), err, FERRY_EINVAL,
            "ferry_operator_process", "handle", NULL);
  CHECK_CONSUMED(in, id);
  CHECK(out.release == NULL);
  CHECK_ERR(ferry_operator_advance(h, 0, 0, &out, &g_more, &err), err,
            FERRY_EINVAL, "ferry_operator_advance",
            "handle", NULL);
  CHECK_ERR(ferry_operator_flush(h, 0, &out, &g_more, &err), err,
            FERRY_EINVAL, "ferry_operator_flush",
            "handle", NULL);
  CHECK(out.release == NULL);
  struct ArrowSchema s;
  memset(&s, 0, sizeof s);
  CHECK_ERR(ferry_operator_output_schema(h, &s, &err), err, FERRY_EINVAL,
            "ferry_operator_output_schema", "handle", NULL);
  CHECK(s.release == NULL);
  struct FerryBlob b = {0};
  CHECK_ERR(ferry_operator_snapshot(h, 0, &b, &err), err, FERRY_EINVAL, "ferry_operator_snapshot",
            "handle", NULL);
  CHECK(b.release == NULL && b.data == NULL);
  static const uint8_t junk[48] = "FRYS";
  CHECK_ERR(ferry_operator_restore(h, 0, junk, sizeof junk, &err), err, FERRY_EINVAL,
            "ferry_operator_restore", "handle", NULL);
  struct FerryOperatorStats st = {0};
  CHECK_ERR(ferry_operator_stats(h, &st, &err), err, FERRY_EINVAL, "ferry_operator_stats", "handle",
            NULL);
  CHECK_ERR(ferry_operator_close(h, &err), err, FERRY_EINVAL, "ferry_operator_close", "handle",
            NULL);
  /* And with a NULL error struct: no crash. */
  id = valid_batch(&in);
  CHECK_EQ(ferry_operator_process(h, ONE_BATCH(&in), 0, &out, &g_more, NULL), FERRY_EINVAL);
  CHECK_CONSUMED(in, id);
  CHECK_EQ(ferry_operator_close(h, NULL), FERRY_EINVAL);
  (void)what;
}

static void bad_handles(void) {
  FerryHandle a = OPEN_OK(spec_e);
  FerryHandle b = OPEN_OK(spec_e);
  CLOSE_OK(b);
  bad_handle(0, "zero");
  bad_handle(b, "closed");
  bad_handle((a & ~(0xffULL << 56)) | (2ULL << 56), "wrong kind byte");
  bad_handle(a & ~(0xffULL << 56), "kind byte 0");
  bad_handle(0x0100000000abcdefULL, "random, operator kind byte");
  bad_handle(0x123456789abcdef0ULL, "random");
  bad_handle(a ^ (1ULL << 32), "wrong generation");
  /* The slot of a closed handle is reused by a new operator; the old handle stays invalid. */
  FerryHandle c = OPEN_OK(spec_e);
  CHECK(c != b);
  bad_handle(b, "closed, slot reused");
  /* The valid handles still work. */
  struct ArrowArray in, out;
  int64_t id = valid_batch(&in);
  PROCESS_OK(a, &in, id, &out);
  CHECK_BATCH(&out, E_OUT, 4, e_out_kinds, e_out);
  release_output(&out);
  CLOSE_OK(a);
  CLOSE_OK(c);
  /* A call after close. */
  bad_handle(a, "closed after use");
}

static void null_pointers(void) {
  struct FerryError err = {0};
  struct ArrowArray in, out;
  memset(&out, 0, sizeof out);
  FerryHandle h = OPEN_OK(spec_e);
  CHECK_ERR(ferry_operator_process(h, ONE_BATCH(NULL), 0, &out, &g_more, &err), err, FERRY_EINVAL,
            "ferry_operator_process", NULL, NULL);
  CHECK(out.release == NULL);
  int64_t id = valid_batch(&in);
  CHECK_ERR(ferry_operator_process(h, ONE_BATCH(&in), 0, NULL, &g_more, &err), err, FERRY_EINVAL,
            "ferry_operator_process", NULL, NULL);
  CHECK_CONSUMED(in, id);
  /* A malformed batch with a NULL error struct: no crash, still consumed. */
  id = valid_batch(&in);
  in.length = -5;
  CHECK_EQ(ferry_operator_process(h, ONE_BATCH(&in), 0, &out, &g_more, NULL), FERRY_EDATA);
  CHECK_CONSUMED(in, id);
  CHECK(out.release == NULL);
  CHECK_ERR(ferry_operator_output_schema(h, NULL, &err), err, FERRY_EINVAL,
            "ferry_operator_output_schema", NULL, NULL);
  CHECK_ERR(ferry_operator_snapshot(h, 0, NULL, &err), err, FERRY_EINVAL, "ferry_operator_snapshot",
            NULL, NULL);
  CHECK_ERR(ferry_operator_restore(h, 0, NULL, 16, &err), err, FERRY_EINVAL,
            "ferry_operator_restore", NULL, NULL);
  CHECK_ERR(ferry_operator_advance(h, 0, 0, NULL, &g_more, &err), err, FERRY_EINVAL,
            "ferry_operator_advance", NULL, NULL);
  CHECK_ERR(ferry_operator_flush(h, 0, NULL, &g_more, &err), err,
            FERRY_EINVAL, "ferry_operator_flush", NULL,
            NULL);
  CHECK_EQ(ferry_operator_snapshot(h, 0, NULL, NULL), FERRY_EINVAL);
  CHECK_ERR(ferry_operator_stats(h, NULL, &err), err, FERRY_EINVAL, "ferry_operator_stats", NULL,
            NULL);

  /* open: NULL spec, NULL out (the schema is consumed anyway), NULL err. */
  FerryHandle h2 = 0;
  CHECK_ERR(ferry_operator_open(NULL, NULL, 0, NULL, &h2, &err), err, FERRY_EINVAL, "ferry_operator_open",
            NULL, NULL);
  CHECK_EQ(h2, 0);
  static const char* const f[] = {"l", "i", "u", "g", "c"};
  static const char* const n[] = {"k", "x", "s", "d", "$row_kind"};
  struct ArrowSchema s;
  int64_t sid = ab_schema(&s, 5, f, n);
  CHECK_ERR(ferry_operator_open(spec_e, NULL, ONE_SCHEMA(&s), NULL, &err), err,
            FERRY_EINVAL, "ferry_operator_open",
            NULL, NULL);
  CHECK(s.release == NULL);
  CHECK_EQ(ab_schema_releases(sid), 1);
  CHECK_EQ(ferry_operator_open("{", NULL, 0, NULL, &h2, NULL), FERRY_EINVAL);
  CHECK_EQ(ferry_operator_open(NULL, NULL, 0, NULL, NULL, NULL), FERRY_EINVAL);
  CHECK_EQ(h2, 0);
  CHECK_EQ(ferry_init("{\"nope\":1}", NULL), FERRY_EINVAL);
  CLOSE_OK(h);
}

/* ---- Malformed arrays ---- */

enum {
  M_NEG_LENGTH,
  M_CHILD_BUFFERS,
  M_FEWER_CHILDREN,
  M_MORE_CHILDREN,
  M_OFFSETS_NONMONOTONIC,
  M_OFFSETS_NEGATIVE,
  M_NULL_COUNT,
  M_NULL_DATA,
  M_NULL_OFFSETS,
  M_ROWKIND_7,
  M_ROWKIND_NULL,
  M_CHILD_SHORT,
  M_CHILD_RELEASED,
  M_ROOT_BUFFERS,
  M_NULL_CHILD,
  M_NULLS_NO_BITMAP,
  M_NEG_OFFSET,
  M_OFFSET_OVERFLOW,
  M_DICTIONARY,
  M_ROOT_RELEASED,
  M_COUNT
};

static const struct {
  const char* name;
  const char* msg; /* substring of the expected message */
} malformed[M_COUNT] = {
    [M_NEG_LENGTH] = {"negative length", "negative length"},
    [M_CHILD_BUFFERS] = {"wrong buffer count", "buffer count 1, want 2"},
    [M_FEWER_CHILDREN] = {"child count 4 < 5", "4 columns, want 5"},
    [M_MORE_CHILDREN] = {"child count 6 > 5", "6 columns, want 5"},
    [M_OFFSETS_NONMONOTONIC] = {"non-monotonic offsets", "not monotonic"},
    [M_OFFSETS_NEGATIVE] = {"negative first offset", "negative offset"},
    [M_NULL_COUNT] = {"null_count > length", "null count 10"},
    [M_NULL_DATA] = {"NULL values buffer", "values buffer is NULL"},
    [M_NULL_OFFSETS] = {"NULL offsets buffer", "offsets buffer is NULL"},
    [M_ROWKIND_7] = {"RowKind byte 7", "byte 7"},
    [M_ROWKIND_NULL] = {"NULL RowKind", "RowKind"},
    [M_CHILD_SHORT] = {"child shorter than batch", "shorter"},
    [M_CHILD_RELEASED] = {"released child", "released"},
    [M_ROOT_BUFFERS] = {"struct n_buffers 0", "0 buffers"},
    [M_NULL_CHILD] = {"NULL child pointer", "NULL"},
    [M_NULLS_NO_BITMAP] = {"nulls without bitmap", "no validity buffer"},
    [M_NEG_OFFSET] = {"negative array offset", "negative offset"},
    [M_OFFSET_OVERFLOW] = {"offset + length overflow", "too large"},
    [M_DICTIONARY] = {"dictionary on struct", "dictionary"},
    [M_ROOT_RELEASED] = {"released root", "released"},
};

static void malformed_arrays(void) {
  struct FerryError err = {0};
  FerryHandle h = OPEN_OK(spec_e);
  static uint8_t rowkind_validity[8] = {0xfd, 0xff}; /* row 1 NULL */
  static struct ArrowArray dummy_dictionary;
  for (int m = 0; m < M_COUNT; m++) {
    struct ArrowArray in, out;
    memset(&out, 0, sizeof out);
    int64_t id = valid_batch(&in);
    void (*saved_release)(struct ArrowArray*) = NULL;
    switch (m) {
      case M_NEG_LENGTH:
        in.length = -1;
        break;
      case M_CHILD_BUFFERS:
        in.children[1]->n_buffers = 1;
        break;
      case M_FEWER_CHILDREN:
        in.n_children = 4;
        break;
      case M_MORE_CHILDREN:
        in.n_children = 6;
        break;
      case M_OFFSETS_NONMONOTONIC: {
        int32_t* offs = (int32_t*)ab_buf(&in, 2, 1);
        offs[2] = 1; /* [0, 3, 1, 25] */
        break;
      }
      case M_OFFSETS_NEGATIVE:
        ((int32_t*)ab_buf(&in, 2, 1))[0] = -4;
        break;
      case M_NULL_COUNT:
        in.children[1]->null_count = 10;
        break;
      case M_NULL_DATA:
        in.children[3]->buffers[1] = NULL;
        break;
      case M_NULL_OFFSETS:
        in.children[2]->buffers[1] = NULL;
        break;
      case M_ROWKIND_7:
        ((int8_t*)ab_buf(&in, 4, 1))[2] = 7;
        break;
      case M_ROWKIND_NULL:
        in.children[4]->buffers[0] = rowkind_validity;
        in.children[4]->null_count = 1;
        break;
      case M_CHILD_SHORT:
        in.children[0]->length = 2;
        break;
      case M_CHILD_RELEASED:
        in.children[2]->release = NULL; /* the builder still frees it with the batch */
        break;
      case M_ROOT_BUFFERS:
        in.n_buffers = 0;
        break;
      case M_NULL_CHILD:
        in.children[3] = NULL;
        break;
      case M_NULLS_NO_BITMAP:
        in.children[1]->buffers[0] = NULL; /* null_count stays 1 */
        break;
      case M_NEG_OFFSET:
        in.children[0]->offset = -1;
        break;
      case M_OFFSET_OVERFLOW:
        in.offset = INT64_MAX - 1;
        break;
      case M_DICTIONARY:
        in.dictionary = &dummy_dictionary;
        break;
      case M_ROOT_RELEASED:
        saved_release = in.release;
        in.release = NULL;
        break;
    }
    g_scenario = malformed[m].name;
    int32_t rc = ferry_operator_process(h, ONE_BATCH(&in), 0, &out, &g_more, &err);
    CHECK_ERR(rc, err, FERRY_EDATA, "ferry_operator_process", malformed[m].msg, NULL);
    if (m == M_ROOT_RELEASED) {
      /* Ferry cannot release an array whose release is NULL; the producer frees it. */
      CHECK_EQ(ab_releases(id), 0);
      in.release = saved_release;
      in.release(&in);
    }
    CHECK_CONSUMED(in, id);
    CHECK(out.release == NULL);
  }
  g_scenario = "error paths";

  /* A retraction on an operator declared insert-only. */
  struct ArrowArray in, out;
  static const int8_t rk[] = {KI, KD};
  static const val rr[] = {VI(1), VI(1), VS("x"), VD(1.0), VI(1), VI(1), VS("x"), VD(1.0)};
  int64_t id = ab_batch(&in, E_IN, 2, rk, rr);
  memset(&out, 0, sizeof out);
  CHECK_ERR(ferry_operator_process(h, ONE_BATCH(&in), 0, &out, &g_more, &err), err,
            FERRY_EDATA, "ferry_operator_process",
            "retraction", "need_retraction");
  CHECK_CONSUMED(in, id);
  CHECK(out.release == NULL);

  /* None of the rejected batches changed state: a valid batch gives a fresh operator's output. */
  id = valid_batch(&in);
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, E_OUT, 4, e_out_kinds, e_out);
  release_output(&out);
  CLOSE_OK(h);
}

/* ---- Input schema at open ---- */

static void schema_mismatch(void) {
  struct FerryError err = {0};
  const char* fn = "ferry_operator_open";
  static const char* const names[] = {"k", "x", "s", "d", "$row_kind"};
  static const char* const good[] = {"l", "i", "u", "g", "c"};
  static const char* const k_int[] = {"i", "i", "u", "g", "c"};
  static const char* const kind_l[] = {"l", "i", "u", "g", "l"};
  struct ArrowSchema s;
  FerryHandle h = 0;

  int64_t sid = ab_schema(&s, 5, good, names);
  CHECK_OK(ferry_operator_open(spec_e, NULL, ONE_SCHEMA(&s), &h, &err), err);
  CHECK(h != 0);
  CHECK(s.release == NULL);
  CHECK_EQ(ab_schema_releases(sid), 1);
  CLOSE_OK(h);

  h = 0;
  sid = ab_schema(&s, 5, k_int, names);
  CHECK_ERR(ferry_operator_open(spec_e, NULL, ONE_SCHEMA(&s), &h, &err), err,
            FERRY_EDATA, fn, "\"i\"", "\"l\"");
  CHECK_EQ(ab_schema_releases(sid), 1);
  CHECK_EQ(h, 0);

  sid = ab_schema(&s, 4, good, names); /* RowKind column missing */
  CHECK_ERR(ferry_operator_open(spec_e, NULL, ONE_SCHEMA(&s), &h, &err), err,
            FERRY_EDATA, fn, "columns", NULL);
  CHECK_EQ(ab_schema_releases(sid), 1);

  sid = ab_schema(&s, 5, kind_l, names); /* RowKind must be int8 */
  CHECK_ERR(ferry_operator_open(spec_e, NULL, ONE_SCHEMA(&s), &h, &err), err,
            FERRY_EDATA, fn, "RowKind", NULL);
  CHECK_EQ(ab_schema_releases(sid), 1);

  sid = ab_schema(&s, 5, good, names);
  s.format = "+l";
  CHECK_ERR(ferry_operator_open(spec_e, NULL, ONE_SCHEMA(&s), &h, &err), err,
            FERRY_EDATA, fn, "struct", NULL);
  CHECK_EQ(ab_schema_releases(sid), 1);

  /* Schema given with an invalid spec: still consumed. */
  sid = ab_schema(&s, 5, good, names);
  CHECK_ERR(ferry_operator_open("{\"kind\":1}", NULL, ONE_SCHEMA(&s), &h, &err), err,
            FERRY_EINVAL, fn, NULL, NULL);
  CHECK_EQ(ab_schema_releases(sid), 1);
  CHECK_EQ(h, 0);
}

/* ---- Invalid and unsupported specs ---- */

static void bad_specs(void) {
  struct FerryError err = {0};
  const char* fn = "ferry_operator_open";
  static const struct {
    const char* spec;
    int32_t code;
    const char* sub;
  } cases[] = {
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
       "\"type\":\"BIGINT\"}],\"keys\":[0]}],\"max_parallelism\":128,\"bogus_field\":1,"
       "\"params\":{\"aggs\":[]}}",
       FERRY_EINVAL, "bogus_field"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
       "\"type\":\"BIGINT\"}],\"keys\":[0]}],\"max_parallelism\":128,"
       "\"params\":{\"aggs\":[{\"func\":\"COUNT\",\"args\":[],\"retracts\":true}]}}",
       FERRY_EINVAL, "retracts"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
       "\"type\":\"BIGINT\"}],\"keys\":[3]}],\"max_parallelism\":128,"
       "\"params\":{\"aggs\":[]}}",
       FERRY_EINVAL, "keys[0]"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
       "\"type\":\"BIGINT\"}],\"keys\":[-1]}],\"max_parallelism\":128,"
       "\"params\":{\"aggs\":[]}}",
       FERRY_EINVAL, "keys[0]"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
       "\"type\":\"BIGINT\"}],\"keys\":[0]}],\"max_parallelism\":128,"
       "\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[7]}]}}",
       FERRY_EINVAL, "aggs[0].args[0]"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
       "\"type\":\"BIGNUM\"}],\"keys\":[0]}],\"max_parallelism\":128,"
       "\"params\":{\"aggs\":[]}}",
       FERRY_EINVAL, "inputs[0].fields[0].type"},
      {"{\"inputs\":[{\"fields\":[],\"keys\":[]}],\"max_parallelism\":128,"
       "\"params\":{\"aggs\":[]}}", FERRY_EINVAL, "kind"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[],\"keys\":[]}],"
       "\"max_parallelism\":0}", FERRY_EINVAL,
       "max_parallelism"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[],\"keys\":[]}],"
       "\"max_parallelism\":128,\"key_group_start\":100,\"key_group_end\":20}",
       FERRY_EINVAL, "key_group"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"x\","
       "\"type\":\"INT\"}],\"keys\":[]}],\"max_parallelism\":128,"
       "\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[0]}],\"need_retraction\":true}}",
       FERRY_EINVAL, "retract"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"x\","
       "\"type\":\"INT\"}],\"keys\":[]}],\"max_parallelism\":128,"
       "\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[]}]}}",
       FERRY_EINVAL, "aggs[0]"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[]}],\"max_parallelism\":128} {}",
       FERRY_EINVAL, "trailing"},
      {"{\"kind\":\"group_aggregate\",", FERRY_EINVAL, "spec"},
      {"", FERRY_EINVAL, "spec"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[],\"keys\":[]}],"
       "\"max_parallelism\":128,\"test\":{\"panic\":\"process\"}}",
       FERRY_EINVAL, "test"},
      /* Valid specs Ferry does not run natively. */
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
       "\"type\":\"BIGINT\"},{\"name\":\"s\",\"type\":\"VARCHAR\"}],\"keys\":[0]}],"
       "\"max_parallelism\":128,\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[1]}]}}",
       FERRY_EUNSUPPORTED, "SUM over VARCHAR"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
       "\"type\":\"BIGINT\"},{\"name\":\"s\",\"type\":\"VARCHAR\"}],\"keys\":[0]}],"
       "\"max_parallelism\":128,\"params\":{\"aggs\":[{\"func\":\"AVG\",\"args\":[1]}]}}",
       FERRY_EUNSUPPORTED, "AVG over VARCHAR"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
       "\"type\":\"BIGINT\"}],\"keys\":[0]}],\"max_parallelism\":128,"
       "\"params\":{\"aggs\":[{\"func\":\"COLLECT\",\"args\":[0]}]}}",
       FERRY_EUNSUPPORTED, "COLLECT"},
      {"{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
       "\"type\":\"BIGINT\"}],\"keys\":[0]}],\"max_parallelism\":128,"
       "\"params\":{\"aggs\":[{\"func\":\"AVG\",\"args\":[0],\"distinct\":true}]}}",
       FERRY_EUNSUPPORTED, "AVG(DISTINCT)"},
      {"{\"kind\":\"over_aggregate\",\"inputs\":[{\"fields\":[],\"keys\":[]}],"
       "\"max_parallelism\":128}",
       FERRY_EUNSUPPORTED, "over_aggregate"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    FerryHandle h = 0;
    int32_t rc = ferry_operator_open(cases[i].spec, NULL, 0, NULL, &h, &err);
    CHECK_MSG(rc == cases[i].code, "spec case %zu: status %d, want %d (%s)", i, rc, cases[i].code,
              err.message ? err.message : "");
    CHECK_ERR(rc, err, cases[i].code, fn, cases[i].sub, NULL);
    CHECK_EQ(h, 0);
  }
}

/* SINGLE_VALUE over x: the valid batch's second row for key 1 is the one Flink's generated code
 * throws on. FERRY_EQUERY carries Flink's message alone (no "function: " prefix: the host throws
 * it as Flink's TableRuntimeException); the input is consumed, nothing is emitted. */
static void query_error(void) {
  static const char* spec_sv =
      "{\"kind\":\"group_aggregate\",\"name\":\"GroupAggregate(groupBy=[k])\","
      "\"inputs\":[{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},{\"name\":\"x\","
      "\"type\":\"INT\"},{\"name\":\"s\",\"type\":\"VARCHAR\"},{\"name\":\"d\","
      "\"type\":\"DOUBLE\"}],\"keys\":[0]}],\"max_parallelism\":128,"
      "\"params\":{\"aggs\":[{\"func\":\"SINGLE_VALUE\",\"args\":[1]}],"
      "\"generate_update_before\":true}}";
  FerryHandle h = OPEN_OK(spec_sv);
  struct FerryError err = {0};
  struct ArrowArray in, out;
  memset(&out, 0, sizeof out);
  int64_t id = valid_batch(&in);
  CHECK_EQ(ferry_operator_process(h, ONE_BATCH(&in), 0, &out, &g_more, &err), FERRY_EQUERY);
  CHECK_CONSUMED(in, id);
  CHECK(out.release == NULL);
  CHECK_EQ(err.code, FERRY_EQUERY);
  CHECK(err.message != NULL &&
        strcmp(err.message, "SingleValueAggFunction received more than one element.") == 0);
  CHECK(err.release != NULL);
  if (err.release) {
    g_errors_received++;
    err.release(&err);
    g_errors_released++;
    CHECK(err.release == NULL && err.message == NULL);
  }
  CLOSE_OK(h);
}

void scenario_errors(void) {
  bad_handles();
  null_pointers();
  malformed_arrays();
  schema_mismatch();
  bad_specs();
  query_error();
}

/* ---- Leak accounting ---- */

void scenario_leaks(void) {
  CHECK_EQ(ferry_output_bytes_outstanding(), 0);
  CHECK(ab_batches_made() > 0);
  CHECK_EQ(ab_batches_not_released_once(), 0);
  CHECK_EQ(ab_schemas_not_released_once(), 0);
  CHECK(g_errors_received > 0);
  CHECK_EQ(g_errors_received, g_errors_released);
}

/* ---- Poisoning: a panic poisons its operator only ---- */

void scenario_poison(void) {
  struct FerryError err = {0};
  struct ArrowArray in, out;
  memset(&out, 0, sizeof out);
  static const char* spec_panic =
      "{\"kind\":\"group_aggregate\",\"name\":\"PanicAggregate\","
      "\"inputs\":[{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},{\"name\":\"x\","
      "\"type\":\"INT\"},{\"name\":\"s\",\"type\":\"VARCHAR\"},{\"name\":\"d\","
      "\"type\":\"DOUBLE\"}],\"keys\":[0]}],\"max_parallelism\":128,"
      "\"params\":{\"aggs\":[{\"func\":\"COUNT\",\"args\":[]}]},"
      "\"test\":{\"panic\":\"process\"}}";
  FerryHandle survivor = OPEN_OK(spec_e);
  FerryHandle h = 0;
  CHECK_ERR(ferry_operator_open(spec_panic, NULL, 0, NULL, &h, &err), err, FERRY_EINVAL,
            "ferry_operator_open", "test", NULL); /* hooks still off */
  CHECK_OK(ferry_init("{\"test_hooks\":true}", &err), err);
  FerryHandle p = OPEN_OK(spec_panic);

  fprintf(stderr, "--- an expected Go panic stack follows ---\n");
  int64_t id = valid_batch(&in);
  CHECK_ERR(ferry_operator_process(p, ONE_BATCH(&in), 0, &out, &g_more, &err), err, FERRY_EINTERNAL,
            "ferry_operator_process", "panic", NULL);
  CHECK_CONSUMED(in, id);
  CHECK(out.release == NULL);
  fprintf(stderr, "--- end of the expected Go panic stack ---\n");

  /* Every later call on the poisoned operator but close fails with FERRY_EPOISONED; inputs are
   * still consumed. */
  id = valid_batch(&in);
  CHECK_ERR(ferry_operator_process(p, ONE_BATCH(&in), 0, &out, &g_more, &err), err, FERRY_EPOISONED,
            "ferry_operator_process", "operator poisoned", NULL);
  CHECK_CONSUMED(in, id);
  CHECK(out.release == NULL);
  struct ArrowSchema s;
  memset(&s, 0, sizeof s);
  CHECK_ERR(ferry_operator_output_schema(p, &s, &err), err, FERRY_EPOISONED,
            "ferry_operator_output_schema", NULL, NULL);
  CHECK(s.release == NULL);
  struct FerryBlob b = {0};
  CHECK_ERR(ferry_operator_snapshot(p, 0, &b, &err), err, FERRY_EPOISONED,
            "ferry_operator_snapshot", NULL, NULL);
  static const uint8_t junk[48] = "FRYS";
  CHECK_ERR(ferry_operator_restore(p, 0, junk, sizeof junk, &err), err, FERRY_EPOISONED,
            "ferry_operator_restore", NULL, NULL);
  CHECK_ERR(ferry_operator_advance(p, 0, 0, &out, &g_more, &err), err, FERRY_EPOISONED,
            "ferry_operator_advance", NULL, NULL);
  CHECK_ERR(ferry_operator_flush(p, 0, &out, &g_more, &err), err, FERRY_EPOISONED,
            "ferry_operator_flush", NULL, NULL);
  CHECK(out.release == NULL);
  struct FerryOperatorStats st = {0};
  CHECK_ERR(ferry_operator_stats(p, &st, &err), err, FERRY_EPOISONED, "ferry_operator_stats",
            NULL, NULL);
  CHECK_OK(ferry_operator_close(p, &err), err);
  CHECK_ERR(ferry_operator_close(p, &err), err, FERRY_EINVAL, "ferry_operator_close", "stale", NULL);

  /* The other operator, a new one and ferry_init work on. */
  id = valid_batch(&in);
  CHECK_OK(ferry_operator_process(survivor, ONE_BATCH(&in), 0, &out, &g_more, &err), err);
  CHECK_CONSUMED(in, id);
  if (out.release != NULL) out.release(&out);
  memset(&out, 0, sizeof out);
  CHECK_OK(ferry_operator_stats(survivor, &st, &err), err);
  CHECK(st.keys > 0);
  CHECK_OK(ferry_init("{\"max_procs\":2,\"test_hooks\":false}", &err), err);
  FerryHandle fresh = OPEN_OK(spec_e);
  id = valid_batch(&in);
  CHECK_OK(ferry_operator_process(fresh, ONE_BATCH(&in), 0, &out, &g_more, &err), err);
  CHECK_CONSUMED(in, id);
  if (out.release != NULL) out.release(&out);
  memset(&out, 0, sizeof out);
  CHECK_OK(ferry_operator_close(fresh, &err), err);
  CHECK_OK(ferry_operator_close(survivor, &err), err);

  /* Version queries and the accounting still work. */
  const char* v = ferry_version();
  CHECK(v != NULL && strncmp(v, "ferry ", 6) == 0);
  CHECK_EQ(ferry_abi_version(), FERRY_ABI_VERSION);
  CHECK_EQ(ferry_output_bytes_outstanding(), 0);
  CHECK_EQ(ab_batches_not_released_once(), 0);
  CHECK_EQ(ab_schemas_not_released_once(), 0);
  CHECK_EQ(g_errors_received, g_errors_released);
}
