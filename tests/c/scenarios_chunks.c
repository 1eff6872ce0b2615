/* scenarios_chunks.c — chunked output (ferry_operator_next), driven by the test operator kind
 * test_fanout of a library built with the ferrytest tag: every input row comes out `copies`
 * times, in chunks of at most chunk_rows rows. */
#include <stdlib.h>
#include <string.h>

#include "arrow_build.h"
#include "harness.h"

/* Two inputs of (k BIGINT, s VARCHAR); 3 copies per row; chunks of 4 rows. */
static const char* spec_fanout =
    "{\"kind\":\"test_fanout\",\"name\":\"Fanout\",\"inputs\":["
    "{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},{\"name\":\"s\",\"type\":\"VARCHAR\"}]},"
    "{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},{\"name\":\"s\",\"type\":\"VARCHAR\"}]}],"
    "\"max_parallelism\":128,\"chunk_rows\":4,\"params\":{\"copies\":3}}";

static const int8_t f_kinds[] = {KI, KD, KUA};
static const val f_rows[] = {
    VI(1), VS("a"),                  /* */
    VN,    VS("a-long-string-value"), /* */
    VI(3), VN,                       /* */
};

/* The 9 output rows: each input row three times, with its RowKind. */
static int8_t want_kinds[9];
static val want_rows[18];

static void expected(void) {
  for (int r = 0; r < 9; r++) {
    want_kinds[r] = f_kinds[r / 3];
    want_rows[2 * r] = f_rows[2 * (r / 3)];
    want_rows[2 * r + 1] = f_rows[2 * (r / 3) + 1];
  }
}

void scenario_chunked_output(void) {
  struct FerryError err = {0};
  expected();
  /* Both input schemas are checked and consumed. */
  static const char* const f[] = {"l", "u", "c"};
  static const char* const n[] = {"k", "s", "$row_kind"};
  struct ArrowSchema s0, s1;
  int64_t sid0 = ab_schema(&s0, 3, f, n), sid1 = ab_schema(&s1, 3, f, n);
  struct ArrowSchema* const schemas[] = {&s0, &s1};
  FerryHandle h = 0;
  CHECK_OK(ferry_operator_open(spec_fanout, NULL, 2, schemas, &h, &err), err);
  CHECK_EQ(ab_schema_releases(sid0), 1);
  CHECK_EQ(ab_schema_releases(sid1), 1);

  /* Process on input 1: the first chunk, more = 1; the input is consumed already. */
  struct ArrowArray in, out;
  memset(&out, 0, sizeof out);
  int32_t more = -1;
  int64_t id = ab_batch(&in, "lu", 3, f_kinds, f_rows);
  struct ArrowArray* const on_input_1[] = {NULL, &in};
  CHECK_OK(ferry_operator_process(h, 2, on_input_1, 0, NULL, 0, &out, &more, &err), err);
  CHECK_CONSUMED(in, id);
  CHECK_EQ(more, 1);
  CHECK_BATCH(&out, "lu", 4, want_kinds, want_rows);
  release_output(&out);

  /* While output is pending every call but next and close fails with FERRY_ESTATE. */
  id = ab_batch(&in, "lu", 3, f_kinds, f_rows);
  CHECK_ERR(ferry_operator_process(h, ONE_BATCH(&in), 0, &out, &more, &err), err, FERRY_ESTATE,
            "ferry_operator_process", "pending", NULL);
  CHECK_CONSUMED(in, id);
  CHECK_EQ(more, 0);
  CHECK(out.release == NULL);
  CHECK_ERR(ferry_operator_flush(h, 0, &out, &more, &err), err, FERRY_ESTATE,
            "ferry_operator_flush", "pending", NULL);
  struct FerryBlob b = {0};
  CHECK_ERR(ferry_operator_snapshot(h, 0, &b, &err), err, FERRY_ESTATE, "ferry_operator_snapshot",
            "pending", NULL);

  /* next hands out the rest: 4 rows, then 1 row and more = 0. */
  CHECK_OK(ferry_operator_next(h, &out, &more, &err), err);
  CHECK_EQ(more, 1);
  CHECK_BATCH(&out, "lu", 4, want_kinds + 4, want_rows + 8);
  release_output(&out);
  memset(&out, 0, sizeof out);
  CHECK_OK(ferry_operator_next(h, &out, &more, &err), err);
  CHECK_EQ(more, 0);
  CHECK_BATCH(&out, "lu", 1, want_kinds + 8, want_rows + 16);
  release_output(&out);
  memset(&out, 0, sizeof out);
  CHECK_ERR(ferry_operator_next(h, &out, &more, &err), err, FERRY_ESTATE, "ferry_operator_next",
            "no output is pending", NULL);
  CHECK(out.release == NULL);

  /* Input index and NULL arguments. */
  id = ab_batch(&in, "lu", 3, f_kinds, f_rows);
  struct ArrowArray* const on_input_0[] = {&in, NULL};
  const int32_t to_input_2[] = {2, 3};
  CHECK_ERR(ferry_operator_process(h, 2, on_input_0, 1, to_input_2, 0, &out, &more, &err), err,
            FERRY_EINVAL, "ferry_operator_process", "input 2 out of range", NULL);
  CHECK_CONSUMED(in, id);
  id = ab_batch(&in, "lu", 3, f_kinds, f_rows);
  CHECK_ERR(ferry_operator_process(h, ONE_BATCH(&in), 0, &out, NULL, &err), err, FERRY_EINVAL,
            "ferry_operator_process", "more", NULL);
  CHECK_CONSUMED(in, id);
  CHECK_ERR(ferry_operator_next(h, &out, NULL, &err), err, FERRY_EINVAL, "ferry_operator_next",
            "more", NULL);

  /* Close with output pending drops the rest and frees everything. */
  id = ab_batch(&in, "lu", 3, f_kinds, f_rows);
  CHECK_OK(ferry_operator_process(h, ONE_BATCH(&in), 0, &out, &more, &err), err);
  CHECK_CONSUMED(in, id);
  CHECK_EQ(more, 1);
  release_output(&out);
  CLOSE_OK(h);
  CHECK_EQ(ferry_output_bytes_outstanding(), 0);
}

