/* scenarios_state.c — snapshot/restore of key-group state and blob validation. */
#include <stdlib.h>
#include <string.h>

#include "arrow_build.h"
#include "harness.h"

#define NKG 128
#define HEADER 48 /* snapshot chunk header size (snapshot/blob.go) */

const char* harness_spec_retracting(void);

static uint64_t rng_state;
static uint32_t rnd(void) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(rng_state >> 33);
}

/* ---- Generators: deterministic, so calling one twice builds identical batches. ---- */

#define S1_ROWS 240
#define S2_ROWS 180

/* Retracting spec (k BIGINT, x INT, d DOUBLE). Batch 1 inserts; batch 2 retracts a third of
 * batch 1's rows (some keys reach count 0) and inserts new rows, some for new keys. */
static int64_t gen_retracting(int which, struct ArrowArray* in) {
  static val b1[S1_ROWS * 3];
  static int8_t k1[S1_ROWS];
  rng_state = 42;
  for (int r = 0; r < S1_ROWS; r++) {
    k1[r] = KI;
    b1[3 * r] = VI(r % 70);
    b1[3 * r + 1] = rnd() % 10 == 0 ? VN : VI((int64_t)(rnd() % 200) - 100);
    b1[3 * r + 2] = rnd() % 12 == 0 ? VN : VD((double)(rnd() % 1000) / 8.0 - 50.0);
  }
  if (which == 1) return ab_batch(in, "lig", S1_ROWS, k1, b1);
  static val b2[S2_ROWS * 3];
  static int8_t k2[S2_ROWS];
  for (int r = 0; r < S2_ROWS; r++) {
    if (r % 3 == 0) {
      int src = (r * 4) % S1_ROWS; /* retract a row batch 1 inserted */
      k2[r] = (r % 2) ? KUB : KD;
      memcpy(&b2[3 * r], &b1[3 * src], 3 * sizeof(val));
    } else {
      k2[r] = (r % 5 == 1) ? KUA : KI;
      b2[3 * r] = VI((int64_t)(rnd() % 90));
      b2[3 * r + 1] = VI((int64_t)(rnd() % 50));
      b2[3 * r + 2] = VD((double)(rnd() % 64) / 4.0);
    }
  }
  return ab_batch(in, "lig", S2_ROWS, k2, b2);
}

static const char* spec_varchar =
    "{\"kind\":\"group_aggregate\",\"name\":\"GroupAggregate(groupBy=[name])\","
    "\"inputs\":[{\"fields\":[{\"name\":\"name\",\"type\":\"VARCHAR\"},{\"name\":\"v\","
    "\"type\":\"BIGINT\"}],\"keys\":[0]}],\"max_parallelism\":128,"
    "\"params\":{\"aggs\":[{\"func\":\"SUM\",\"args\":[1],\"name\":\"total\"},"
    "{\"func\":\"COUNT\",\"args\":[],\"name\":\"cnt\"},{\"func\":\"MIN\",\"args\":[1]}],"
    "\"generate_update_before\":true}}";

/* VARCHAR keys, inline and out of line, and a NULL key. */
static int64_t gen_varchar(int which, struct ArrowArray* in) {
  static char names[120][40];
  static val b[120 * 2];
  static int8_t k[120];
  rng_state = which == 1 ? 7 : 8;
  for (int r = 0; r < 120; r++) {
    unsigned key = rnd() % 40;
    if (key % 2)
      snprintf(names[r], sizeof names[r], "k%u", key);
    else
      snprintf(names[r], sizeof names[r], "a-long-varchar-key-number-%u", key);
    k[r] = KI;
    b[2 * r] = key == 39 ? VN : VS(names[r]);
    b[2 * r + 1] = VI((int64_t)(rnd() % 1000) - 500);
  }
  return ab_batch(in, "ul", 120, k, b);
}

/* ---- Round trip ---- */

typedef struct {
  struct FerryBlob blob[NKG];
  int nonempty;
} snapshot_set;

