/* scenarios_agg.c — init options, the insert-only and retracting group aggregate, output schema.
 *
 * Expected changelogs follow Flink's GroupAggFunction (docs/group-aggregate.md, sections "Per row:
 * GroupAggFunction", "The record counter" and "Aggregate functions"): the first accumulate of a
 * key emits +I; a retraction for a key without state is dropped; later rows emit -U
 * (generate_update_before) and +U, or nothing when no aggregate value changed; with
 * need_retraction the record count reaching 0 emits -D with the previous values and drops the
 * state. SUM wraps in its input type; AVG of integers truncates toward zero. */
#include <stdlib.h>
#include <string.h>

#include "arrow_build.h"
#include "harness.h"

#define ROWS(a, ncols) ((int64_t)(sizeof(a) / sizeof((a)[0]) / (ncols)))

/* Copies the rows of an expected changelog without its -U rows (generate_update_before false). */
static int64_t drop_update_before(const int8_t* kinds, const val* vals, int64_t rows,
                                  int64_t ncols, int8_t* okinds, val* ovals) {
  int64_t n = 0;
  for (int64_t r = 0; r < rows; r++) {
    if (kinds[r] == KUB) continue;
    okinds[n] = kinds[r];
    memcpy(&ovals[n * ncols], &vals[r * ncols], (size_t)ncols * sizeof(val));
    n++;
  }
  return n;
}

/* ---------------------------------------------------------------------------------------- */

void scenario_init_options(void) {
  struct FerryError err = {0};
  CHECK_OK(ferry_init("{\"max_procs\":2}", &err), err);
  CHECK_OK(ferry_init("{}", &err), err);
  CHECK_OK(ferry_init("{\"max_procs\":2,\"gc_percent\":100,\"memory_limit_bytes\":1073741824}", &err),
           err);
  CHECK_ERR(ferry_init("{\"max_procs\":2,\"max_threads\":4}", &err), err, FERRY_EINVAL,
            "ferry_init", "max_threads", NULL);
  CHECK_ERR(ferry_init("{\"max_procs\":-1}", &err), err, FERRY_EINVAL, "ferry_init", "max_procs",
            NULL);
  CHECK_ERR(ferry_init("{\"max_procs\":", &err), err, FERRY_EINVAL, "ferry_init", NULL, NULL);
  CHECK_ERR(ferry_init("{\"max_procs\":\"two\"}", &err), err, FERRY_EINVAL, "ferry_init", NULL,
            NULL);
  /* A NULL error struct must not crash. */
  CHECK_EQ(ferry_init("{\"bogus\":true}", NULL), FERRY_EINVAL);
  CHECK_OK(ferry_init("{\"max_procs\":2}", &err), err);
}

/* ---------------------------------------------------------------------------------------- */
/* Insert-only: k BIGINT, x INT, y BIGINT, d DOUBLE; GROUP BY k;
 * SUM(x), COUNT(*), COUNT(x), MIN(d), MAX(d), AVG(y). */

static const char* spec_a(int gub) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "{\"kind\":\"group_aggregate\",\"name\":\"GroupAggregate(groupBy=[k])\","
           "\"inputs\":[{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},{\"name\":\"x\","
           "\"type\":\"INT\"},{\"name\":\"y\",\"type\":\"BIGINT\"},{\"name\":\"d\","
           "\"type\":\"DOUBLE\"}],\"keys\":[0]}],\"max_parallelism\":128,"
           "\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[1],\"name\":\"sum_x\"},"
           "{\"func\":\"COUNT\",\"args\":[],\"name\":\"cnt\"},{\"func\":\"COUNT\",\"args\":[1],"
           "\"name\":\"cnt_x\"},{\"func\":\"MIN\",\"args\":[3],\"name\":\"min_d\"},"
           "{\"func\":\"MAX\",\"args\":[3],\"name\":\"max_d\"},{\"func\":\"AVG\",\"args\":[2],"
           "\"name\":\"avg_y\"}],\"need_retraction\":false,\"generate_update_before\":%s}}",
           gub ? "true" : "false");
  return buf;
}

#define A_IN "lilg"
#define A_OUT "lillggl"

