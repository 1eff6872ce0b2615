/* cabi.h — C helpers of the capi package (not part of the public ABI). They own every piece of C
 * memory Ferry hands out, so releasing output never calls back into Go. */
#ifndef FERRY_CABI_H
#define FERRY_CABI_H

#include <stdint.h>
#include "ferry.h"

/* const-qualified aliases so cgo's generated prototypes match ferry.h exactly. */
typedef const char ferry_cchar;
typedef const uint8_t ferry_cuint8;
typedef struct ArrowSchema* const ferry_cschema; /* input_schemas of ferry_operator_open */
typedef struct ArrowArray* const ferry_carray;   /* batches of ferry_operator_process */
typedef const int32_t ferry_cint32;               /* runs of ferry_operator_process */

/* Zeroed memory for an output batch's buffers; NULL when out of memory. Counted in
 * ferry_outstanding until the batch is released (or ferry_slab_free on an error path). */
void* ferry_slab_alloc(int64_t n);
void ferry_slab_free(void* slab, int64_t n);

/* Fills the zero-initialised *out with a struct array of rows rows and ncols children. Child i
 * has nbufs[i] buffers taken from bufs[3*i .. 3*i+nbufs[i]) and null_counts[i] nulls. The array
 * takes ownership of slab (slab_bytes long). Returns 0, or -1 when out of memory (slab is then
 * freed). */
int ferry_export_batch(struct ArrowArray* out, void* slab, int64_t slab_bytes, int64_t rows,
                       int32_t ncols, const int64_t* null_counts, const int32_t* nbufs,
                       void* const* bufs);

/* Fills the zero-initialised *out with a "+s" schema of ncols children. Returns 0 or -1. */
int ferry_export_schema(struct ArrowSchema* out, int32_t ncols, const char* const* formats,
                        const char* const* names, const int64_t* flags);

/* Fills *out with a copy-ready blob of n bytes; returns its data or NULL when out of memory. */
uint8_t* ferry_blob_alloc(struct FerryBlob* out, int64_t n);

/* Sets *err to code and a copy of msg (len bytes). */
void ferry_error_set(struct FerryError* err, int32_t code, const char* msg, int64_t len);

/* Calls the release callback of a producer's array or schema, if set. */
void ferry_release_array(struct ArrowArray* a);
void ferry_release_schema(struct ArrowSchema* s);

int64_t ferry_outstanding_load(void);

#endif
