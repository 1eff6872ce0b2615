/* arrow_build.c — hand-built Arrow C Data arrays and schemas, and output batch checkers. */
#include "arrow_build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

int ab_opt_unknown_null_count;
int ab_opt_always_bitmap;

void ab_reset_options(void) {
  ab_opt_unknown_null_count = 0;
  ab_opt_always_bitmap = 0;
}

static void* xcalloc(size_t n, size_t size) {
  void* p = calloc(n ? n : 1, size ? size : 1);
  if (!p) {
    fprintf(stderr, "harness: out of memory\n");
    exit(2);
  }
  return p;
}

/* ---- Arrays ---- */

/* Bookkeeping of one built struct (root or child). Root records outlive the batch (freed by
 * ab_cleanup) so a second release call is counted instead of touching freed memory. */
typedef struct ab_priv {
  int64_t id; /* batch id (roots), -1 for children */
  int released;
  int freed;
  int nbufs;
  void* bufs[3];
  const void** buffers; /* the pointer array handed out */
  int64_t nkids;
  struct ArrowArray** kids;     /* child structs we allocated */
  struct ArrowArray** children; /* the pointer array handed out */
} ab_priv;

#define AB_MAX 8192
static ab_priv* roots[AB_MAX];
static int64_t nroots;

static void free_bufs(ab_priv* p) {
  if (p->freed) return;
  for (int i = 0; i < p->nbufs; i++) free(p->bufs[i]);
  free(p->buffers);
  p->freed = 1;
}

static void release_child(struct ArrowArray* a) {
  ab_priv* p = (ab_priv*)a->private_data;
  p->released++;
  free_bufs(p);
  a->release = NULL;
}

static void release_root(struct ArrowArray* a) {
  ab_priv* p = (ab_priv*)a->private_data;
  p->released++;
  a->release = NULL;
  if (p->released > 1) return; /* counted as a double release; memory is already gone */
  for (int64_t k = 0; k < p->nkids; k++) {
    struct ArrowArray* c = p->kids[k];
    ab_priv* cp = (ab_priv*)c->private_data;
    if (c->release == release_child) c->release(c);
    free_bufs(cp);
    free(cp);
    free(c);
  }
  free(p->kids);
  free(p->children);
  free_bufs(p);
}

static int width(char f) {
  switch (f) {
    case 'l':
    case 'g':
      return 8;
    case 'i':
      return 4;
    case 'c':
      return 1;
  }
  return 0;
}

static const char* format_of(char f) {
  switch (f) {
    case 'l':
      return "l";
    case 'i':
      return "i";
    case 'g':
      return "g";
    case 'u':
      return "u";
    case 'c':
      return "c";
  }
  fprintf(stderr, "harness: unknown column format '%c'\n", f);
  exit(2);
}