static void snapshot_all(FerryHandle h, snapshot_set* s) {
  struct FerryError err = {0};
  memset(s, 0, sizeof *s);
  for (int kg = 0; kg < NKG; kg++) {
    struct FerryBlob* b = &s->blob[kg];
    CHECK_OK(ferry_operator_snapshot(h, kg, b, &err), err);
    if (b->length == 0) {
      CHECK_MSG(b->data == NULL && b->release == NULL,
                "key group %d: empty blob must have data NULL and release NULL", kg);
    } else {
      s->nonempty++;
      CHECK_MSG(b->data != NULL && b->release != NULL && b->length > HEADER,
                "key group %d: blob data %p length %lld", kg, (void*)b->data,
                (long long)b->length);
      if (b->data && b->length >= 4) CHECK(memcmp(b->data, "FRYS", 4) == 0);
    }
  }
}

static void release_all(snapshot_set* s) {
  for (int kg = 0; kg < NKG; kg++) {
    struct FerryBlob* b = &s->blob[kg];
    if (b->release) {
      b->release(b);
      CHECK(b->release == NULL && b->data == NULL);
    }
  }
}

/* Restores every non-empty key group of s into h. */
static void restore_all(FerryHandle h, const snapshot_set* s) {
  struct FerryError err = {0};
  for (int kg = 0; kg < NKG; kg++)
    if (s->blob[kg].length > 0)
      CHECK_OK(ferry_operator_restore(h, kg, s->blob[kg].data, s->blob[kg].length, &err), err);
}

static int first_nonempty(const snapshot_set* s, int from) {
  for (int kg = from; kg < NKG; kg++)
    if (s->blob[kg].length > 0) return kg;
  return -1;
}

static int first_empty(const snapshot_set* s) {
  for (int kg = 0; kg < NKG; kg++)
    if (s->blob[kg].length == 0) return kg;
  return -1;
}