static const int8_t a1_kinds[] = {KI, KI, KI, KI, KI, KI, KI};
static const val a1_rows[] = {
    VI(1),    VI(10),         VI(7),  VD(1.5),  /* */
    VI(2),    VN,             VN,     VN,       /* all-NULL values */
    VI(1),    VI(2147483647), VI(-8), VD(-2.5), /* SUM(INT) wraps */
    VN,       VI(5),          VI(3),  VD(0.25), /* NULL key */
    VI(2),    VI(-3),         VI(4),  VD(9.0),  /* */
    VI(1),    VN,             VN,     VN,       /* only COUNT(*) changes */
    VN,       VI(1),          VI(-2), VN,       /* */
};
static const int8_t a1_out_kinds[] = {KI, KI, KUB, KUA, KI, KUB, KUA, KUB, KUA, KUB, KUA};
static const val a1_out[] = {
    VI(1), VI(10),          VI(1), VI(1), VD(1.5),  VD(1.5),  VI(7),
    VI(2), VN,              VI(1), VI(0), VN,       VN,       VN,
    VI(1), VI(10),          VI(1), VI(1), VD(1.5),  VD(1.5),  VI(7),
    VI(1), VI(-2147483639), VI(2), VI(2), VD(-2.5), VD(1.5),  VI(0), /* (7 + -8) / 2 = 0 */
    VN,    VI(5),           VI(1), VI(1), VD(0.25), VD(0.25), VI(3),
    VI(2), VN,              VI(1), VI(0), VN,       VN,       VN,
    VI(2), VI(-3),          VI(2), VI(1), VD(9.0),  VD(9.0),  VI(4),
    VI(1), VI(-2147483639), VI(2), VI(2), VD(-2.5), VD(1.5),  VI(0),
    VI(1), VI(-2147483639), VI(3), VI(2), VD(-2.5), VD(1.5),  VI(0),
    VN,    VI(5),           VI(1), VI(1), VD(0.25), VD(0.25), VI(3),
    VN,    VI(6),           VI(2), VI(2), VD(0.25), VD(0.25), VI(0),
};

static const int8_t a2_kinds[] = {KI, KI, KI};
static const val a2_rows[] = {
    VI(2), VI(3), VI(-9), VD(-1.0), /* AVG (4 + -9) / 2 = -2, truncated toward zero */
    VI(3), VI(1), VI(1),  VD(2.0),  /* */
    VN,    VN,    VN,     VD(-0.5), /* */
};
static const int8_t a2_out_kinds[] = {KUB, KUA, KI, KUB, KUA};
static const val a2_out[] = {
    VI(2), VI(-3), VI(2), VI(1), VD(9.0),  VD(9.0),  VI(4),
    VI(2), VI(0),  VI(3), VI(2), VD(-1.0), VD(9.0),  VI(-2),
    VI(3), VI(1),  VI(1), VI(1), VD(2.0),  VD(2.0),  VI(1),
    VN,    VI(6),  VI(2), VI(2), VD(0.25), VD(0.25), VI(0),
    VN,    VI(6),  VI(3), VI(2), VD(-0.5), VD(0.25), VI(0),
};

static void insert_only_run(int gub) {
  FerryHandle h = OPEN_OK(spec_a(gub));
  struct ArrowArray in, out;
  int64_t id;
  int8_t k[64];
  val v[64 * 7];

  /* Batch 1. */
  id = ab_batch(&in, A_IN, ROWS(a1_rows, 4), a1_kinds, a1_rows);
  PROCESS_OK(h, &in, id, &out);
  if (gub) {
    CHECK_BATCH(&out, A_OUT, ROWS(a1_out, 7), a1_out_kinds, a1_out);
  } else {
    int64_t n = drop_update_before(a1_out_kinds, a1_out, ROWS(a1_out, 7), 7, k, v);
    CHECK_EQ(n, 7);
    CHECK_BATCH(&out, A_OUT, n, k, v);
  }
  release_output(&out);

  /* Batch 2: state carries across calls. */
  id = ab_batch(&in, A_IN, ROWS(a2_rows, 4), a2_kinds, a2_rows);
  PROCESS_OK(h, &in, id, &out);
  if (gub) {
    CHECK_BATCH(&out, A_OUT, ROWS(a2_out, 7), a2_out_kinds, a2_out);
  } else {
    int64_t n = drop_update_before(a2_out_kinds, a2_out, ROWS(a2_out, 7), 7, k, v);
    CHECK_BATCH(&out, A_OUT, n, k, v);
  }
  release_output(&out);

  /* An empty batch: no output rows, output left untouched. */
  id = ab_batch(&in, A_IN, 0, a1_kinds, a1_rows);
  PROCESS_OK(h, &in, id, &out);
  CHECK(out.release == NULL);
  CHECK(out.length == 0 && out.n_children == 0 && out.children == NULL);

  /* advance/flush release nothing for a group aggregate. */
  struct FerryError err = {0};
  memset(&out, 0, sizeof out);
  CHECK_OK(ferry_operator_advance(h, 5000, 1000, &out, &g_more, &err), err);
  CHECK(out.release == NULL);
  CHECK_OK(ferry_operator_flush(h, 1000, &out, &g_more, &err), err);
  CHECK(out.release == NULL);
  CLOSE_OK(h);
}