/* One child column: values[r] = vals[r*stride + col]. */
static struct ArrowArray* build_column(char f, int64_t rows, const val* vals, int64_t stride,
                                       int64_t col) {
  (void)format_of(f);
  if (rows < 0 || rows > (1 << 24)) {
    fprintf(stderr, "harness: bad row count %lld\n", (long long)rows);
    exit(2);
  }
  struct ArrowArray* a = (struct ArrowArray*)xcalloc(1, sizeof *a);
  ab_priv* p = (ab_priv*)xcalloc(1, sizeof *p);
  p->id = -1;
  int64_t nulls = 0;
  for (int64_t r = 0; r < rows; r++) nulls += vals[r * stride + col].null;
  uint8_t* valid = NULL;
  if (nulls > 0 || ab_opt_always_bitmap) {
    size_t bytes = (size_t)((rows + 63) / 64 * 8);
    valid = (uint8_t*)xcalloc(bytes, 1);
    memset(valid, 0xff, bytes); /* bits past the end stay 1: consumers must ignore them */
    for (int64_t r = 0; r < rows; r++)
      if (vals[r * stride + col].null) valid[r >> 3] &= (uint8_t) ~(1u << (r & 7));
  }
  p->nbufs = f == 'u' ? 3 : 2;
  p->bufs[0] = valid;
  if (f == 'u') {
    int32_t* offs = (int32_t*)xcalloc((size_t)rows + 1, sizeof(int32_t));
    size_t total = 0;
    for (int64_t r = 0; r < rows; r++) {
      const val* v = &vals[r * stride + col];
      total += v->null ? 7 : strlen(v->s);
    }
    char* data = (char*)xcalloc(total + 1, 1);
    size_t pos = 0;
    for (int64_t r = 0; r < rows; r++) {
      const val* v = &vals[r * stride + col];
      offs[r] = (int32_t)pos;
      const char* s = v->null ? "GARBAGE" : v->s; /* a NULL slot may span arbitrary bytes */
      memcpy(data + pos, s, strlen(s));
      pos += strlen(s);
    }
    offs[rows] = (int32_t)pos;
    p->bufs[1] = offs;
    p->bufs[2] = data;
  } else {
    int w = width(f);
    uint8_t* data = (uint8_t*)xcalloc((size_t)rows, (size_t)w);
    for (int64_t r = 0; r < rows; r++) {
      const val* v = &vals[r * stride + col];
      uint8_t* slot = data + r * w;
      if (v->null) {
        memset(slot, 0xA5, (size_t)w); /* garbage under NULL */
        continue;
      }
      switch (f) {
        case 'l': {
          int64_t x = v->i;
          memcpy(slot, &x, 8);
          break;
        }
        case 'i': {
          int32_t x = (int32_t)v->i;
          memcpy(slot, &x, 4);
          break;
        }
        case 'c': {
          int8_t x = (int8_t)v->i;
          memcpy(slot, &x, 1);
          break;
        }
        case 'g':
          memcpy(slot, &v->d, 8);
          break;
      }
    }
    p->bufs[1] = data;
  }
  p->buffers = (const void**)xcalloc(3, sizeof(void*));
  for (int i = 0; i < p->nbufs; i++) p->buffers[i] = p->bufs[i];
  *a = (struct ArrowArray){.length = rows,
                           .null_count = valid ? (ab_opt_unknown_null_count ? -1 : nulls) : 0,
                           .offset = 0,
                           .n_buffers = p->nbufs,
                           .n_children = 0,
                           .buffers = p->buffers,
                           .children = NULL,
                           .dictionary = NULL,
                           .release = release_child,
                           .private_data = p};
  return a;
}

int64_t ab_batch(struct ArrowArray* out, const char* fmts, int64_t rows, const int8_t* kinds,
                 const val* vals) {
  if (nroots >= AB_MAX) {
    fprintf(stderr, "harness: too many batches\n");
    exit(2);
  }
  int64_t ncols = (int64_t)strlen(fmts);
  ab_priv* p = (ab_priv*)xcalloc(1, sizeof *p);
  p->id = nroots;
  roots[nroots++] = p;
  p->nkids = ncols + 1;
  p->kids = (struct ArrowArray**)xcalloc((size_t)p->nkids, sizeof(void*));
  p->children = (struct ArrowArray**)xcalloc((size_t)p->nkids, sizeof(void*));
  for (int64_t c = 0; c < ncols; c++) p->kids[c] = build_column(fmts[c], rows, vals, ncols, c);
  /* RowKind: int8 without validity (built from a temporary val array). */
  val* kv = (val*)xcalloc((size_t)rows, sizeof(val));
  for (int64_t r = 0; r < rows; r++) kv[r] = VI(kinds[r]);
  int saved = ab_opt_always_bitmap;
  ab_opt_always_bitmap = 0;
  p->kids[ncols] = build_column('c', rows, kv, 1, 0);
  ab_opt_always_bitmap = saved;
  free(kv);
  for (int64_t c = 0; c < p->nkids; c++) p->children[c] = p->kids[c];
  p->nbufs = 0;
  p->buffers = (const void**)xcalloc(1, sizeof(void*)); /* struct: one (NULL) validity buffer */
  *out = (struct ArrowArray){.length = rows,
                             .null_count = 0,
                             .offset = 0,
                             .n_buffers = 1,
                             .n_children = p->nkids,
                             .buffers = p->buffers,
                             .children = p->children,
                             .dictionary = NULL,
                             .release = release_root,
                             .private_data = p};
  return p->id;
}

void* ab_buf(struct ArrowArray* a, int64_t child, int buf) {
  ab_priv* p = (ab_priv*)a->private_data;
  ab_priv* cp = (ab_priv*)p->kids[child]->private_data;
  return cp->bufs[buf];
}

int ab_releases(int64_t id) { return id >= 0 && id < nroots ? roots[id]->released : -1; }
int64_t ab_batches_made(void) { return nroots; }

int64_t ab_batches_not_released_once(void) {
  int64_t n = 0;
  for (int64_t i = 0; i < nroots; i++)
    if (roots[i]->released != 1) {
      fprintf(stderr, "  batch %lld released %d times\n", (long long)i, roots[i]->released);
      n++;
    }
  return n;
}

