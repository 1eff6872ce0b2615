/* demo.c — `ferry_harness demo`: a small Nexmark-shaped run, printed readably.
 *
 *   SELECT auction, COUNT(*) AS bids, SUM(price) AS total, MAX(price) AS max_price,
 *          AVG(price) AS avg_price
 *   FROM bid GROUP BY auction
 *
 * over generated bids (10 auctions, a hot one) in batches of 100 rows. The final per-auction
 * values are checked against a plain C model. No poisoning in demo mode. */
#include <stdlib.h>
#include <string.h>

#include "arrow_build.h"
#include "harness.h"

#define DEMO_BATCHES 4
#define DEMO_BATCH_ROWS 100
#define DEMO_AUCTIONS 10
#define FIRST_AUCTION 1000

static const char* demo_spec =
    "{\"kind\":\"group_aggregate\",\"name\":\"GroupAggregate(groupBy=[auction])\","
    "\"inputs\":[{\"fields\":[{\"name\":\"auction\",\"type\":\"BIGINT\"},"
    "{\"name\":\"price\",\"type\":\"BIGINT\"}],\"keys\":[0]}],\"max_parallelism\":128,"
    "\"params\":{\"aggs\":[{\"func\":\"COUNT\",\"args\":[],\"name\":\"bids\"},"
    "{\"func\":\"SUM\",\"args\":[1],\"name\":\"total\"},"
    "{\"func\":\"MAX\",\"args\":[1],\"name\":\"max_price\"},"
    "{\"func\":\"AVG\",\"args\":[1],\"name\":\"avg_price\"}],"
    "\"need_retraction\":false,\"generate_update_before\":true}}";

#define OUT_FMTS "lllll"

static const char* kind_name(int8_t k) {
  static const char* names[] = {"+I", "-U", "+U", "-D"};
  return k >= 0 && k <= 3 ? names[k] : "??";
}

typedef struct {
  int64_t bids, total, max, avg;
  int seen;
} auction_state;