/* The same rows with null_count -1 and validity bitmaps on every column: same changelog. */
static void insert_only_bitmap_variants(void) {
  FerryHandle h = OPEN_OK(spec_a(1));
  struct ArrowArray in, out;
  ab_opt_unknown_null_count = 1;
  ab_opt_always_bitmap = 1;
  int64_t id = ab_batch(&in, A_IN, ROWS(a1_rows, 4), a1_kinds, a1_rows);
  ab_reset_options();
  CHECK_EQ(in.children[0]->null_count, -1);
  CHECK(in.children[1]->buffers[0] != NULL);
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, A_OUT, ROWS(a1_out, 7), a1_out_kinds, a1_out);
  release_output(&out);
  CLOSE_OK(h);
}

/* MAX only: a batch where no aggregate value changes produces no output. */
static void insert_only_no_change(void) {
  FerryHandle h = OPEN_OK(
      "{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
      "\"type\":\"BIGINT\"},{\"name\":\"d\",\"type\":\"DOUBLE\"}],\"keys\":[0]}],"
      "\"max_parallelism\":128,\"params\":{\"aggs\":[{\"func\":\"MAX\",\"args\":[1],"
      "\"name\":\"max_d\"}],\"generate_update_before\":true}}");
  struct ArrowArray in, out;
  static const int8_t k2[] = {KI, KI};
  static const val m1[] = {VI(1), VD(5.0), VI(1), VD(7.0)};
  static const int8_t m1k[] = {KI, KUB, KUA};
  static const val m1o[] = {VI(1), VD(5.0), VI(1), VD(5.0), VI(1), VD(7.0)};
  int64_t id = ab_batch(&in, "lg", 2, k2, m1);
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, "lg", 3, m1k, m1o);
  release_output(&out);

  static const int8_t k3[] = {KI, KI, KI};
  static const val m2[] = {VI(1), VD(3.0), VI(1), VN, VI(1), VD(7.0)};
  id = ab_batch(&in, "lg", 3, k3, m2);
  PROCESS_OK(h, &in, id, &out);
  CHECK(out.release == NULL); /* zero output rows: output left released */
  CHECK_EQ(out.length, 0);

  static const int8_t k1[] = {KI};
  static const val m3[] = {VI(1), VD(7.5)};
  static const int8_t m3k[] = {KUB, KUA};
  static const val m3o[] = {VI(1), VD(7.0), VI(1), VD(7.5)};
  id = ab_batch(&in, "lg", 1, k1, m3);
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, "lg", 2, m3k, m3o);
  release_output(&out);

  /* A sliced input: struct offset 1, length 2 of 4 rows. */
  static const int8_t k4[] = {KI, KI, KI, KI};
  static const val m4[] = {VI(10), VD(100.0), VI(11), VD(1.0), VI(12), VD(2.0), VI(13), VD(200.0)};
  static const int8_t m4k[] = {KI, KI};
  static const val m4o[] = {VI(11), VD(1.0), VI(12), VD(2.0)};
  id = ab_batch(&in, "lg", 4, k4, m4);
  in.offset = 1;
  in.length = 2;
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, "lg", 2, m4k, m4o);
  release_output(&out);
  CLOSE_OK(h);
}

