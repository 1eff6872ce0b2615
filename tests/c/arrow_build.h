/* arrow_build.h — Arrow C Data structs built by hand in malloc'd memory, and readers/checkers for
 * Ferry's output batches.
 *
 * A batch is a struct array ("+s") whose children are the columns described by a format string
 * (one character per column) followed by the non-null int8 RowKind column:
 *   'l' BIGINT (int64), 'i' INT (int32), 'g' DOUBLE, 'u' VARCHAR (utf8), 'c' TINYINT (int8).
 * Values are given row-major as `val`s. Columns with a NULL get a validity bitmap whose unused
 * bits are 1 and whose value slots under NULLs hold garbage (0xA5 bytes, "GARBAGE" for strings).
 *
 * Every struct (root and children) has a real release callback that frees its memory. Releases
 * of a root are counted per batch id, so a test can assert that Ferry released an input exactly
 * once. Tests may corrupt any field of a built array: release frees what was allocated, not what
 * the fields say. */
#ifndef FERRY_ARROW_BUILD_H
#define FERRY_ARROW_BUILD_H

#include <stdint.h>

#include "ferry.h"

typedef struct {
  int null;
  int64_t i;
  double d;
  const char* s; /* VARCHAR: NUL-terminated on input; n bytes when read from an output */
  int64_t n;
} val;

#define VI(x) ((val){.null = 0, .i = (x)})
#define VD(x) ((val){.null = 0, .d = (x)})
#define VS(x) ((val){.null = 0, .s = (x)})
#define VN ((val){.null = 1})

enum { KI = 0, KUB = 1, KUA = 2, KD = 3 }; /* RowKind bytes: +I -U +U -D */

/* Builder options (reset by ab_reset_options). */
extern int ab_opt_unknown_null_count; /* null_count -1 on columns with a validity bitmap */
extern int ab_opt_always_bitmap;      /* a validity bitmap even on columns without NULLs */
void ab_reset_options(void);

/* Fills *out with a batch of rows rows; returns its id. kinds has one RowKind byte per row. */
int64_t ab_batch(struct ArrowArray* out, const char* fmts, int64_t rows, const int8_t* kinds,
                 const val* vals);

/* Writable views of a built array's buffers, for tests that corrupt a batch. */
void* ab_buf(struct ArrowArray* a, int64_t child, int buf);

/* Times the release callback of batch id ran (exactly 1 once consumed). */
int ab_releases(int64_t id);
int64_t ab_batches_made(void);
/* Number of batches whose root release ran a number of times other than 1. */
int64_t ab_batches_not_released_once(void);

/* Fills *out with a "+s" schema with n children of the given formats and names; returns its id. */
int64_t ab_schema(struct ArrowSchema* out, int n, const char* const* formats,
                  const char* const* names);
int ab_schema_releases(int64_t id);
int64_t ab_schemas_made(void);
int64_t ab_schemas_not_released_once(void);

/* Frees bookkeeping kept for double-release detection (at exit). */
void ab_cleanup(void);

/* ---- Output batches ---- */

/* Checks *out against the expected rows: release set, struct layout, length, n_children (fmts +
 * RowKind), each child's buffers, null counts and null flags, every value and RowKind byte. */
#define CHECK_BATCH(out, fmts, rows, kinds, vals) \
  check_batch_at(__FILE__, __LINE__, (out), (fmts), (rows), (kinds), (vals))
void check_batch_at(const char* file, int line, const struct ArrowArray* out, const char* fmts,
                    int64_t rows, const int8_t* kinds, const val* vals);

/* Checks that two output batches with columns fmts hold identical rows. */
#define CHECK_SAME_BATCH(a, b, fmts) check_same_batch_at(__FILE__, __LINE__, (a), (b), (fmts))
void check_same_batch_at(const char* file, int line, const struct ArrowArray* a,
                         const struct ArrowArray* b, const char* fmts);

/* Reads cell (row, col) of an output batch whose column formats are fmts. */
val out_cell(const struct ArrowArray* out, const char* fmts, int64_t col, int64_t row);
int8_t out_kind(const struct ArrowArray* out, int64_t row);

/* Releases an output batch if set, checking release clears the callback. */
void release_output(struct ArrowArray* out);

#endif