/* ---- Schemas ---- */

typedef struct {
  int64_t id;
  int released;
  int64_t n;
  struct ArrowSchema** kids;
  struct ArrowSchema** children;
  char** strings;
} schema_priv;

static schema_priv* sroots[AB_MAX];
static int64_t nsroots;

static void release_schema_child(struct ArrowSchema* s) { s->release = NULL; }

static void release_schema_root(struct ArrowSchema* s) {
  schema_priv* p = (schema_priv*)s->private_data;
  p->released++;
  s->release = NULL;
  if (p->released > 1) return;
  for (int64_t i = 0; i < p->n; i++) {
    if (p->kids[i]->release) p->kids[i]->release(p->kids[i]);
    free(p->kids[i]);
  }
  for (int64_t i = 0; i < 2 * p->n; i++) free(p->strings[i]);
  free(p->strings);
  free(p->kids);
  free(p->children);
}

/* Strings handed to Ferry are 32-byte aligned, zero-padded to a multiple of 32 bytes: Go's
 * C.GoString (runtime.findnull -> indexbytebody) scans with aligned 32-byte vector loads past the
 * NUL, which valgrind reports as an invalid read of the block. Padding keeps that Go-runtime
 * false positive out of the run without a suppression that could also hide real over-reads. */
static char* xstrdup(const char* s) {
  size_t n = strlen(s) + 1, size = (n + 31) / 32 * 32;
  char* d = (char*)aligned_alloc(32, size);
  if (!d) exit(2);
  memset(d, 0, size);
  memcpy(d, s, n);
  return d;
}

int64_t ab_schema(struct ArrowSchema* out, int n, const char* const* formats,
                  const char* const* names) {
  if (nsroots >= AB_MAX) exit(2);
  schema_priv* p = (schema_priv*)xcalloc(1, sizeof *p);
  p->id = nsroots;
  sroots[nsroots++] = p;
  p->n = n;
  p->kids = (struct ArrowSchema**)xcalloc((size_t)n, sizeof(void*));
  p->children = (struct ArrowSchema**)xcalloc((size_t)n, sizeof(void*));
  p->strings = (char**)xcalloc(2 * (size_t)n, sizeof(char*));
  for (int i = 0; i < n; i++) {
    p->strings[2 * i] = xstrdup(formats[i]);
    p->strings[2 * i + 1] = xstrdup(names[i]);
    struct ArrowSchema* k = (struct ArrowSchema*)xcalloc(1, sizeof *k);
    *k = (struct ArrowSchema){.format = p->strings[2 * i],
                              .name = p->strings[2 * i + 1],
                              .metadata = NULL,
                              .flags = ARROW_FLAG_NULLABLE,
                              .n_children = 0,
                              .children = NULL,
                              .dictionary = NULL,
                              .release = release_schema_child,
                              .private_data = NULL};
    p->kids[i] = k;
    p->children[i] = k;
  }
  *out = (struct ArrowSchema){.format = "+s",
                              .name = "",
                              .metadata = NULL,
                              .flags = 0,
                              .n_children = n,
                              .children = p->children,
                              .dictionary = NULL,
                              .release = release_schema_root,
                              .private_data = p};
  return p->id;
}

int ab_schema_releases(int64_t id) { return id >= 0 && id < nsroots ? sroots[id]->released : -1; }
int64_t ab_schemas_made(void) { return nsroots; }

int64_t ab_schemas_not_released_once(void) {
  int64_t n = 0;
  for (int64_t i = 0; i < nsroots; i++)
    if (sroots[i]->released != 1) {
      fprintf(stderr, "  schema %lld released %d times\n", (long long)i, sroots[i]->released);
      n++;
    }
  return n;
}

void ab_cleanup(void) {
  for (int64_t i = 0; i < nroots; i++) free(roots[i]);
  for (int64_t i = 0; i < nsroots; i++) free(sroots[i]);
  nroots = nsroots = 0;
}

/* ---- Output batches ---- */

static int out_null(const struct ArrowArray* c, int64_t i) {
  const uint8_t* v = (const uint8_t*)c->buffers[0];
  if (!v || c->null_count == 0) return 0;
  int64_t j = c->offset + i;
  return !(v[j >> 3] & (1u << (j & 7)));
}