/* VARCHAR keys (inline <= 7 bytes and out-of-line > 7 bytes), multi-column and global keys. */
static void insert_only_varchar(void) {
  FerryHandle h = OPEN_OK(
      "{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"name\","
      "\"type\":\"VARCHAR\"},{\"name\":\"v\",\"type\":\"BIGINT\"}],\"keys\":[0]}],"
      "\"max_parallelism\":128,\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[1],"
      "\"name\":\"total\"},{\"func\":\"COUNT\",\"args\":[],\"name\":\"cnt\"}]}}");
  struct ArrowArray in, out;
  static const int8_t k11[] = {KI, KI, KI, KI, KI, KI, KI, KI, KI, KI, KI};
  static const val rows[] = {
      VS("bob"),                VI(1),  /* */
      VS("a-much-longer-name"), VI(2),  /* */
      VS(""),                   VI(3),  /* empty string, not NULL */
      VN,                       VI(4),  /* */
      VS("bob"),                VI(10), /* */
      VS("seven77"),            VI(5),  /* 7 bytes: inline */
      VS("h\xc3\xa9llo w\xc3\xb6rld"), VI(6), /* */
      VS("a-much-longer-name"), VN,     /* */
      VS("seven7"),             VI(1),  /* prefix of another key */
      VN,                       VN,     /* */
      VS("exactly8"),           VI(8),  /* 8 bytes: out of line */
  };
  static const int8_t ok[] = {KI, KI, KI, KI, KUA, KI, KI, KUA, KI, KUA, KI};
  static const val out_rows[] = {
      VS("bob"),      VI(1),  VI(1), VS("a-much-longer-name"), VI(2), VI(1),
      VS(""),         VI(3),  VI(1), VN,                       VI(4), VI(1),
      VS("bob"),      VI(11), VI(2), VS("seven77"),            VI(5), VI(1),
      VS("h\xc3\xa9llo w\xc3\xb6rld"), VI(6), VI(1), VS("a-much-longer-name"), VI(2), VI(2),
      VS("seven7"),   VI(1),  VI(1), VN,                       VI(4), VI(2),
      VS("exactly8"), VI(8),  VI(1),
  };
  int64_t id = ab_batch(&in, "ul", 11, k11, rows);
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, "ull", 11, ok, out_rows);
  release_output(&out);

  /* State keyed by strings outlives the input memory of batch 1. */
  static const int8_t k2[] = {KI, KI, KI};
  static const val rows2[] = {VS("a-much-longer-name"), VI(1), VS("bob"), VI(-11), VS("seven7"), VN};
  static const int8_t ok2[] = {KUA, KUA, KUA};
  static const val out2[] = {VS("a-much-longer-name"), VI(3),  VI(3),
                             VS("bob"),                VI(0),  VI(3),
                             VS("seven7"),             VI(1),  VI(2)};
  id = ab_batch(&in, "ul", 3, k2, rows2);
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, "ull", 3, ok2, out2);
  /* Output batches stay valid after close until released. */
  CLOSE_OK(h);
  CHECK_BATCH(&out, "ull", 3, ok2, out2);
  release_output(&out);

  /* Sliced children: every child has offset 1 (row 0 is a dummy), the struct has offset 0.
   * Exercises child offsets in validity bitmaps, values and VARCHAR offsets. */
  h = OPEN_OK(
      "{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"name\","
      "\"type\":\"VARCHAR\"},{\"name\":\"v\",\"type\":\"BIGINT\"}],\"keys\":[0]}],"
      "\"max_parallelism\":128,\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[1],"
      "\"name\":\"total\"},{\"func\":\"COUNT\",\"args\":[],\"name\":\"cnt\"}]}}");
  static const int8_t k5[] = {KD, KI, KI, KI, KI};
  static const val srows[] = {VS("dummy-row-not-part-of-the-batch"), VI(100), VS("bob"), VI(1),
                              VN, VI(2), VS("a-much-longer-name"), VN, VS("bob"), VI(4)};
  static const int8_t sk[] = {KI, KI, KI, KUA};
  static const val sout[] = {VS("bob"), VI(1), VI(1), VN, VI(2), VI(1),
                             VS("a-much-longer-name"), VN, VI(1), VS("bob"), VI(5), VI(2)};
  id = ab_batch(&in, "ul", 5, k5, srows);
  in.length = 4;
  for (int c = 0; c < 3; c++) in.children[c]->offset = 1;
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, "ull", 4, sk, sout);
  release_output(&out);

  /* An output whose VARCHAR key column holds only NULLs (0 string bytes). */
  static const int8_t k2n[] = {KI, KI};
  static const val nrows[] = {VN, VI(7), VN, VI(8)};
  static const int8_t nk[] = {KUA, KUA};
  static const val nout[] = {VN, VI(9), VI(2), VN, VI(17), VI(3)};
  id = ab_batch(&in, "ul", 2, k2n, nrows);
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, "ull", 2, nk, nout);
  release_output(&out);
  CLOSE_OK(h);

  /* Two key columns in reverse input order: GROUP BY s, a. */
  h = OPEN_OK(
      "{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"a\","
      "\"type\":\"BIGINT\"},{\"name\":\"s\",\"type\":\"STRING\"},{\"name\":\"v\","
      "\"type\":\"INT\"}],\"keys\":[1,0]}],\"max_parallelism\":128,"
      "\"params\":{\"aggs\":[{\"func\":\"COUNT\",\"args\":[2],\"name\":\"cnt_v\"}]}}");
  static const int8_t k4[] = {KI, KI, KI, KI};
  static const val mrows[] = {VI(1), VS("x"), VI(5), VI(1), VS("y"), VI(6),
                              VI(2), VS("x"), VN,    VI(1), VS("x"), VI(7)};
  static const int8_t mk[] = {KI, KI, KI, KUA};
  static const val mout[] = {VS("x"), VI(1), VI(1), VS("y"), VI(1), VI(1),
                             VS("x"), VI(2), VI(0), VS("x"), VI(1), VI(2)};
  id = ab_batch(&in, "lui", 4, k4, mrows);
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, "ull", 4, mk, mout);
  release_output(&out);
  CLOSE_OK(h);

  /* Global aggregate (no keys). */
  h = OPEN_OK(
      "{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"v\","
      "\"type\":\"INT\"}],\"keys\":[]}],\"max_parallelism\":128,"
      "\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[0]},{\"func\":\"COUNT\","
      "\"args\":[]}]}}");
  static const int8_t k3[] = {KI, KI, KI};
  static const val grows[] = {VI(5), VN, VI(7)};
  static const int8_t gk[] = {KI, KUA, KUA};
  static const val gout[] = {VI(5), VI(1), VI(5), VI(2), VI(12), VI(3)};
  id = ab_batch(&in, "i", 3, k3, grows);
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, "il", 3, gk, gout);
  release_output(&out);
  CLOSE_OK(h);
}