int run_demo(void) {
  struct FerryError err = {0};
  uint64_t rng = 2024;
  auction_state model[DEMO_AUCTIONS] = {{0}}, ferry[DEMO_AUCTIONS] = {{0}};
  int64_t rows_in = 0, rows_out = 0;

  printf("Ferry demo: %s\n", ferry_version());
  printf("query: SELECT auction, COUNT(*), SUM(price), MAX(price), AVG(price) FROM bid GROUP BY "
         "auction\n\n");
  CHECK_OK(ferry_init("{\"max_procs\":2}", &err), err);
  FerryHandle h = 0;
  CHECK_OK(ferry_operator_open(demo_spec, NULL, 0, NULL, &h, &err), err);
  if (!h) return 1;

  struct ArrowSchema s;
  memset(&s, 0, sizeof s);
  CHECK_OK(ferry_operator_output_schema(h, &s, &err), err);
  printf("output schema (%lld columns):\n", (long long)s.n_children);
  for (int64_t i = 0; s.release && i < s.n_children; i++)
    printf("  %-10s %-3s %s\n", s.children[i]->name, s.children[i]->format,
           s.children[i]->flags & ARROW_FLAG_NULLABLE ? "nullable" : "not null");
  if (s.release) s.release(&s);
  printf("\n");

  struct ArrowArray last;
  memset(&last, 0, sizeof last);
  for (int b = 0; b < DEMO_BATCHES; b++) {
    val rows[DEMO_BATCH_ROWS * 2];
    int8_t kinds[DEMO_BATCH_ROWS];
    for (int r = 0; r < DEMO_BATCH_ROWS; r++) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      uint32_t x = (uint32_t)(rng >> 33);
      int a = x % 3 == 0 ? 0 : (int)((x >> 8) % DEMO_AUCTIONS); /* auction 1000 is hot */
      int64_t price = 100 + (int64_t)((x >> 16) % 900);
      kinds[r] = KI;
      rows[2 * r] = VI(FIRST_AUCTION + a);
      rows[2 * r + 1] = VI(price);
      auction_state* m = &model[a];
      m->bids++;
      m->total += price;
      if (!m->seen || price > m->max) m->max = price;
      m->seen = 1;
      m->avg = m->total / m->bids;
    }
    struct ArrowArray in, out;
    int64_t id = ab_batch(&in, "ll", DEMO_BATCH_ROWS, kinds, rows);
    PROCESS_OK(h, &in, id, &out);
    rows_in += DEMO_BATCH_ROWS;
    int64_t n = out.release ? out.length : 0;
    rows_out += n;
    printf("batch %d: %d rows in, %lld changelog rows out\n", b + 1, DEMO_BATCH_ROWS,
           (long long)n);
    for (int64_t r = 0; r < n; r++) {
      int8_t k = out_kind(&out, r);
      if (k != KI && k != KUA) continue;
      int64_t a = out_cell(&out, OUT_FMTS, 0, r).i - FIRST_AUCTION;
      if (a < 0 || a >= DEMO_AUCTIONS) continue;
      ferry[a] = (auction_state){out_cell(&out, OUT_FMTS, 1, r).i, out_cell(&out, OUT_FMTS, 2, r).i,
                                 out_cell(&out, OUT_FMTS, 3, r).i, out_cell(&out, OUT_FMTS, 4, r).i,
                                 1};
    }
    if (b == DEMO_BATCHES - 1)
      last = out;
    else
      release_output(&out);
  }

  if (last.release) {
    int64_t from = last.length > 12 ? last.length - 12 : 0;
    printf("\nlast %lld changelog rows:\n", (long long)(last.length - from));
    printf("  %-4s %8s %6s %8s %10s %10s\n", "kind", "auction", "bids", "total", "max_price",
           "avg_price");
    for (int64_t r = from; r < last.length; r++)
      printf("  %-4s %8lld %6lld %8lld %10lld %10lld\n", kind_name(out_kind(&last, r)),
             (long long)out_cell(&last, OUT_FMTS, 0, r).i,
             (long long)out_cell(&last, OUT_FMTS, 1, r).i,
             (long long)out_cell(&last, OUT_FMTS, 2, r).i,
             (long long)out_cell(&last, OUT_FMTS, 3, r).i,
             (long long)out_cell(&last, OUT_FMTS, 4, r).i);
    release_output(&last);
  }

  printf("\nfinal result per auction (Ferry vs C model):\n");
  for (int a = 0; a < DEMO_AUCTIONS; a++) {
    const auction_state *f = &ferry[a], *m = &model[a];
    int same = f->seen == m->seen && f->bids == m->bids && f->total == m->total &&
               f->max == m->max && f->avg == m->avg;
    CHECK_MSG(same, "auction %d: Ferry (%lld, %lld, %lld, %lld) vs model (%lld, %lld, %lld, %lld)",
              FIRST_AUCTION + a, (long long)f->bids, (long long)f->total, (long long)f->max,
              (long long)f->avg, (long long)m->bids, (long long)m->total, (long long)m->max,
              (long long)m->avg);
    printf("  auction %d: bids %3lld  total %6lld  max %4lld  avg %4lld  %s\n", FIRST_AUCTION + a,
           (long long)f->bids, (long long)f->total, (long long)f->max, (long long)f->avg,
           same ? "ok" : "MISMATCH");
  }

  CLOSE_OK(h);
  CHECK_EQ(ferry_output_bytes_outstanding(), 0);
  CHECK_EQ(ab_batches_not_released_once(), 0);
  printf("\nsummary: %d batches, %lld rows in, %lld changelog rows out, output bytes outstanding "
         "%lld, %ld checks, %ld failed\n",
         DEMO_BATCHES, (long long)rows_in, (long long)rows_out,
         (long long)ferry_output_bytes_outstanding(), g_checks, g_failures);
  return g_failures ? 1 : 0;
}