val out_cell(const struct ArrowArray* out, const char* fmts, int64_t col, int64_t row) {
  const struct ArrowArray* c = out->children[col];
  int64_t i = out->offset + row;
  val v = {0};
  if (out_null(c, i)) {
    v.null = 1;
    return v;
  }
  int64_t j = c->offset + i;
  switch (fmts[col]) {
    case 'l':
      memcpy(&v.i, (const uint8_t*)c->buffers[1] + 8 * j, 8);
      break;
    case 'i': {
      int32_t x;
      memcpy(&x, (const uint8_t*)c->buffers[1] + 4 * j, 4);
      v.i = x;
      break;
    }
    case 'c':
      v.i = ((const int8_t*)c->buffers[1])[j];
      break;
    case 'g':
      memcpy(&v.d, (const uint8_t*)c->buffers[1] + 8 * j, 8);
      break;
    case 'u': {
      const int32_t* offs = (const int32_t*)c->buffers[1];
      v.n = offs[j + 1] - offs[j];
      v.s = v.n ? (const char*)c->buffers[2] + offs[j] : "";
      break;
    }
  }
  return v;
}

int8_t out_kind(const struct ArrowArray* out, int64_t row) {
  const struct ArrowArray* c = out->children[out->n_children - 1];
  return ((const int8_t*)c->buffers[1])[c->offset + out->offset + row];
}

static void describe(char f, val v, char* buf, size_t n) {
  if (v.null) {
    snprintf(buf, n, "NULL");
    return;
  }
  switch (f) {
    case 'g':
      snprintf(buf, n, "%.17g", v.d);
      break;
    case 'u':
      snprintf(buf, n, "\"%.*s\"", (int)(v.n > 60 ? 60 : v.n), v.s);
      break;
    default:
      snprintf(buf, n, "%lld", (long long)v.i);
  }
}

static int same_val(char f, val a, val b) {
  if (a.null || b.null) return a.null == b.null;
  switch (f) {
    case 'g':
      return memcmp(&a.d, &b.d, 8) == 0 || (isnan(a.d) && isnan(b.d));
    case 'u':
      return a.n == b.n && memcmp(a.s, b.s, (size_t)a.n) == 0;
  }
  return a.i == b.i;
}

/* Structural checks of one output batch; returns 0 when its cells cannot be read safely. */
static int check_layout(const char* file, int line, const struct ArrowArray* out,
                        const char* fmts) {
  int64_t ncols = (int64_t)strlen(fmts);
  int ok = 1;
#define LAYOUT(cond, ...)                   \
  do {                                      \
    g_checks++;                             \
    if (!(cond)) {                          \
      check_fail(file, line, __VA_ARGS__);  \
      ok = 0;                               \
    }                                       \
  } while (0)
  LAYOUT(out->release != NULL, "output batch: release is NULL (no output), want a batch");
  if (!out->release) return 0;
  LAYOUT(out->n_children == ncols + 1, "output batch: n_children %lld, want %lld",
         (long long)out->n_children, (long long)ncols + 1);
  LAYOUT(out->n_buffers == 1 && out->buffers && out->buffers[0] == NULL,
         "output batch: struct must have one NULL validity buffer");
  LAYOUT(out->null_count == 0 && out->offset == 0 && out->dictionary == NULL,
         "output batch: struct null_count %lld offset %lld", (long long)out->null_count,
         (long long)out->offset);
  LAYOUT(out->children != NULL, "output batch: children is NULL");
  if (!ok) return 0;
  for (int64_t c = 0; c <= ncols; c++) {
    const struct ArrowArray* k = out->children[c];
    char f = c < ncols ? fmts[c] : 'c';
    LAYOUT(k && k->release, "output column %lld: NULL or released", (long long)c);
    if (!k || !k->release) return 0;
    int64_t want_bufs = f == 'u' ? 3 : 2;
    LAYOUT(k->n_buffers == want_bufs, "output column %lld: n_buffers %lld, want %lld",
           (long long)c, (long long)k->n_buffers, (long long)want_bufs);
    LAYOUT(k->n_children == 0 && k->dictionary == NULL, "output column %lld: has children",
           (long long)c);
    LAYOUT(k->length >= out->length + k->offset, "output column %lld: length %lld < %lld",
           (long long)c, (long long)k->length, (long long)out->length);
    if (k->n_buffers != want_bufs || k->length < out->length) return 0;
    LAYOUT(out->length == 0 || k->buffers[1] != NULL, "output column %lld: values buffer NULL",
           (long long)c);
    if (!k->buffers[1]) return 0;
    if (f == 'u') {
      /* The data buffer may be NULL only when it holds 0 bytes (Arrow C Data Interface). */
      const int32_t* offs = (const int32_t*)k->buffers[1];
      int32_t bytes = offs[k->offset + out->length] - offs[k->offset];
      LAYOUT(k->buffers[2] != NULL || bytes == 0, "output column %lld: data buffer NULL",
             (long long)c);
      if (!k->buffers[2] && bytes != 0) return 0;
    }
    if (c == ncols)
      LAYOUT(k->buffers[0] == NULL && k->null_count == 0, "RowKind column has a validity buffer");
    /* null_count must agree with the bitmap */
    LAYOUT(k->null_count == 0 || k->buffers[0] != NULL,
           "output column %lld: null_count %lld without validity buffer", (long long)c,
           (long long)k->null_count);
    if (k->buffers[0] && k->null_count > 0) {
      int64_t nulls = 0;
      for (int64_t r = 0; r < out->length; r++) nulls += out_null(k, r);
      LAYOUT(nulls == k->null_count, "output column %lld: null_count %lld, bitmap has %lld",
             (long long)c, (long long)k->null_count, (long long)nulls);
    }
    if (f == 'u') {
      const int32_t* offs = (const int32_t*)k->buffers[1];
      int mono = offs[k->offset] >= 0;
      for (int64_t r = 0; r < out->length; r++) mono &= offs[k->offset + r + 1] >= offs[k->offset + r];
      LAYOUT(mono, "output column %lld: VARCHAR offsets not monotonic", (long long)c);
      if (!mono) return 0;
    }
  }
#undef LAYOUT
  return ok;
}