/* Blob validation on restore. */
static void restore_errors(const char* spec, const char* other_spec, snapshot_set* s) {
  struct FerryError err = {0};
  const char* fn = "ferry_operator_restore";
  int kg = first_nonempty(s, 0);
  CHECK(kg >= 0);
  if (kg < 0) return;
  const struct FerryBlob* b = &s->blob[kg];
  uint8_t* copy = (uint8_t*)malloc((size_t)b->length);
  FerryHandle c = OPEN_OK(spec);

  /* A flipped payload byte. */
  memcpy(copy, b->data, (size_t)b->length);
  copy[HEADER + (b->length - HEADER) / 2] ^= 0x40;
  CHECK_ERR(ferry_operator_restore(c, kg, copy, b->length, &err), err, FERRY_EDATA, fn, "checksum",
            NULL);
  /* A flipped header byte (the key group field). */
  memcpy(copy, b->data, (size_t)b->length);
  copy[16] ^= 0x01;
  CHECK_ERR(ferry_operator_restore(c, kg, copy, b->length, &err), err, FERRY_EDATA, fn, NULL, NULL);
  /* Truncated: one byte short, and shorter than the header. */
  memcpy(copy, b->data, (size_t)b->length);
  CHECK_ERR(ferry_operator_restore(c, kg, copy, b->length - 1, &err), err, FERRY_EDATA, fn, NULL,
            NULL);
  CHECK_ERR(ferry_operator_restore(c, kg, copy, 10, &err), err, FERRY_EDATA, fn, "truncated", NULL);
  /* Not a Ferry blob. */
  memcpy(copy, "XXXX", 4);
  CHECK_ERR(ferry_operator_restore(c, kg, copy, b->length, &err), err, FERRY_EDATA, fn, NULL, NULL);
  /* A blob of another key group. */
  int other = kg + 1 < NKG ? kg + 1 : kg - 1;
  CHECK_ERR(ferry_operator_restore(c, other, b->data, b->length, &err), err, FERRY_EDATA, fn,
            "key group", NULL);
  /* NULL data / negative length. */
  CHECK_ERR(ferry_operator_restore(c, kg, NULL, 8, &err), err, FERRY_EINVAL, fn, NULL, NULL);
  CHECK_ERR(ferry_operator_restore(c, kg, b->data, -1, &err), err, FERRY_EINVAL, fn, NULL, NULL);
  /* Key groups outside the operator's range [0, 127]. */
  CHECK(ferry_operator_restore(c, NKG, b->data, b->length, &err) == FERRY_EINVAL);
  if (err.release) err.release(&err);
  memset(&err, 0, sizeof err);
  CHECK(ferry_operator_restore(c, -1, b->data, b->length, &err) == FERRY_EINVAL);
  if (err.release) err.release(&err);
  memset(&err, 0, sizeof err);
  struct FerryBlob nb = {0};
  CHECK_ERR(ferry_operator_snapshot(c, NKG, &nb, &err), err, FERRY_EINVAL, "ferry_operator_snapshot",
            "outside", NULL);
  CHECK_ERR(ferry_operator_snapshot(c, -1, &nb, &err), err, FERRY_EINVAL, "ferry_operator_snapshot",
            "outside", NULL);
  CHECK(nb.release == NULL && nb.data == NULL);

  /* None of the failed restores left state behind. */
  snapshot_set after;
  snapshot_all(c, &after);
  CHECK_EQ(after.nonempty, 0);
  release_all(&after);

  /* Restoring the same key group twice. */
  CHECK_OK(ferry_operator_restore(c, kg, b->data, b->length, &err), err);
  CHECK_ERR(ferry_operator_restore(c, kg, b->data, b->length, &err), err, FERRY_EINVAL, fn,
            "already holds state", NULL);
  CLOSE_OK(c);

  /* A subtask owning key groups [0, 63] is handed a key group it does not own; the blob
   * itself is valid (the range is not part of the spec fingerprint). */
  int high = first_nonempty(s, 64);
  if (high >= 0) {
    char narrow[2048] = {0}; /* zeroed: Go's strlen reads whole vector blocks */
    const char* mp = strstr(spec, "\"max_parallelism\":128");
    CHECK(mp != NULL);
    size_t pre = (size_t)(mp - spec) + strlen("\"max_parallelism\":128");
    memcpy(narrow, spec, pre); /* the key-group range goes into the header, after it */
    snprintf(narrow + pre, sizeof narrow - pre, ",\"key_group_start\":0,\"key_group_end\":63%s",
             spec + pre);
    FerryHandle d = OPEN_OK(narrow);
    CHECK_ERR(ferry_operator_restore(d, high, s->blob[high].data, s->blob[high].length, &err), err,
              FERRY_EINVAL, fn, "outside", NULL);
    CHECK_ERR(ferry_operator_snapshot(d, high, &nb, &err), err, FERRY_EINVAL,
              "ferry_operator_snapshot", "outside", NULL);
    int low = first_nonempty(s, 0);
    if (low >= 0 && low <= 63)
      CHECK_OK(ferry_operator_restore(d, low, s->blob[low].data, s->blob[low].length, &err), err);
    CLOSE_OK(d);
  }
  CHECK(high >= 0); /* the generated keys cover key groups >= 64 */

  /* An operator with another max parallelism. */
  {
    char mp[2048] = {0};
    const char* at = strstr(spec, "\"max_parallelism\":128");
    CHECK(at != NULL);
    if (at) {
      size_t pre = (size_t)(at - spec);
      memcpy(mp, spec, pre);
      snprintf(mp + pre, sizeof mp - pre, "\"max_parallelism\":256%s",
               at + strlen("\"max_parallelism\":128"));
      FerryHandle m = OPEN_OK(mp);
      CHECK_ERR(ferry_operator_restore(m, kg, b->data, b->length, &err), err, FERRY_EDATA, fn,
                "max parallelism", NULL);
      CLOSE_OK(m);
    }
  }

  /* An operator with another aggregate list. */
  FerryHandle e = OPEN_OK(other_spec);
  CHECK_ERR(ferry_operator_restore(e, kg, b->data, b->length, &err), err, FERRY_EDATA, fn,
            "different spec", NULL);
  CLOSE_OK(e);
  free(copy);
}