/* A consumer may move a child out, release the root, and release the child later. */
static void output_ownership(void) {
  FerryHandle h = OPEN_OK(spec_a(0));
  struct ArrowArray in, out;
  int64_t before = ferry_output_bytes_outstanding();
  int64_t id = ab_batch(&in, A_IN, ROWS(a1_rows, 4), a1_kinds, a1_rows);
  PROCESS_OK(h, &in, id, &out);
  CHECK(ferry_output_bytes_outstanding() > before);
  struct ArrowArray moved = *out.children[1]; /* sum_x */
  out.children[1]->release = NULL;
  release_output(&out);
  CHECK(ferry_output_bytes_outstanding() > before); /* moved child keeps the buffers alive */
  CHECK(moved.release != NULL);
  if (moved.release) {
    CHECK_EQ(moved.length, 7);
    int32_t first;
    memcpy(&first, (const uint8_t*)moved.buffers[1], 4);
    CHECK_EQ(first, 10);
    moved.release(&moved);
    CHECK(moved.release == NULL);
  }
  CHECK_EQ(ferry_output_bytes_outstanding(), before);
  CLOSE_OK(h);
}

void scenario_insert_only(void) {
  insert_only_run(1);
  insert_only_run(0);
  insert_only_bitmap_variants();
  insert_only_no_change();
  insert_only_varchar();
  output_ownership();
}

/* ---------------------------------------------------------------------------------------- */
/* Retracting input: k BIGINT, x INT, d DOUBLE; COUNT(*), SUM(x), MIN(d), MAX(d), AVG(x),
 * COUNT(x), all retracting. */

