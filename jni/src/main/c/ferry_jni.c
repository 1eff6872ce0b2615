/*
 * ferry_jni.c — the JNI glue between io.ferrystream.ferry.nativelib.FerryNative and libferry.so.
 *
 * Go never sees JNI: every native method here calls one ferry_* function of include/ferry.h and
 * translates its result. For every call the glue
 *  - zero-initialises the FerryError and memsets every output struct (ArrowArray, ArrowSchema,
 *    FerryBlob) before the call (docs/architecture.md#output-structs-are-zeroed-before-a-call);
 *  - on a non-zero status throws FerryException(code, message) built from the native message,
 *    and always calls err.release.
 * Struct addresses come from arrow-java (ArrowArray/ArrowSchema.memoryAddress()); 0 means NULL.
 * The natives are bound with RegisterNatives in JNI_OnLoad, so the library exports only
 * JNI_OnLoad and a signature mismatch fails at load time rather than at the first call.
 */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry.h"

#define NATIVE_CLASS "io/ferrystream/ferry/nativelib/FerryNative"
#define EXCEPTION_CLASS "io/ferrystream/ferry/nativelib/FerryException"

static jclass g_exception_class;      /* global ref to FerryException */
static jmethodID g_exception_factory; /* static FerryException fromNative(int, byte[]) */

/* Throws FerryException(code, message); message is UTF-8 (not JNI's modified UTF-8, so it is
 * handed to Java as bytes and decoded there). Leaves any already pending exception alone. */
static void throw_ferry(JNIEnv* env, jint code, const char* message) {
  if ((*env)->ExceptionCheck(env)) return;
  size_t len = message ? strlen(message) : 0;
  jbyteArray bytes = (*env)->NewByteArray(env, (jsize)len);
  if (bytes == NULL) return; /* OutOfMemoryError pending */
  if (len > 0) (*env)->SetByteArrayRegion(env, bytes, 0, (jsize)len, (const jbyte*)message);
  jobject ex = (*env)->CallStaticObjectMethod(env, g_exception_class, g_exception_factory, code, bytes);
  (*env)->DeleteLocalRef(env, bytes);
  if (ex == NULL || (*env)->ExceptionCheck(env)) return;
  (*env)->Throw(env, (jthrowable)ex);
  (*env)->DeleteLocalRef(env, ex);
}

/* Converts a failed status into a pending FerryException and releases err. Returns 1 when the
 * status was an error. */
static int check(JNIEnv* env, int32_t status, struct FerryError* err) {
  if (status == FERRY_OK) {
    if (err->release != NULL) err->release(err); /* never expected, but never leak */
    return 0;
  }
  throw_ferry(env, status, err->message != NULL ? err->message : "ferry: error without a message");
  if (err->release != NULL) err->release(err);
  return 1;
}

/* Encodes a Java string as NUL-terminated standard UTF-8 (supplementary characters as 4 bytes,
 * unpaired surrogates as U+FFFD) into *out, which the caller frees. Throws nothing: on failure it
 * returns a FERRY_E* code and sets *why, so the caller can clean up (e.g. release an exported
 * Arrow struct, whose release callback calls into Java) before throwing. */