/* ferry_operator_process with runs: both inputs' rows in one call, in arrival order. An interval join
 * over (k BIGINT, t BIGINT) on each side, t2 BETWEEN t1 - 5 AND t1 + 5. */
static const char* spec_join =
    "{\"kind\":\"interval_join\",\"name\":\"Join\",\"inputs\":["
    "{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},{\"name\":\"t\",\"type\":\"BIGINT\"}],\"keys\":[0]},"
    "{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},{\"name\":\"t\",\"type\":\"BIGINT\"}],\"keys\":[0]}],"
    "\"max_parallelism\":128,\"params\":{\"join_type\":\"INNER\",\"time_mode\":\"rowtime\","
    "\"left_lower_bound\":-5,\"left_upper_bound\":5,\"allowed_lateness\":0,"
    "\"min_clean_up_interval_ms\":0,\"left_time_index\":1,\"right_time_index\":1,"
    "\"filter_nulls\":[true]}}";

void scenario_process_runs(void) {
  struct FerryError err = {0};
  FerryHandle h = 0;
  CHECK_OK(ferry_operator_open(spec_join, NULL, 0, NULL, &h, &err), err);
  static const int8_t kinds[] = {KI, KI};
  static const val left[] = {VI(1), VI(10), VI(2), VI(20)};
  static const val right[] = {VI(1), VI(12)};
  struct ArrowArray l, r, out;
  memset(&out, 0, sizeof out);
  int32_t more = -1;

  /* Left row 0, the right row, left row 1: the right row joins the left row before it. */
  int64_t lid = ab_batch(&l, "ll", 2, kinds, left), rid = ab_batch(&r, "ll", 1, kinds, right);
  struct ArrowArray* const batches[] = {&l, &r};
  const int32_t runs[] = {0, 1, 1, 1, 0, 1};
  CHECK_OK(ferry_operator_process(h, 2, batches, 3, runs, 0, &out, &more, &err), err);
  CHECK_CONSUMED(l, lid);
  CHECK_CONSUMED(r, rid);
  CHECK_EQ(more, 0);
  static const int8_t one[] = {KI};
  static const val joined[] = {VI(1), VI(10), VI(1), VI(12)};
  CHECK_BATCH(&out, "llll", 1, one, joined);
  release_output(&out);
  memset(&out, 0, sizeof out);

  /* Runs that leave a row unused: FERRY_EINVAL, both batches consumed, nothing emitted. */
  lid = ab_batch(&l, "ll", 2, kinds, left);
  rid = ab_batch(&r, "ll", 1, kinds, right);
  const int32_t short_runs[] = {0, 1, 1, 1};
  CHECK_ERR(ferry_operator_process(h, 2, batches, 2, short_runs, 0, &out, &more, &err), err,
            FERRY_EINVAL, "ferry_operator_process", "the runs use 1 of input 0's 2 rows", NULL);
  CHECK_CONSUMED(l, lid);
  CHECK_CONSUMED(r, rid);
  CHECK_EQ(more, 0);
  CHECK(out.release == NULL);

  /* A NULL batch for an input without rows; a stale handle still consumes the batches. */
  lid = ab_batch(&l, "ll", 2, kinds, left);
  struct ArrowArray* const only_left[] = {&l, NULL};
  const int32_t left_runs[] = {0, 2};
  CHECK_OK(ferry_operator_process(h, 2, only_left, 1, left_runs, 0, &out, &more, &err), err);
  CHECK_CONSUMED(l, lid);
  if (out.release != NULL) release_output(&out);
  memset(&out, 0, sizeof out);
  CLOSE_OK(h);
  lid = ab_batch(&l, "ll", 2, kinds, left);
  CHECK_ERR(ferry_operator_process(h, 2, only_left, 1, left_runs, 0, &out, &more, &err), err,
            FERRY_EINVAL, "ferry_operator_process", "handle", NULL);
  CHECK_CONSUMED(l, lid);

  /* Any kind takes several inputs' rows in one call: the fanout emits both batches' copies. */
  CHECK_OK(ferry_operator_open(spec_fanout, NULL, 0, NULL, &h, &err), err);
  lid = ab_batch(&l, "lu", 3, f_kinds, f_rows);
  rid = ab_batch(&r, "lu", 3, f_kinds, f_rows);
  const int32_t fan_runs[] = {0, 3, 1, 3};
  CHECK_OK(ferry_operator_process(h, 2, batches, 2, fan_runs, 0, &out, &more, &err), err);
  CHECK_CONSUMED(l, lid);
  CHECK_CONSUMED(r, rid);
  int64_t rows = 0;
  for (;;) {
    rows += out.length;
    release_output(&out);
    memset(&out, 0, sizeof out);
    if (!more) break;
    CHECK_OK(ferry_operator_next(h, &out, &more, &err), err);
  }
  CHECK_EQ(rows, 18);
  CLOSE_OK(h);
  CHECK_EQ(ferry_output_bytes_outstanding(), 0);
}