static const char* spec_r(int gub) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "{\"kind\":\"group_aggregate\",\"name\":\"GroupAggregate(groupBy=[k], retract)\","
           "\"inputs\":[{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},{\"name\":\"x\","
           "\"type\":\"INT\"},{\"name\":\"d\",\"type\":\"DOUBLE\"}],\"keys\":[0]}],"
           "\"max_parallelism\":128,\"params\":{\"aggs\":[{\"func\":\"COUNT\",\"args\":[],"
           "\"name\":\"cnt\"},{\"func\":\"SUM\",\"args\":[1],\"retract\":true,"
           "\"name\":\"sum_x\"},{\"func\":\"MIN\",\"args\":[2],\"retract\":true,"
           "\"name\":\"min_d\"},{\"func\":\"MAX\",\"args\":[2],\"retract\":true,"
           "\"name\":\"max_d\"},{\"func\":\"AVG\",\"args\":[1],\"retract\":true,"
           "\"name\":\"avg_x\"},{\"func\":\"COUNT\",\"args\":[1],\"retract\":true,"
           "\"name\":\"cnt_x\"}],\"need_retraction\":true,\"generate_update_before\":%s}}",
           gub ? "true" : "false");
  return buf;
}

const char* harness_spec_retracting(void) { return spec_r(1); }

#define R_IN "lig"
#define R_OUT "lliggil"

static const int8_t r1_kinds[] = {KD, KI, KI, KUA, KUB, KD, KI, KD, KUB, KI, KI, KD};
static const val r1_rows[] = {
    VI(9), VI(1), VD(1.0),  /* retraction before any accumulate: dropped */
    VI(1), VI(5), VD(5.0),  /* */
    VI(1), VI(3), VD(3.0),  /* */
    VI(1), VI(8), VD(8.0),  /* +U accumulates */
    VI(1), VI(3), VD(3.0),  /* retract the MIN: falls back to 5 */
    VI(1), VI(8), VD(8.0),  /* retract the MAX: falls back to 5 */
    VI(2), VN,    VN,       /* */
    VI(1), VI(5), VD(5.0),  /* count reaches 0: -D with previous values */
    VI(1), VI(5), VD(5.0),  /* key gone: dropped */
    VI(1), VI(7), VD(-7.0), /* re-created from scratch */
    VI(2), VI(4), VD(4.0),  /* */
    VI(2), VI(4), VD(4.0),  /* SUM/MIN/MAX/AVG back to NULL, count 1 */
};
static const int8_t r1_out_kinds[] = {KI, KUB, KUA, KUB, KUA, KUB, KUA, KUB, KUA,
                                      KI, KD,  KI,  KUB, KUA, KUB, KUA};
static const val r1_out[] = {
    VI(1), VI(1), VI(5),  VD(5.0),  VD(5.0),  VI(5),  VI(1),
    VI(1), VI(1), VI(5),  VD(5.0),  VD(5.0),  VI(5),  VI(1),
    VI(1), VI(2), VI(8),  VD(3.0),  VD(5.0),  VI(4),  VI(2),
    VI(1), VI(2), VI(8),  VD(3.0),  VD(5.0),  VI(4),  VI(2),
    VI(1), VI(3), VI(16), VD(3.0),  VD(8.0),  VI(5),  VI(3),
    VI(1), VI(3), VI(16), VD(3.0),  VD(8.0),  VI(5),  VI(3),
    VI(1), VI(2), VI(13), VD(5.0),  VD(8.0),  VI(6),  VI(2),
    VI(1), VI(2), VI(13), VD(5.0),  VD(8.0),  VI(6),  VI(2),
    VI(1), VI(1), VI(5),  VD(5.0),  VD(5.0),  VI(5),  VI(1),
    VI(2), VI(1), VN,     VN,       VN,       VN,     VI(0),
    VI(1), VI(1), VI(5),  VD(5.0),  VD(5.0),  VI(5),  VI(1),
    VI(1), VI(1), VI(7),  VD(-7.0), VD(-7.0), VI(7),  VI(1),
    VI(2), VI(1), VN,     VN,       VN,       VN,     VI(0),
    VI(2), VI(2), VI(4),  VD(4.0),  VD(4.0),  VI(4),  VI(1),
    VI(2), VI(2), VI(4),  VD(4.0),  VD(4.0),  VI(4),  VI(1),
    VI(2), VI(1), VN,     VN,       VN,       VN,     VI(0),
};