void check_batch_at(const char* file, int line, const struct ArrowArray* out, const char* fmts,
                    int64_t rows, const int8_t* kinds, const val* vals) {
  int64_t ncols = (int64_t)strlen(fmts);
  if (!check_layout(file, line, out, fmts)) return;
  g_checks++;
  if (out->length != rows) {
    check_fail(file, line, "output batch: %lld rows, want %lld", (long long)out->length,
               (long long)rows);
    for (int64_t r = 0; r < out->length; r++) {
      fprintf(stderr, "    got row %lld: kind %d:", (long long)r, out_kind(out, r));
      for (int64_t c = 0; c < ncols; c++) {
        char buf[96];
        describe(fmts[c], out_cell(out, fmts, c, r), buf, sizeof buf);
        fprintf(stderr, " %s", buf);
      }
      fprintf(stderr, "\n");
    }
    return;
  }
  for (int64_t r = 0; r < rows; r++) {
    g_checks++;
    if (out_kind(out, r) != kinds[r])
      check_fail(file, line, "row %lld: RowKind %d, want %d", (long long)r, out_kind(out, r),
                 kinds[r]);
    for (int64_t c = 0; c < ncols; c++) {
      val want = vals[r * ncols + c];
      if (fmts[c] == 'u' && !want.null) want.n = (int64_t)strlen(want.s);
      val got = out_cell(out, fmts, c, r);
      g_checks++;
      if (!same_val(fmts[c], got, want)) {
        char g[96], w[96];
        describe(fmts[c], got, g, sizeof g);
        describe(fmts[c], want, w, sizeof w);
        check_fail(file, line, "row %lld column %lld: got %s, want %s", (long long)r,
                   (long long)c, g, w);
      }
    }
  }
}

void check_same_batch_at(const char* file, int line, const struct ArrowArray* a,
                         const struct ArrowArray* b, const char* fmts) {
  int64_t ncols = (int64_t)strlen(fmts);
  if (!check_layout(file, line, a, fmts) || !check_layout(file, line, b, fmts)) return;
  g_checks++;
  if (a->length != b->length) {
    check_fail(file, line, "batches differ in length: %lld vs %lld", (long long)a->length,
               (long long)b->length);
    return;
  }
  int64_t diffs = 0;
  for (int64_t r = 0; r < a->length; r++) {
    int same = out_kind(a, r) == out_kind(b, r);
    for (int64_t c = 0; c < ncols; c++)
      same &= same_val(fmts[c], out_cell(a, fmts, c, r), out_cell(b, fmts, c, r));
    if (!same && diffs++ < 5) check_fail(file, line, "batches differ at row %lld", (long long)r);
  }
  g_checks++;
  if (diffs) check_fail(file, line, "batches differ in %lld rows", (long long)diffs);
}

void release_output(struct ArrowArray* out) {
  if (!out->release) return;
  out->release(out);
  CHECK(out->release == NULL);
}