static void roundtrip(const char* spec, const char* other_spec, const char* out_fmts,
                      int64_t (*gen)(int which, struct ArrowArray* in), int with_errors) {
  struct ArrowArray in, out_a, out_b;
  int64_t base = ferry_output_bytes_outstanding();
  FerryHandle a = OPEN_OK(spec);
  int64_t id = gen(1, &in);
  PROCESS_OK(a, &in, id, &out_a);
  CHECK(out_a.release != NULL);
  release_output(&out_a);

  snapshot_set s;
  snapshot_all(a, &s);
  CHECK(s.nonempty > 1 && s.nonempty < NKG);
  CHECK(first_empty(&s) >= 0);
  CHECK(ferry_output_bytes_outstanding() > base);

  FerryHandle b = OPEN_OK(spec);
  restore_all(b, &s);
  if (with_errors) restore_errors(spec, other_spec, &s);

  /* ... and as many keys. */
  struct FerryOperatorStats sta, stb;
  struct FerryError err = {0};
  CHECK_OK(ferry_operator_stats(a, &sta, &err), err);
  CHECK_OK(ferry_operator_stats(b, &stb, &err), err);
  CHECK(sta.keys > 0 && sta.state_bytes > 0 && stb.state_bytes > 0);
  CHECK_EQ(stb.keys, sta.keys);

  /* The restored operator holds state in exactly the same key groups. */
  snapshot_set sb;
  snapshot_all(b, &sb);
  CHECK_EQ(sb.nonempty, s.nonempty);
  for (int kg = 0; kg < NKG; kg++)
    CHECK_MSG((s.blob[kg].length > 0) == (sb.blob[kg].length > 0),
              "key group %d: empty before snapshot %d, after restore %d", kg,
              s.blob[kg].length == 0, sb.blob[kg].length == 0);
  release_all(&sb);
  /* Blobs are only read during restore: free them before the restored operator runs. */
  release_all(&s);
  CHECK_EQ(ferry_output_bytes_outstanding(), base);

  /* The same next batch on both: identical changelogs. */
  int64_t ida = gen(2, &in);
  PROCESS_OK(a, &in, ida, &out_a);
  int64_t idb = gen(2, &in);
  PROCESS_OK(b, &in, idb, &out_b);
  CHECK(out_a.release != NULL && out_a.length > 0);
  CHECK_SAME_BATCH(&out_a, &out_b, out_fmts);
  release_output(&out_a);
  release_output(&out_b);
  CLOSE_OK(a);
  CLOSE_OK(b);
  CHECK_EQ(ferry_output_bytes_outstanding(), base);
}

void scenario_snapshot_restore(void) {
  static const char* other_retracting =
      "{\"kind\":\"group_aggregate\",\"name\":\"GroupAggregate(groupBy=[k], retract)\","
      "\"inputs\":[{\"fields\":[{\"name\":\"k\",\"type\":\"BIGINT\"},{\"name\":\"x\","
      "\"type\":\"INT\"},{\"name\":\"d\",\"type\":\"DOUBLE\"}],\"keys\":[0]}],"
      "\"max_parallelism\":128,\"params\":{\"aggs\":[{\"func\":\"COUNT\",\"args\":[],"
      "\"name\":\"cnt\"},{\"func\":\"SUM\",\"args\":[1],\"retract\":true,\"name\":\"sum_x\"}],"
      "\"need_retraction\":true,\"generate_update_before\":true}}";
  roundtrip(harness_spec_retracting(), other_retracting, "lliggil", gen_retracting, 1);
  roundtrip(spec_varchar, NULL, "ulll", gen_varchar, 0);
}