static const int8_t r2_kinds[] = {KD, KI, KI, KD};
static const val r2_rows[] = {
    VI(2), VN,     VN,       /* count 0: -D with NULL aggregates */
    VI(2), VI(-1), VD(2.5),  /* */
    VI(1), VI(-8), VD(-7.0), /* a second -7.0 */
    VI(1), VI(7),  VD(-7.0), /* retract one of two -7.0: MIN/MAX unchanged */
};
static const int8_t r2_out_kinds[] = {KD, KI, KUB, KUA, KUB, KUA};
static const val r2_out[] = {
    VI(2), VI(1), VN,     VN,       VN,       VN,     VI(0),
    VI(2), VI(1), VI(-1), VD(2.5),  VD(2.5),  VI(-1), VI(1),
    VI(1), VI(1), VI(7),  VD(-7.0), VD(-7.0), VI(7),  VI(1),
    VI(1), VI(2), VI(-1), VD(-7.0), VD(-7.0), VI(0),  VI(2), /* (7 - 8) / 2 = 0 */
    VI(1), VI(2), VI(-1), VD(-7.0), VD(-7.0), VI(0),  VI(2),
    VI(1), VI(1), VI(-8), VD(-7.0), VD(-7.0), VI(-8), VI(1),
};

static void retracting_run(int gub) {
  FerryHandle h = OPEN_OK(spec_r(gub));
  struct ArrowArray in, out;
  int8_t k[64];
  val v[64 * 7];
  int64_t id = ab_batch(&in, R_IN, ROWS(r1_rows, 3), r1_kinds, r1_rows);
  PROCESS_OK(h, &in, id, &out);
  if (gub) {
    CHECK_BATCH(&out, R_OUT, ROWS(r1_out, 7), r1_out_kinds, r1_out);
  } else {
    int64_t n = drop_update_before(r1_out_kinds, r1_out, ROWS(r1_out, 7), 7, k, v);
    CHECK_EQ(n, 10); /* -D rows stay */
    CHECK_BATCH(&out, R_OUT, n, k, v);
  }
  release_output(&out);

  id = ab_batch(&in, R_IN, ROWS(r2_rows, 3), r2_kinds, r2_rows);
  PROCESS_OK(h, &in, id, &out);
  if (gub) {
    CHECK_BATCH(&out, R_OUT, ROWS(r2_out, 7), r2_out_kinds, r2_out);
  } else {
    int64_t n = drop_update_before(r2_out_kinds, r2_out, ROWS(r2_out, 7), 7, k, v);
    CHECK_BATCH(&out, R_OUT, n, k, v);
  }
  release_output(&out);

  /* Only retractions of unknown keys: dropped, no output. */
  static const int8_t r3_kinds[] = {KD, KUB};
  static const val r3_rows[] = {VI(50), VI(1), VD(1.0), VI(51), VN, VN};
  id = ab_batch(&in, R_IN, 2, r3_kinds, r3_rows);
  PROCESS_OK(h, &in, id, &out);
  CHECK(out.release == NULL);
  CLOSE_OK(h);
}

/* Retracting MAX alone: the hidden record counter still drives -D; unchanged values emit
 * nothing. */
static void retracting_no_change(void) {
  FerryHandle h = OPEN_OK(
      "{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"k\","
      "\"type\":\"BIGINT\"},{\"name\":\"d\",\"type\":\"DOUBLE\"}],\"keys\":[0]}],"
      "\"max_parallelism\":128,\"params\":{\"aggs\":[{\"func\":\"MAX\",\"args\":[1],"
      "\"retract\":true}],\"need_retraction\":true,\"generate_update_before\":true}}");
  struct ArrowArray in, out;
  static const int8_t kinds[] = {KI, KI, KD, KD, KI};
  static const val rows[] = {VI(1), VD(5.0), VI(1), VD(3.0), VI(1), VD(3.0),
                             VI(1), VD(5.0), VI(1), VD(2.0)};
  static const int8_t ok[] = {KI, KD, KI};
  static const val orows[] = {VI(1), VD(5.0), VI(1), VD(5.0), VI(1), VD(2.0)};
  int64_t id = ab_batch(&in, "lg", 5, kinds, rows);
  PROCESS_OK(h, &in, id, &out);
  CHECK_BATCH(&out, "lg", 3, ok, orows);
  release_output(&out);

  static const int8_t k2[] = {KI, KD};
  static const val rows2[] = {VI(1), VD(1.0), VI(1), VD(1.0)};
  id = ab_batch(&in, "lg", 2, k2, rows2);
  PROCESS_OK(h, &in, id, &out);
  CHECK(out.release == NULL); /* MAX stays 2.0 through both rows */
  CLOSE_OK(h);
}