static int32_t utf8_of(JNIEnv* env, jstring s, char** out, const char** why) {
  *out = NULL;
  if (s == NULL) {
    *why = "ferry_jni: string argument must not be null";
    return FERRY_EINVAL;
  }
  jsize n = (*env)->GetStringLength(env, s);
  jchar* u = malloc((size_t)n * sizeof(jchar) + 1);
  char* buf = malloc((size_t)n * 3 + 1); /* a UTF-16 unit never needs more than 3 bytes */
  if (u == NULL || buf == NULL) {
    free(u);
    free(buf);
    *why = "ferry_jni: cannot allocate a string buffer";
    return FERRY_ENOMEM;
  }
  (*env)->GetStringRegion(env, s, 0, n, u);
  size_t k = 0;
  for (jsize i = 0; i < n; i++) {
    uint32_t c = u[i];
    if (c == 0) {
      free(u);
      free(buf);
      *why = "ferry_jni: string argument contains a NUL character";
      return FERRY_EINVAL;
    }
    if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n && u[i + 1] >= 0xDC00 && u[i + 1] <= 0xDFFF) {
      c = 0x10000 + ((c - 0xD800) << 10) + (u[i + 1] - 0xDC00);
      i++;
    } else if (c >= 0xD800 && c <= 0xDFFF) {
      c = 0xFFFD;
    }
    if (c < 0x80) {
      buf[k++] = (char)c;
    } else if (c < 0x800) {
      buf[k++] = (char)(0xC0 | (c >> 6));
      buf[k++] = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      buf[k++] = (char)(0xE0 | (c >> 12));
      buf[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
      buf[k++] = (char)(0x80 | (c & 0x3F));
    } else {
      buf[k++] = (char)(0xF0 | (c >> 18));
      buf[k++] = (char)(0x80 | ((c >> 12) & 0x3F));
      buf[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
      buf[k++] = (char)(0x80 | (c & 0x3F));
    }
  }
  buf[k] = '\0';
  free(u);
  *out = buf;
  return FERRY_OK;
}

static inline void* ptr_of(jlong addr) { return (void*)(intptr_t)addr; }

/* ---- natives of FerryNative ---- */

static jint n_abi_version(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  return ferry_abi_version();
}

static jstring n_version(JNIEnv* env, jclass cls) {
  (void)cls;
  return (*env)->NewStringUTF(env, ferry_version()); /* static ASCII */
}

static void n_init(JNIEnv* env, jclass cls, jstring options) {
  (void)cls;
  char* json;
  const char* why;
  int32_t rc = utf8_of(env, options, &json, &why);
  if (rc != FERRY_OK) {
    throw_ferry(env, rc, why);
    return;
  }
  struct FerryError err = {0};
  int32_t st = ferry_init(json, &err);
  free(json);
  check(env, st, &err);
}

/* Releases the schemas ferry_operator_open was not called with (it consumes them itself). */
static void release_schemas(struct ArrowSchema** schemas, jsize n) {
  for (jsize i = 0; i < n; i++) {
    if (schemas[i] != NULL && schemas[i]->release != NULL) schemas[i]->release(schemas[i]);
  }
}

/* Zeroes and frees a UTF-8 copy of secrets (NULL: none). */
static void free_secret(char* s) {
  if (s == NULL) return;
  volatile char* p = s;
  while (*p) *p++ = 0;
  free(s);
}

/* secrets: null, or the secrets JSON of a function kind; its UTF-8 copy is zeroed before it is
 * freed. schema_addrs: one ArrowSchema address per input (0: no check of that input), or null. */
static jlong n_open(JNIEnv* env, jclass cls, jstring spec, jstring secrets, jlongArray schema_addrs) {
  (void)cls;
  jsize n = schema_addrs != NULL ? (*env)->GetArrayLength(env, schema_addrs) : 0;
  struct ArrowSchema** schemas = NULL;
  if (n > 0) {
    jlong addrs[64];
    if (n > 64) {
      throw_ferry(env, FERRY_EINVAL, "ferry_jni: more than 64 input schemas");
      return 0;
    }
    (*env)->GetLongArrayRegion(env, schema_addrs, 0, n, addrs);
    schemas = malloc((size_t)n * sizeof *schemas);
    if (schemas == NULL) {
      throw_ferry(env, FERRY_ENOMEM, "ferry_jni: cannot allocate the schema list");
      return 0;
    }
    for (jsize i = 0; i < n; i++) schemas[i] = ptr_of(addrs[i]);
  }
  char* json = NULL;
  char* secret = NULL;
  const char* why;
  int32_t rc = utf8_of(env, spec, &json, &why);
  if (rc == FERRY_OK && secrets != NULL) rc = utf8_of(env, secrets, &secret, &why);
  if (rc != FERRY_OK) {
    free(json);
    /* The ABI consumes the schemas on every path; keep that promise when we never got there.
     * Release first: arrow-java's release callback calls into Java, which must not happen with
     * an exception pending. */
    release_schemas(schemas, n);
    free(schemas);
    throw_ferry(env, rc, why);
    return 0;
  }
  struct FerryError err = {0};
  FerryHandle h = 0;
  int32_t st = ferry_operator_open(json, secret, (int32_t)n, schemas, &h, &err);
  free(json);
  free_secret(secret);
  free(schemas);
  if (check(env, st, &err)) return 0;
  return (jlong)h;
}

static void n_output_schema(JNIEnv* env, jclass cls, jlong h, jlong schema_addr) {
  (void)cls;
  struct ArrowSchema* out = ptr_of(schema_addr);
  if (out != NULL) memset(out, 0, sizeof *out);
  struct FerryError err = {0};
  check(env, ferry_operator_output_schema((FerryHandle)h, out, &err), &err);
}

/* Flags the output natives return (FerryNative.FILLED, FerryNative.MORE). */
enum { OUT_FILLED = 1, OUT_MORE = 2 };

/* The flags of an output call that returned status st into *out with *more. */
static jint output_flags(JNIEnv* env, int32_t st, struct FerryError* err, const struct ArrowArray* out,
                         int32_t more) {
  if (check(env, st, err)) return 0;
  return (out != NULL && out->release != NULL ? OUT_FILLED : 0) | (more ? OUT_MORE : 0);
}

/* ferry_operator_process of one batch, of input `input`: the batches of inputs 0 .. input, NULL
 * but the last. */
static jint n_process(JNIEnv* env, jclass cls, jlong h, jint input, jlong in_addr, jlong now_ms,
                      jlong out_addr) {
  (void)cls;
  struct ArrowArray* out = ptr_of(out_addr);
  if (out != NULL) memset(out, 0, sizeof *out);
  if (input < 0 || input >= 64) {
    throw_ferry(env, FERRY_EINVAL, "ferry_jni: process: input outside 0..63");
    return 0;
  }
  struct ArrowArray* batches[64] = {NULL};
  batches[input] = ptr_of(in_addr);
  struct FerryError err = {0};
  int32_t more = 0;
  int32_t st = ferry_operator_process((FerryHandle)h, (int32_t)input + 1, batches, 0, NULL,
                                      (int64_t)now_ms, out, &more, &err);
  return output_flags(env, st, &err, out, more);
}

/* ferry_operator_process with runs: in_addrs holds one ArrowArray address per input (0: no
 * rows), runs[0 .. 2*n_runs) the (input, rows) pairs. Every batch is consumed by the library;
 * when this glue fails before the call, NativeOperator releases what is left. */
static jint n_process_runs(JNIEnv* env, jclass cls, jlong h, jlongArray in_addrs, jintArray runs, jint n_runs,
                           jlong now_ms, jlong out_addr) {
  (void)cls;
  struct ArrowArray* out = ptr_of(out_addr);
  if (out != NULL) memset(out, 0, sizeof *out);
  if (in_addrs == NULL || runs == NULL) {
    throw_ferry(env, FERRY_EINVAL, "ferry_jni: process needs the batch addresses and the runs");
    return 0;
  }
  jsize n = (*env)->GetArrayLength(env, in_addrs);
  if (n < 1 || n > 64) {
    throw_ferry(env, FERRY_EINVAL, "ferry_jni: process takes 1 to 64 inputs");
    return 0;
  }
  if (n_runs < 0 || (jlong)n_runs * 2 > (jlong)(*env)->GetArrayLength(env, runs)) {
    throw_ferry(env, FERRY_EINVAL, "ferry_jni: process: n_runs is negative or exceeds the run array");
    return 0;
  }
  jlong addrs[64];
  struct ArrowArray* batches[64];
  (*env)->GetLongArrayRegion(env, in_addrs, 0, n, addrs);
  for (jsize i = 0; i < n; i++) batches[i] = ptr_of(addrs[i]);
  /* Not the critical variant: the call may take a while and must not stall the GC. */
  jint* pairs = (*env)->GetIntArrayElements(env, runs, NULL);
  if (pairs == NULL) return 0; /* OutOfMemoryError pending */
  struct FerryError err = {0};
  int32_t more = 0;
  int32_t st = ferry_operator_process((FerryHandle)h, (int32_t)n, batches, (int32_t)n_runs,
                                      (const int32_t*)pairs, (int64_t)now_ms, out, &more, &err);
  (*env)->ReleaseIntArrayElements(env, runs, pairs, JNI_ABORT);
  return output_flags(env, st, &err, out, more);
}

static jint n_advance(JNIEnv* env, jclass cls, jlong h, jlong wm, jlong now_ms, jlong out_addr) {
  (void)cls;
  struct ArrowArray* out = ptr_of(out_addr);
  if (out != NULL) memset(out, 0, sizeof *out);
  struct FerryError err = {0};
  int32_t more = 0;
  int32_t st = ferry_operator_advance((FerryHandle)h, (int64_t)wm, (int64_t)now_ms, out, &more, &err);
  return output_flags(env, st, &err, out, more);
}

static jint n_flush(JNIEnv* env, jclass cls, jlong h, jlong now_ms, jlong out_addr) {
  (void)cls;
  struct ArrowArray* out = ptr_of(out_addr);
  if (out != NULL) memset(out, 0, sizeof *out);
  struct FerryError err = {0};
  int32_t more = 0;
  int32_t st = ferry_operator_flush((FerryHandle)h, (int64_t)now_ms, out, &more, &err);
  return output_flags(env, st, &err, out, more);
}

static jint n_next(JNIEnv* env, jclass cls, jlong h, jlong out_addr) {
  (void)cls;
  struct ArrowArray* out = ptr_of(out_addr);
  if (out != NULL) memset(out, 0, sizeof *out);
  struct FerryError err = {0};
  int32_t more = 0;
  int32_t st = ferry_operator_next((FerryHandle)h, out, &more, &err);
  return output_flags(env, st, &err, out, more);
}

/* A state chunk as a Java byte[] (NULL when the blob is empty): ferry_operator_snapshot, or
 * ferry_operator_snapshot_view of view when view is not 0. */
static jbyteArray snapshot_chunk(JNIEnv* env, jlong h, jlong view, jint key_group) {
  struct FerryBlob blob;
  memset(&blob, 0, sizeof blob);
  struct FerryError err = {0};
  int32_t st = view != 0 ? ferry_operator_snapshot_view((FerryHandle)h, (int64_t)view, (int32_t)key_group, &blob, &err)
                         : ferry_operator_snapshot((FerryHandle)h, (int32_t)key_group, &blob, &err);
  if (check(env, st, &err)) {
    if (blob.release != NULL) blob.release(&blob);
    return NULL;
  }
  jbyteArray result = NULL;
  if (blob.length > (int64_t)INT32_MAX - 8) {
    throw_ferry(env, FERRY_ENOMEM, "ferry_operator_snapshot: state blob larger than a Java byte[]");
  } else if (blob.data != NULL && blob.length > 0) {
    result = (*env)->NewByteArray(env, (jsize)blob.length);
    if (result != NULL) {
      (*env)->SetByteArrayRegion(env, result, 0, (jsize)blob.length, (const jbyte*)blob.data);
    }
  }
  if (blob.release != NULL) blob.release(&blob);
  return result; /* NULL: empty key group (or an exception is pending) */
}

static jbyteArray n_snapshot(JNIEnv* env, jclass cls, jlong h, jint key_group) {
  (void)cls;
  return snapshot_chunk(env, h, 0, key_group);
}

static jlong n_freeze(JNIEnv* env, jclass cls, jlong h) {
  (void)cls;
  struct FerryError err = {0};
  int64_t view = 0;
  if (check(env, ferry_operator_freeze((FerryHandle)h, &view, &err), &err)) return 0;
  return (jlong)view;
}

static jbyteArray n_snapshot_view(JNIEnv* env, jclass cls, jlong h, jlong view, jint key_group) {
  (void)cls;
  return snapshot_chunk(env, h, view, key_group);
}

static void n_release_view(JNIEnv* env, jclass cls, jlong h, jlong view) {
  (void)cls;
  struct FerryError err = {0};
  check(env, ferry_operator_release_view((FerryHandle)h, (int64_t)view, &err), &err);
}

static void n_restore(JNIEnv* env, jclass cls, jlong h, jint key_group, jbyteArray blob) {
  (void)cls;
  jbyte* data = NULL;
  jsize len = 0;
  if (blob != NULL) {
    len = (*env)->GetArrayLength(env, blob);
    /* Not the critical variant: decoding may take a while and must not stall the GC. */
    data = (*env)->GetByteArrayElements(env, blob, NULL);
    if (data == NULL) return; /* OutOfMemoryError pending */
  }
  struct FerryError err = {0};
  int32_t st = ferry_operator_restore((FerryHandle)h, (int32_t)key_group, (const uint8_t*)data, (int64_t)len, &err);
  if (data != NULL) (*env)->ReleaseByteArrayElements(env, blob, data, JNI_ABORT);
  check(env, st, &err);
}

static jint n_export(JNIEnv* env, jclass cls, jlong h, jlong out_addr) {
  (void)cls;
  struct ArrowArray* out = ptr_of(out_addr);
  if (out != NULL) memset(out, 0, sizeof *out);
  struct FerryError err = {0};
  int32_t more = 0;
  int32_t st = ferry_operator_export((FerryHandle)h, out, &more, &err);
  return output_flags(env, st, &err, out, more);
}

/* ferry_operator_import: the ArrowSchema and ArrowArray at the two addresses (exported by
 * arrow-java) are consumed by the library. */
static void n_import(JNIEnv* env, jclass cls, jlong h, jlong schema_addr, jlong array_addr) {
  (void)cls;
  struct FerryError err = {0};
  check(env, ferry_operator_import((FerryHandle)h, (struct ArrowSchema*)(intptr_t)schema_addr,
                                   ptr_of(array_addr), &err), &err);
}

/* Fills out[0] = keys, out[1] = state_bytes, out[2] = next_timer_ms. */
static void n_stats(JNIEnv* env, jclass cls, jlong h, jlongArray out) {
  (void)cls;
  if (out == NULL || (*env)->GetArrayLength(env, out) < 3) {
    throw_ferry(env, FERRY_EINVAL, "ferry_jni: stats needs a long[3]");
    return;
  }
  struct FerryOperatorStats st;
  memset(&st, 0, sizeof st);
  struct FerryError err = {0};
  if (check(env, ferry_operator_stats((FerryHandle)h, &st, &err), &err)) return;
  jlong v[3] = {(jlong)st.keys, (jlong)st.state_bytes, (jlong)st.next_timer_ms};
  (*env)->SetLongArrayRegion(env, out, 0, 3, v);
}

static void n_close(JNIEnv* env, jclass cls, jlong h) {
  (void)cls;
  struct FerryError err = {0};
  check(env, ferry_operator_close((FerryHandle)h, &err), &err);
}

/* The release callback of the input batches NativeOperator exports itself (InputExport): the
 * struct tree is Java's, allocated once and refilled every call, and the buffers are the Java
 * vectors', owned by Java throughout. Releasing only marks the struct and its children released
 * (release = NULL), which is what NativeOperator checks after every call. */
static void release_java_input(struct ArrowArray* a) {
  for (int64_t i = 0; i < a->n_children; i++) {
    if (a->children[i] != NULL) a->children[i]->release = NULL;
  }
  a->release = NULL;
}

static jlong n_input_release(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  return (jlong)(intptr_t)&release_java_input;
}

/* Calls the release callback of the ArrowArray at addr, if it is set (an output chunk of
 * libferry.so that NativeOperator moved out of its output struct). */
static void n_release_array(JNIEnv* env, jclass cls, jlong addr) {
  (void)env;
  (void)cls;
  struct ArrowArray* a = ptr_of(addr);
  if (a != NULL && a->release != NULL) a->release(a);
}

static jlong n_outstanding_bytes(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  return (jlong)ferry_output_bytes_outstanding();
}

/* Fills out[0..3) with ferry_runtime_memory's in_use_bytes, heap_live_bytes and limit_bytes. */
static void n_runtime_memory(JNIEnv* env, jclass cls, jlongArray out) {
  (void)cls;
  struct FerryRuntimeMemory m;
  ferry_runtime_memory(&m);
  jlong v[3] = {(jlong)m.in_use_bytes, (jlong)m.heap_live_bytes, (jlong)m.limit_bytes};
  (*env)->SetLongArrayRegion(env, out, 0, 3, v);
}

static const JNINativeMethod g_methods[] = {
    {"abiVersion", "()I", (void*)n_abi_version},
    {"version", "()Ljava/lang/String;", (void*)n_version},
    {"init", "(Ljava/lang/String;)V", (void*)n_init},
    {"open", "(Ljava/lang/String;Ljava/lang/String;[J)J", (void*)n_open},
    {"outputSchema", "(JJ)V", (void*)n_output_schema},
    {"process", "(JIJJJ)I", (void*)n_process},
    {"processRuns", "(J[J[IIJJ)I", (void*)n_process_runs},
    {"advance", "(JJJJ)I", (void*)n_advance},
    {"flush", "(JJJ)I", (void*)n_flush},
    {"next", "(JJ)I", (void*)n_next},
    {"snapshot", "(JI)[B", (void*)n_snapshot},
    {"freeze", "(J)J", (void*)n_freeze},
    {"snapshotView", "(JJI)[B", (void*)n_snapshot_view},
    {"releaseView", "(JJ)V", (void*)n_release_view},
    {"restore", "(JI[B)V", (void*)n_restore},
    {"importState", "(JJJ)V", (void*)n_import},
    {"exportState", "(JJ)I", (void*)n_export},
    {"stats", "(J[J)V", (void*)n_stats},
    {"close", "(J)V", (void*)n_close},
    {"outstandingBytes", "()J", (void*)n_outstanding_bytes},
    {"runtimeMemory", "([J)V", (void*)n_runtime_memory},
    {"inputRelease", "()J", (void*)n_input_release},
    {"releaseArray", "(J)V", (void*)n_release_array},
};

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  (void)reserved;
  JNIEnv* env;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  /* FindClass in JNI_OnLoad resolves through the class loader that called System.load. */
  jclass ex = (*env)->FindClass(env, EXCEPTION_CLASS);
  if (ex == NULL) return JNI_ERR;
  g_exception_factory = (*env)->GetStaticMethodID(env, ex, "fromNative", "(I[B)L" EXCEPTION_CLASS ";");
  if (g_exception_factory == NULL) return JNI_ERR;
  g_exception_class = (*env)->NewGlobalRef(env, ex);
  (*env)->DeleteLocalRef(env, ex);
  if (g_exception_class == NULL) return JNI_ERR;
  jclass nat = (*env)->FindClass(env, NATIVE_CLASS);
  if (nat == NULL) return JNI_ERR;
  jint rc = (*env)->RegisterNatives(env, nat, g_methods, (jint)(sizeof g_methods / sizeof g_methods[0]));
  (*env)->DeleteLocalRef(env, nat);
  return rc == 0 ? JNI_VERSION_1_8 : JNI_ERR;
}
