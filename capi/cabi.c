#include <stdlib.h>
#include <string.h>

#include "cabi.h"

static int64_t outstanding; /* bytes of batch, schema and blob memory handed out, not yet released */

int64_t ferry_outstanding_load(void) { return __atomic_load_n(&outstanding, __ATOMIC_RELAXED); }

static void account(int64_t delta) { __atomic_add_fetch(&outstanding, delta, __ATOMIC_RELAXED); }

void* ferry_slab_alloc(int64_t n) {
  void* p = calloc(1, n > 0 ? (size_t)n : 1);
  if (p) account(n);
  return p;
}

void ferry_slab_free(void* slab, int64_t n) {
  free(slab);
  account(-n);
}

/* One allocation holds the bookkeeping, the child structs and every pointer array of a batch or
 * schema. Every struct of the tree (root and children) holds one reference; the block and the
 * slab are freed when the last one is released, so a consumer may move children out and release
 * them in any order, from any thread. */
typedef struct {
  int64_t refs;
  void* slab;
  int64_t slab_bytes;
  int64_t block_bytes; /* the size of this allocation, also counted in ferry_outstanding */
} owner;

static void unref(owner* o) {
  if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    if (o->slab) ferry_slab_free(o->slab, o->slab_bytes);
    account(-o->block_bytes);
    free(o);
  }
}

static void release_child(struct ArrowArray* a) {
  owner* o = (owner*)a->private_data;
  a->release = NULL;
  unref(o);
}

static void release_root(struct ArrowArray* a) {
  for (int64_t i = 0; i < a->n_children; i++) {
    struct ArrowArray* c = a->children[i];
    if (c->release) c->release(c);
  }
  owner* o = (owner*)a->private_data;
  a->release = NULL;
  unref(o);
}

int ferry_export_batch(struct ArrowArray* out, void* slab, int64_t slab_bytes, int64_t rows,
                       int32_t ncols, const int64_t* null_counts, const int32_t* nbufs,
                       void* const* bufs) {
  size_t size = sizeof(owner) + (size_t)ncols * sizeof(struct ArrowArray) +
                (size_t)ncols * sizeof(struct ArrowArray*) + (1 + 3 * (size_t)ncols) * sizeof(void*);
  char* block = calloc(1, size);
  if (!block) {
    ferry_slab_free(slab, slab_bytes);
    return -1;
  }
  owner* o = (owner*)block;
  o->refs = 1 + ncols;
  o->slab = slab;
  o->slab_bytes = slab_bytes;
  o->block_bytes = (int64_t)size;
  account((int64_t)size);
  struct ArrowArray* kids = (struct ArrowArray*)(block + sizeof(owner));
  struct ArrowArray** kidp = (struct ArrowArray**)(kids + ncols);
  const void** ptrs = (const void**)(kidp + ncols);
  ptrs[0] = NULL; /* the struct itself has no validity buffer */
  for (int32_t i = 0; i < ncols; i++) {
    const void** b = ptrs + 1 + 3 * (size_t)i;
    for (int32_t k = 0; k < nbufs[i]; k++) b[k] = bufs[3 * (size_t)i + k];
    kids[i] = (struct ArrowArray){
        .length = rows, .null_count = null_counts[i], .offset = 0, .n_buffers = nbufs[i],
        .n_children = 0, .buffers = b, .children = NULL, .dictionary = NULL,
        .release = release_child, .private_data = o};
    kidp[i] = &kids[i];
  }
  *out = (struct ArrowArray){
      .length = rows, .null_count = 0, .offset = 0, .n_buffers = 1, .n_children = ncols,
      .buffers = ptrs, .children = kidp, .dictionary = NULL, .release = release_root,
      .private_data = o};
  return 0;
}

static void release_schema_child(struct ArrowSchema* s) {
  owner* o = (owner*)s->private_data;
  s->release = NULL;
  unref(o);
}

static void release_schema_root(struct ArrowSchema* s) {
  for (int64_t i = 0; i < s->n_children; i++) {
    struct ArrowSchema* c = s->children[i];
    if (c->release) c->release(c);
  }
  owner* o = (owner*)s->private_data;
  s->release = NULL;
  unref(o);
}

int ferry_export_schema(struct ArrowSchema* out, int32_t ncols, const char* const* formats,
                        const char* const* names, const int64_t* flags) {
  size_t strings = 3; /* "+s" */
  for (int32_t i = 0; i < ncols; i++) strings += strlen(formats[i]) + strlen(names[i]) + 2;
  size_t size = sizeof(owner) + (size_t)ncols * sizeof(struct ArrowSchema) +
                (size_t)ncols * sizeof(struct ArrowSchema*) + strings;
  char* block = calloc(1, size);
  if (!block) return -1;
  owner* o = (owner*)block;
  o->refs = 1 + ncols;
  o->block_bytes = (int64_t)size;
  account((int64_t)size);
  struct ArrowSchema* kids = (struct ArrowSchema*)(block + sizeof(owner));
  struct ArrowSchema** kidp = (struct ArrowSchema**)(kids + ncols);
  char* str = (char*)(kidp + ncols);
  char* root_format = str;
  memcpy(str, "+s", 3);
  str += 3;
  for (int32_t i = 0; i < ncols; i++) {
    size_t fl = strlen(formats[i]) + 1, nl = strlen(names[i]) + 1;
    char* f = str;
    memcpy(f, formats[i], fl);
    str += fl;
    char* n = str;
    memcpy(n, names[i], nl);
    str += nl;
    kids[i] = (struct ArrowSchema){
        .format = f, .name = n, .metadata = NULL, .flags = flags[i], .n_children = 0,
        .children = NULL, .dictionary = NULL, .release = release_schema_child, .private_data = o};
    kidp[i] = &kids[i];
  }
  *out = (struct ArrowSchema){
      .format = root_format, .name = "", .metadata = NULL, .flags = 0, .n_children = ncols,
      .children = kidp, .dictionary = NULL, .release = release_schema_root, .private_data = o};
  return 0;
}

static void release_blob(struct FerryBlob* b) {
  free(b->data);
  account(-b->length);
  b->data = NULL;
  b->length = 0;
  b->release = NULL;
}

uint8_t* ferry_blob_alloc(struct FerryBlob* out, int64_t n) {
  uint8_t* p = malloc(n > 0 ? (size_t)n : 1);
  if (!p) return NULL;
  account(n);
  out->data = p;
  out->length = n;
  out->release = release_blob;
  return p;
}

static void release_error(struct FerryError* err) {
  free(err->message);
  err->message = NULL;
  err->code = 0;
  err->release = NULL;
}

void ferry_error_set(struct FerryError* err, int32_t code, const char* msg, int64_t len) {
  if (!err) return;
  char* m = malloc((size_t)len + 1);
  if (m) {
    memcpy(m, msg, (size_t)len);
    m[len] = 0;
  }
  err->code = code;
  err->message = m;
  err->release = release_error;
}

void ferry_release_array(struct ArrowArray* a) {
  if (a && a->release) {
    a->release(a);
    a->release = NULL;
  }
}

void ferry_release_schema(struct ArrowSchema* s) {
  if (s && s->release) {
    s->release(s);
    s->release = NULL;
  }
}