void scenario_retracting(void) {
  retracting_run(1);
  retracting_run(0);
  retracting_no_change();
}

/* ---------------------------------------------------------------------------------------- */

static void check_schema(FerryHandle h, int n, const char* const* formats,
                         const char* const* names, const int64_t* flags) {
  struct FerryError err = {0};
  struct ArrowSchema s;
  memset(&s, 0, sizeof s);
  int64_t before = ferry_output_bytes_outstanding();
  CHECK_OK(ferry_operator_output_schema(h, &s, &err), err);
  CHECK(s.release != NULL);
  if (!s.release) return;
  CHECK(ferry_output_bytes_outstanding() > before); /* schemas are counted too */
  CHECK(s.format && strcmp(s.format, "+s") == 0);
  CHECK_EQ(s.n_children, n);
  CHECK(s.dictionary == NULL);
  if (s.n_children == n && s.children) {
    for (int i = 0; i < n; i++) {
      const struct ArrowSchema* c = s.children[i];
      CHECK_MSG(c && c->format && strcmp(c->format, formats[i]) == 0,
                "child %d: format \"%s\", want \"%s\"", i, c && c->format ? c->format : "(null)",
                formats[i]);
      if (names[i])
        CHECK_MSG(c && c->name && strcmp(c->name, names[i]) == 0,
                  "child %d: name \"%s\", want \"%s\"", i, c && c->name ? c->name : "(null)",
                  names[i]);
      else
        CHECK_MSG(c && c->name && c->name[0], "child %d: RowKind column has no name", i);
      CHECK_MSG(c && c->flags == flags[i], "child %d (%s): flags %lld, want %lld", i,
                formats[i], c ? (long long)c->flags : -1LL, (long long)flags[i]);
      CHECK(c && c->n_children == 0 && c->dictionary == NULL && c->release != NULL);
    }
  }
  s.release(&s);
  CHECK(s.release == NULL);
}

void scenario_output_schema(void) {
  enum { N = ARROW_FLAG_NULLABLE };
  FerryHandle h = OPEN_OK(spec_a(1));
  static const char* const fa[] = {"l", "i", "l", "l", "g", "g", "l", "c"};
  static const char* const na[] = {"k", "sum_x", "cnt", "cnt_x", "min_d", "max_d", "avg_y", NULL};
  static const int64_t fl[] = {N, N, 0, 0, N, N, N, 0};
  check_schema(h, 8, fa, na, fl);
  CLOSE_OK(h);

  h = OPEN_OK(spec_r(1));
  static const char* const fr[] = {"l", "l", "i", "g", "g", "i", "l", "c"};
  static const char* const nr[] = {"k", "cnt", "sum_x", "min_d", "max_d", "avg_x", "cnt_x", NULL};
  static const int64_t flr[] = {N, 0, N, N, N, N, 0, 0};
  check_schema(h, 8, fr, nr, flr);
  CLOSE_OK(h);

  /* NOT NULL key, default aggregate names, SMALLINT and DOUBLE NOT NULL arguments. */
  h = OPEN_OK(
      "{\"kind\":\"group_aggregate\",\"inputs\":[{\"fields\":[{\"name\":\"city\","
      "\"type\":\"VARCHAR(20)\",\"nullable\":false},{\"name\":\"t\",\"type\":\"SMALLINT\"},"
      "{\"name\":\"w\",\"type\":\"DOUBLE NOT NULL\"}],\"keys\":[0]}],\"max_parallelism\":128,"
      "\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[1]},{\"func\":\"COUNT\",\"args\":[1]},"
      "{\"func\":\"max\",\"args\":[2]}]}}");
  static const char* const fv[] = {"u", "s", "l", "g", "c"};
  static const char* const nv[] = {"city", "agg0", "agg1", "agg2", NULL};
  static const int64_t flv[] = {0, N, 0, N, 0};
  check_schema(h, 5, fv, nv, flv);
  CLOSE_OK(h);
}
