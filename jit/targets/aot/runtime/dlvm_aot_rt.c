/* dlvm AOT runtime: values, entry checks, compiled regions, products, convolutions, pooling,
 * movement ops and a small thread pool. Compiled into every library `dlvm aot` builds, with
 * the library's generated configuration (dlvm_aot_config.h: the GEMM kernel's tile).
 *
 * Needs only the C library, libm and pthreads.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE                 /* sched_getaffinity, CPU_COUNT: the CPUs this process may use */
#endif
#ifdef __linux__
#include <sched.h>
#endif
#include "dlvm_aot_rt.h"
#include "dlvm_aot_config.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

#define HIDDEN __attribute__((visibility("hidden")))

/* ---- buffers -----------------------------------------------------------------------------
 * A call allocates a buffer per intermediate value and frees it when the value dies; the same
 * sizes come back every step of a loop and every call. Each thread keeps freed buffers per
 * power-of-two size class (up to 128 a class: MiniLM holds some 50 small values of one class
 * at once, and 8 a class made it allocate 44 buffers a call; at most 256 MB per thread, 512 MB
 * per process) and hands them out again, so a steady-state call reaches malloc only for the
 * results it hands back (dlvm_rt_allocation_counts shows it): a large buffer is not mapped and
 * faulted in afresh on every call (at batch 32, page faults took a third of MobileNet's time).
 * A thread's buffers are freed when it exits. Buffers are 64-byte aligned and a whole class in size, so any thread may free
 * any buffer with free() (the caller frees results that way). */
#define CACHE_CLASSES 27            /* 64 B .. 4 GB (64 B << 26) */
#define CACHE_PER_CLASS 128
#define CACHE_BYTES ((size_t)256 << 20)
#define PROCESS_CACHE_BYTES ((int64_t)512 << 20)   /* all threads together */

static int64_t cached_total;        /* bytes cached by every thread (atomic) */

/* Calls into the system allocator for values, value headers and per-call scratch (cache
 * misses), and results handed to the caller (their buffers leave the cache for good): in a
 * steady state the first equals the second, so compiled code allocates nothing of its own.
 * Read by {name}_allocation_counts (dlvmrt.aot.Library.allocation_counts). */
static int64_t system_allocations, results_handed_over;

HIDDEN void dlvm_rt_allocation_counts(int64_t *out) {
    out[0] = __atomic_load_n(&system_allocations, __ATOMIC_RELAXED);
    out[1] = __atomic_load_n(&results_handed_over, __ATOMIC_RELAXED);
}

/* a result copied into a fresh malloc for the caller (a system allocation too) */
HIDDEN void dlvm_rt_note_result(void) {
    __atomic_add_fetch(&results_handed_over, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&system_allocations, 1, __ATOMIC_RELAXED);
}

static void header_free(dlvm_rt_buf *b);

/* The data of result v, whose buffer only v holds from its start: the caller takes the buffer
 * over (and frees it with free()); its header goes back to the cache. */
HIDDEN void *dlvm_rt_take_buffer(dlvm_val *v) {
    void *data = v->buf->data;
    header_free(v->buf);
    v->buf = NULL;
    __atomic_add_fetch(&results_handed_over, 1, __ATOMIC_RELAXED);
    return data;
}

#define CACHE_HEADERS 1024           /* value headers (dlvm_rt_buf) kept per thread */

typedef struct {
    void *items[CACHE_CLASSES][CACHE_PER_CLASS];
    int count[CACHE_CLASSES];
    size_t bytes;
    void *headers[CACHE_HEADERS];   /* every value has one: malloc for each was a tenth of a */
    int n_headers;                  /* recurrent model's time at batch 1 */
} buffer_cache;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_destroy(void *p) {
    buffer_cache *c = p;
    for (int k = 0; k < CACHE_CLASSES; k++)
        for (int i = 0; i < c->count[k]; i++) free(c->items[k][i]);
    for (int i = 0; i < c->n_headers; i++) free(c->headers[i]);
    __atomic_sub_fetch(&cached_total, (int64_t)c->bytes, __ATOMIC_RELAXED);
    free(c);
}

static void cache_init(void) {
    pthread_key_create(&cache_key, cache_destroy);
}

static buffer_cache *thread_cache(void) {
    pthread_once(&cache_once, cache_init);
    buffer_cache *c = pthread_getspecific(cache_key);
    if (!c) {
        c = calloc(1, sizeof *c);
        if (c && pthread_setspecific(cache_key, c)) {
            free(c);
            c = NULL;
        }
    }
    return c;
}

static int size_class(size_t bytes) {
    int k = 0;
    size_t size = 64;
    while (size < bytes) {
        size <<= 1;
        k++;
    }
    return k;
}

/* a buffer of at least *bytes (a multiple of 64); *bytes becomes its real size */
static void *buffer_alloc(size_t *bytes) {
    int k = size_class(*bytes);
    if (k < CACHE_CLASSES) {
        *bytes = (size_t)64 << k;
        buffer_cache *c = thread_cache();
        if (c && c->count[k] > 0) {
            c->bytes -= *bytes;
            __atomic_sub_fetch(&cached_total, (int64_t)*bytes, __ATOMIC_RELAXED);
            return c->items[k][--c->count[k]];
        }
    }
    __atomic_add_fetch(&system_allocations, 1, __ATOMIC_RELAXED);
    return aligned_alloc(64, *bytes);
}

static void buffer_free(void *data, size_t bytes) {
    int k = size_class(bytes);
    if (k < CACHE_CLASSES && ((size_t)64 << k) == bytes) {
        buffer_cache *c = thread_cache();
        if (c && c->count[k] < CACHE_PER_CLASS && c->bytes + bytes <= CACHE_BYTES) {
            if (__atomic_add_fetch(&cached_total, (int64_t)bytes, __ATOMIC_RELAXED) <= PROCESS_CACHE_BYTES) {
                c->items[k][c->count[k]++] = data;
                c->bytes += bytes;
                return;
            }
            __atomic_sub_fetch(&cached_total, (int64_t)bytes, __ATOMIC_RELAXED);   /* over the cap */
        }
    }
    free(data);
}

static dlvm_rt_buf *header_alloc(void) {
    buffer_cache *c = thread_cache();
    if (c && c->n_headers > 0) return c->headers[--c->n_headers];
    __atomic_add_fetch(&system_allocations, 1, __ATOMIC_RELAXED);
    return malloc(sizeof(dlvm_rt_buf));
}

/* (any thread may free a header: they are plain malloc blocks, whichever list they are on) */
static void header_free(dlvm_rt_buf *b) {
    buffer_cache *c = thread_cache();
    if (c && c->n_headers < CACHE_HEADERS) {
        c->headers[c->n_headers++] = b;
        return;
    }
    free(b);
}

/* ---- values ----------------------------------------------------------------------------- */

HIDDEN size_t dlvm_rt_itemsize(int32_t dtype) {
    switch (dtype) {
    case DT_BOOL: case DT_I8: case DT_U8: return 1;
    case DT_I16: case DT_U16: case DT_F16: return 2;
    case DT_I32: case DT_U32: case DT_F32: return 4;
    default: return 8;
    }
}

HIDDEN int dlvm_rt_fail(dlvm_ctx *ctx, int32_t code, const char *fmt, ...) {
    if (ctx->status->code == DLVM_RT_OK) {      /* the first failure is the one reported */
        char msg[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        ctx->status->code = code;
        if (ctx->where)
            snprintf(ctx->status->message, sizeof ctx->status->message, "%s: %s", ctx->where, msg);
        else
            snprintf(ctx->status->message, sizeof ctx->status->message, "%s", msg);
    }
    return code;
}

HIDDEN int64_t dlvm_rt_numel(const dlvm_val *v) {
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= v->shape[i];
    return n;
}

static int64_t numel_of(int32_t rank, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

HIDDEN void dlvm_rt_release(dlvm_val *v) {
    if (v->buf && --v->buf->refs == 0) {
        buffer_free(v->buf->data, v->buf->bytes);
        header_free(v->buf);
    }
    v->buf = NULL;
    v->data = NULL;
}

HIDDEN void dlvm_rt_assign(dlvm_val *dst, const dlvm_val *src) {
    if (dst == src) return;
    if (src->buf) src->buf->refs++;
    dlvm_rt_release(dst);
    *dst = *src;
}

/* a new tensor whose buffer has room for `room` more bytes after its data (an appendable
 * concat result) */
static int alloc_with_room(dlvm_ctx *ctx, dlvm_val *v, int32_t dtype, int32_t rank,
                           const int64_t *shape, size_t room);

/* Instructions the library has no code for, in a library the VM's native tier builds
 * (dlvmrt/native_tier.py): the VM that loaded it registers one function that runs such an
 * instruction by its index in the library's table (the op's reference on copies of the operands)
 * and makes its results with dlvm_rt_vm_result. Without one (a library loaded elsewhere) such an
 * instruction fails the call with a guard, and the caller runs it on the VM. */
static dlvm_rt_vm_fn vm_fn;

HIDDEN void dlvm_rt_set_vm(dlvm_rt_vm_fn fn) { __atomic_store_n(&vm_fn, fn, __ATOMIC_RELEASE); }

HIDDEN int dlvm_rt_vm_instruction(dlvm_ctx *ctx, int32_t index, const dlvm_val *const *ins,
                                  int32_t n_in, dlvm_val *outs, int32_t n_out) {
    dlvm_rt_vm_fn fn = __atomic_load_n(&vm_fn, __ATOMIC_ACQUIRE);
    if (!fn)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "%s runs on the VM, and no VM is attached",
                            ctx->where ? ctx->where : "an instruction");
    char message[400] = "";
    if (fn(index, ins, n_in, outs, n_out, message, (int32_t)sizeof message))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "%s (on the VM): %s",
                            ctx->where ? ctx->where : "an instruction", message);
    return 0;
}

/* a result of the VM's function: a fresh value of `dtype` and `shape` (0, or 1 out of memory) */
HIDDEN int dlvm_rt_vm_result(dlvm_val *v, int32_t dtype, int32_t rank, const int64_t *shape) {
    dlvm_rt_status status = {0, {0}};
    dlvm_ctx ctx = {&status, 0, 0, "a VM result"};
    return dlvm_rt_alloc(&ctx, v, dtype, rank, shape);
}

/* The most bytes one tensor may take: $DLVM_MEMORY_LIMIT (with a K/M/G/T suffix) when set, else
 * RAM + swap, at most the cgroup's limit (as dlvmrt/memory_ceiling.py). Where the kernel
 * overcommits memory without limit, a larger malloc succeeds and the process is killed at the
 * first write; checked here, it is an "out of memory" error instead. */
static int64_t parse_bytes(const char *text) {
    char *end;
    long long n = strtoll(text, &end, 10);
    if (end == text || n <= 0) return 0;
    switch (*end) {
    case 'k': case 'K': return (int64_t)n << 10;
    case 'm': case 'M': return (int64_t)n << 20;
    case 'g': case 'G': return (int64_t)n << 30;
    case 't': case 'T': return (int64_t)n << 40;
    default: return (int64_t)n;
    }
}

static int64_t machine_bytes(void) {
    static int64_t cached;          /* computed once; racing threads compute the same value */
    int64_t total = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (total) return total;
    const char *env = getenv("DLVM_MEMORY_LIMIT");
    total = env ? parse_bytes(env) : 0;
    if (!total) {
        long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
        if (pages > 0 && size > 0) total = (int64_t)pages * size;
        FILE *f = fopen("/proc/meminfo", "r");
        char line[128];
        long long kb;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "SwapTotal: %lld", &kb) == 1) total += (int64_t)kb * 1024;
        if (f) fclose(f);
        const char *cgroups[] = {"/sys/fs/cgroup/memory.max",
                                 "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
        for (int i = 0; i < 2; i++) {
            FILE *g = fopen(cgroups[i], "r");
            long long limit;
            if (g && fscanf(g, "%lld", &limit) == 1 && limit > 0 && (!total || limit < total))
                total = limit;
            if (g) fclose(g);
        }
        if (!total) total = (int64_t)1 << 62;
    }
    __atomic_store_n(&cached, total, __ATOMIC_RELAXED);
    return total;
}

HIDDEN int dlvm_rt_alloc(dlvm_ctx *ctx, dlvm_val *v, int32_t dtype, int32_t rank,
                         const int64_t *shape) {
    return alloc_with_room(ctx, v, dtype, rank, shape, 0);
}

static int alloc_with_room(dlvm_ctx *ctx, dlvm_val *v, int32_t dtype, int32_t rank,
                           const int64_t *shape, size_t room) {
    int64_t n = numel_of(rank, shape);
    size_t item = dlvm_rt_itemsize(dtype);
    if (n < 0 || (n > 0 && (uint64_t)n > SIZE_MAX / item / 2))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "a tensor of %lld elements is too large",
                            (long long)n);
    if ((uint64_t)n * item > (uint64_t)machine_bytes())
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory allocating %lld bytes "
                            "(the machine holds %lld)", (long long)(n * (int64_t)item),
                            (long long)machine_bytes());
    dlvm_rt_buf *buf = header_alloc();
    /* 64 bytes of slack: kernels may read a vector past a row's end (never write) */
    size_t bytes = ((size_t)n * item + room + 64 + 63) / 64 * 64;
    void *data = buf ? buffer_alloc(&bytes) : NULL;
    if (!data) {
        if (buf) header_free(buf);
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory allocating %lld bytes",
                            (long long)(n * (int64_t)item));
    }
    buf->refs = 1;
    buf->data = data;
    buf->bytes = bytes;
    buf->used = (size_t)n * item;
    dlvm_rt_release(v);
    v->buf = buf;
    v->data = data;
    v->rank = rank;
    v->dtype = dtype;
    for (int i = 0; i < rank; i++) v->shape[i] = shape[i];
    return 0;
}

HIDDEN void dlvm_rt_const(dlvm_val *v, const void *data, int32_t dtype, int32_t rank,
                          const int64_t *shape) {
    dlvm_rt_release(v);
    v->data = (void *)data;
    v->dtype = dtype;
    v->rank = rank;
    for (int i = 0; i < rank; i++) v->shape[i] = shape[i];
}

/* f16 takes its bits in i (the program's generator rounds the immediate: a double -> half
 * conversion is a library call in C on x86) */
static void store_scalar(void *p, int32_t dtype, double d, int64_t i) {
    switch (dtype) {
    case DT_F16: *(uint16_t *)p = (uint16_t)i; break;
    case DT_BOOL: *(uint8_t *)p = i != 0; break;
    case DT_I8: *(int8_t *)p = (int8_t)i; break;
    case DT_U8: *(uint8_t *)p = (uint8_t)i; break;
    case DT_I16: *(int16_t *)p = (int16_t)i; break;
    case DT_U16: *(uint16_t *)p = (uint16_t)i; break;
    case DT_I32: *(int32_t *)p = (int32_t)i; break;
    case DT_U32: *(uint32_t *)p = (uint32_t)i; break;
    case DT_I64: *(int64_t *)p = i; break;
    case DT_U64: *(uint64_t *)p = (uint64_t)i; break;
    case DT_F32: *(float *)p = (float)d; break;
    case DT_F64: *(double *)p = d; break;
    default: break;
    }
}

HIDDEN int dlvm_rt_fill(dlvm_ctx *ctx, dlvm_val *v, int32_t dtype, int32_t rank,
                        const int64_t *shape, double value, int64_t ivalue) {
    if (dlvm_rt_alloc(ctx, v, dtype, rank, shape)) return 1;
    int64_t n = dlvm_rt_numel(v);
    size_t item = dlvm_rt_itemsize(dtype);
    char *p = v->data;
    for (int64_t i = 0; i < n; i++) store_scalar(p + i * item, dtype, value, ivalue);
    return 0;
}

/* iota: element i holds its index along `axis` (a ramp repeated across the other axes),
 * converted as a cast from i64 would (small integer dtypes wrap) */
HIDDEN int dlvm_rt_iota(dlvm_ctx *ctx, dlvm_val *v, int32_t dtype, int32_t rank,
                        const int64_t *shape, int32_t axis) {
    if (dlvm_rt_alloc(ctx, v, dtype, rank, shape)) return 1;
    int64_t n = dlvm_rt_numel(v), inner = 1, size = rank ? shape[axis] : 1;
    for (int d = axis + 1; d < rank; d++) inner *= shape[d];
    size_t item = dlvm_rt_itemsize(dtype);
    char *p = v->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = rank ? i / inner % size : 0;
        store_scalar(p + i * item, dtype, (double)k, k);
    }
    return 0;
}

HIDDEN int dlvm_rt_truth(const dlvm_val *v) {
    return *(const uint8_t *)v->data != 0;
}

/* ---- entry: arguments and results against their declared types -------------------------- */

static const char *dtype_name(int32_t d) {
    static const char *names[] = {"bool", "i8", "i16", "i32", "i64", "u8", "f16", "f32", "f64",
                                  "u16", "u32", "u64"};
    return d >= 0 && d < 12 ? names[d] : "?";
}

static void shape_text(char *out, size_t cap, int32_t rank, const int64_t *shape) {
    size_t used = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < rank && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (used < cap) snprintf(out + used, cap - used, "]");
}

/* Named dims: named[i] >= 0 is the index of dim i's name in `dims` (-1: a literal in want[i],
 * -2: unknown, any size). A name seen first binds its size; later uses must agree. */
/* An argument's (param) or a result's (index) dtype and shape against the signature; named dims
 * bind on first sight. The message is formatted only when a check fails: formatting it on every
 * call was most of the binding's cost for a small model. */
static int check_shape(dlvm_ctx *ctx, const char *param, int index, const int64_t *shape,
                       int32_t rank, int32_t dtype, int32_t want_dtype, int32_t want_rank,
                       const int64_t *want, const int32_t *named, int64_t *dims) {
    int bad = 0, at = 0;
    if (dtype != want_dtype || rank != want_rank) bad = 1;
    for (int i = 0; i < rank && !bad; i++) {
        at = i;
        if (shape[i] < 0) bad = 2;
        else if (named[i] == -1 && shape[i] != want[i]) bad = 3;
        else if (named[i] >= 0) {
            if (dims[named[i]] < 0) dims[named[i]] = shape[i];
            else if (dims[named[i]] != shape[i]) bad = 4;
        }
    }
    if (!bad) return 0;
    char what[96], got[160];
    if (param) snprintf(what, sizeof what, "argument %%%s", param);
    else snprintf(what, sizeof what, "result %d", index);
    shape_text(got, sizeof got, rank, shape);
    switch (bad) {
    case 1:
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_ARGUMENT, "%s must be %s of rank %d, got %s%s", what,
                            dtype_name(want_dtype), want_rank, dtype_name(dtype), got);
    case 2:
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_ARGUMENT, "%s has a negative size %s", what, got);
    case 3:
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_ARGUMENT, "%s: dim %d must be %lld, got %s", what,
                            at, (long long)want[at], got);
    default:
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_ARGUMENT,
                            "%s: dim %d is %lld, but that named dim is %lld elsewhere",
                            what, at, (long long)shape[at], (long long)dims[named[at]]);
    }
}

HIDDEN int dlvm_rt_bind(dlvm_ctx *ctx, const char *param, const void *data, const int64_t *shape,
                        int32_t rank, int32_t dtype, int32_t want_dtype, int32_t want_rank,
                        const int64_t *want, const int32_t *named, int64_t *dims, dlvm_val *out) {
    if (rank < 0 || rank > DLVM_MAX_RANK)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_ARGUMENT, "argument %%%s has rank %d (at most %d)",
                            param, rank, DLVM_MAX_RANK);
    if (check_shape(ctx, param, 0, shape, rank, dtype, want_dtype, want_rank, want, named, dims))
        return 1;
    if (!data && numel_of(rank, shape) > 0)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_ARGUMENT, "argument %%%s has no data", param);
    dlvm_rt_const(out, data, dtype, rank, shape);
    return 0;
}

HIDDEN int dlvm_rt_check_result(dlvm_ctx *ctx, int index, const dlvm_val *v, int32_t want_dtype,
                                int32_t want_rank, const int64_t *want, const int32_t *named,
                                int64_t *dims) {
    return check_shape(ctx, NULL, index, v->shape, v->rank, v->dtype, want_dtype, want_rank, want,
                       named, dims);
}

/* ---- threads ------------------------------------------------------------------------------ */

/* A pool of workers that sleep on a condition variable. A parallel call hands out parts of
 * [0, n) by an atomic counter and runs parts itself too; a call that finds the pool busy (another
 * thread's call) runs all its parts alone, so concurrent callers never wait for each other. */
#define MAX_THREADS 256
static void pack_lock_reset(void);
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static int pool_wanted = 1, pool_started = 0, pool_set = 0;
static long pool_generation = 0;
static int pool_active = 0;
static int pool_sleeping = 0;       /* under pool_lock: workers in pthread_cond_wait */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* A forked child has none of its parent's workers, and a lock a parent's thread held at the fork
 * stays held: the child starts with a fresh pool (workers start again on first use). */
static int calls_in_flight;         /* entry-point calls running (atomic) */

static void pool_after_fork(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    pool_lock = fresh;
    pool_busy = fresh;
    pack_lock_reset();
    pool_wake = fresh_cond;
    pool_done = fresh_cond;
    pool_started = 0;
    pool_active = 0;
    pool_sleeping = 0;
    calls_in_flight = 0;             /* the parent's other threads' calls are not the child's */
}

static void watch_forks(void) { pthread_atfork(NULL, NULL, pool_after_fork); }
static struct {
    dlvm_rt_task task;
    void *arg;
    int64_t n, parts;
    int64_t next;
} pool_job;

static void run_parts(void) {
    for (;;) {
        int64_t p = __atomic_fetch_add(&pool_job.next, 1, __ATOMIC_RELAXED);
        if (p >= pool_job.parts) return;
        int64_t lo = pool_job.n * p / pool_job.parts, hi = pool_job.n * (p + 1) / pool_job.parts;
        if (lo < hi) pool_job.task(pool_job.arg, lo, hi, p);
    }
}

/* A model runs parallel kernels back to back, microseconds apart: while a call of an entry point
 * is running, a worker (and a caller waiting for one) spins up to this long before it sleeps, so
 * the next job does not pay a futex wake-up each time (they were a tenth of MobileNet's time at
 * batch 1). Between calls nobody spins: the cores are the application's. */
#define SPIN_NS 50000

static long pool_nudges;            /* under pool_lock: calls that woke sleeping workers */

/* The first call in flight wakes sleeping workers, which then spin for its first parallel job:
 * their futex wake-up (tens of microseconds here) overlaps the call's first serial steps
 * instead of delaying its first parallel one (a single 3x3 convolution at batch 1 ran slower on
 * 2 threads than on 1). */
static long pool_solo_left;          /* see pool_account (atomic: read here without the lock) */

HIDDEN void dlvm_rt_call_begin(void) {
    pthread_once(&fork_once, watch_forks);  /* a child resets calls_in_flight (before any job) */
    /* (while kernels run on the caller alone, waking the workers only costs the busy cores) */
    if (__atomic_fetch_add(&calls_in_flight, 1, __ATOMIC_RELAXED) == 0 &&
        __atomic_load_n(&pool_solo_left, __ATOMIC_RELAXED) == 0 &&
        __atomic_load_n(&pool_sleeping, __ATOMIC_RELAXED) > 0 &&
        pthread_mutex_trylock(&pool_lock) == 0) {
        pool_nudges++;
        pthread_cond_broadcast(&pool_wake);
        pthread_mutex_unlock(&pool_lock);
    }
}
HIDDEN void dlvm_rt_call_end(void) { __atomic_sub_fetch(&calls_in_flight, 1, __ATOMIC_RELAXED); }

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* spin while *word == value, up to SPIN_NS; whether it changed */
static int spin_while_long(const long *word, long value) {
    double end = now_ns() + SPIN_NS;
    for (int i = 0;; i++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != value) return 1;
        cpu_pause();
        if ((i & 63) == 63 && (now_ns() > end || !__atomic_load_n(&calls_in_flight, __ATOMIC_RELAXED)))
            return 0;
    }
}

static int spin_while_int(const int *word, int value) {
    double end = now_ns() + SPIN_NS;
    for (int i = 0;; i++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != value) return 1;
        cpu_pause();
        if ((i & 63) == 63 && now_ns() > end) return 0;
    }
}

static void *worker(void *unused) {
    (void)unused;
    long seen = 0, nudged = 0;
    pthread_mutex_lock(&pool_lock);
    for (;;) {
        if (pool_generation == seen) {
            pthread_mutex_unlock(&pool_lock);
            spin_while_long(&pool_generation, seen);
            pthread_mutex_lock(&pool_lock);
        }
        while (pool_generation == seen && pool_nudges == nudged) {
            pool_sleeping++;
            pthread_cond_wait(&pool_wake, &pool_lock);
            pool_sleeping--;
        }
        nudged = pool_nudges;
        if (pool_generation == seen) continue;      /* a call began: spin for its first job */
        seen = pool_generation;
        pool_active++;
        pthread_mutex_unlock(&pool_lock);
        run_parts();
        pthread_mutex_lock(&pool_lock);
        if (--pool_active == 0) pthread_cond_broadcast(&pool_done);
    }
    return NULL;
}

/* the CPUs this process may run on: its affinity mask where the platform has one */
static int available_cpus(void) {
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    long cpus = 1;
#ifdef _SC_NPROCESSORS_ONLN
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    return cpus > 0 ? (int)cpus : 1;
}

/* DLVM_THREADS, at most the CPUs (as the JIT's default_threads: more threads than CPUs only take
 * turns on them, and their spinning takes the caller's core); an explicit set_threads is kept */
static int default_threads(void) {
    const char *env = getenv("DLVM_THREADS");
    int n = env ? atoi(env) : 0, cpus = available_cpus();
    if (n <= 0 || n > cpus) n = cpus;
    return n > MAX_THREADS ? MAX_THREADS : n;
}

static int64_t max_steps_limit;      /* 0: no limit */

HIDDEN void dlvm_rt_set_max_steps(int64_t n) {
    __atomic_store_n(&max_steps_limit, n > 0 ? n : 0, __ATOMIC_RELAXED);
}

HIDDEN int64_t dlvm_rt_max_steps(void) {
    int64_t n = __atomic_load_n(&max_steps_limit, __ATOMIC_RELAXED);
    return n > 0 ? n : INT64_MAX;
}

HIDDEN void dlvm_rt_set_threads(int n) {
    pthread_mutex_lock(&pool_lock);
    pool_wanted = n <= 0 ? default_threads() : (n > MAX_THREADS ? MAX_THREADS : n);
    pool_set = 1;
    pthread_mutex_unlock(&pool_lock);
}

HIDDEN int dlvm_rt_threads(void) {
    pthread_mutex_lock(&pool_lock);
    if (!pool_set) {
        pool_wanted = default_threads();
        pool_set = 1;
    }
    int n = pool_wanted;
    pthread_mutex_unlock(&pool_lock);
    return n;
}

/* When the machine has fewer free cores than the pool has threads (another process busy beside
 * ours), a thread loses its core in the middle of its part and the others wait for the
 * scheduler to give it back: MobileNet at batch 1 on 2 threads beside one busy process ran 2.1x
 * slower, against 1.2x for onnxruntime, and slower than on one thread. So the caller watches
 * POOL_WINDOW parallel jobs at a time: if it waited for the workers longer than it ran parts
 * itself (with an even split they did about what it did: they cost more than they saved), the
 * next `solo_span` jobs run on the caller alone. Then the pool is tried again; each failed try
 * doubles the span (up to POOL_SOLO_MAX), a good one resets it. All of it under pool_busy (one
 * caller at a time). Counting the threads' involuntary context switches instead sent ResNet-18
 * to one thread on a machine only as busy as usual (1.1x -> 1.6x onnxruntime's time). */
#define POOL_WINDOW 32
#define POOL_SOLO_MIN 256
#define POOL_SOLO_MAX 16384
static double pool_win_busy, pool_win_wait;
static int pool_win_jobs;
static long pool_solo_span = POOL_SOLO_MIN;
static int64_t pool_solo_jobs;       /* jobs run alone for this reason ({name}_pool_solo_jobs) */

HIDDEN int64_t dlvm_rt_pool_solo_jobs(void) {
    return __atomic_load_n(&pool_solo_jobs, __ATOMIC_RELAXED);
}

/* DLVM_POOL_SOLO=1 runs every parallel job on its caller (for measuring, and for tests), read
 * once */
static int pool_solo_forced(void) {
    static int forced = -1;
    int f = __atomic_load_n(&forced, __ATOMIC_RELAXED);
    if (f < 0) {
        const char *env = getenv("DLVM_POOL_SOLO");
        f = env && env[0] == '1';
        __atomic_store_n(&forced, f, __ATOMIC_RELAXED);
    }
    return f;
}

static void pool_account(double busy, double wait) {
    pool_win_busy += busy;
    pool_win_wait += wait;
    if (++pool_win_jobs < POOL_WINDOW) return;
    if (pool_win_wait > pool_win_busy) {
        __atomic_store_n(&pool_solo_left, pool_solo_span, __ATOMIC_RELAXED);
        pool_solo_span = pool_solo_span * 2 > POOL_SOLO_MAX ? POOL_SOLO_MAX : pool_solo_span * 2;
    } else {
        pool_solo_span = POOL_SOLO_MIN;
    }
    pool_win_busy = pool_win_wait = 0.0;
    pool_win_jobs = 0;
}

HIDDEN void dlvm_rt_parallel(dlvm_rt_task task, void *arg, int64_t n, int64_t parts) {
    int threads = dlvm_rt_threads();
    if (parts > threads) parts = threads;
    if (parts > n) parts = n;
    if (parts <= 1 || pthread_mutex_trylock(&pool_busy) != 0) {
        if (n > 0) task(arg, 0, n, 0);
        return;
    }
    if (pool_solo_forced() || __atomic_load_n(&pool_solo_left, __ATOMIC_RELAXED) > 0) {
        if (!pool_solo_forced()) __atomic_sub_fetch(&pool_solo_left, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&pool_solo_jobs, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&pool_busy);
        task(arg, 0, n, 0);
        return;
    }
    pthread_once(&fork_once, watch_forks);
    pthread_mutex_lock(&pool_lock);
    while (pool_started < threads - 1) {          /* workers start on first use */
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&t, &attr, worker, NULL);
        pthread_attr_destroy(&attr);
        if (failed) break;                        /* fewer workers: the caller does more */
        pool_started++;
    }
    /* a worker that woke late for the previous job may still be reading it */
    while (pool_active > 0) pthread_cond_wait(&pool_done, &pool_lock);
    pool_job.task = task;
    pool_job.arg = arg;
    pool_job.n = n;
    pool_job.parts = parts;
    pool_job.next = 0;
    pool_generation++;
    pthread_cond_broadcast(&pool_wake);
    pthread_mutex_unlock(&pool_lock);
    double t0 = now_ns();
    run_parts();
    double t1 = now_ns();
    spin_while_int(&pool_active, 1);      /* the usual case: one worker still finishing */
    pthread_mutex_lock(&pool_lock);
    while (pool_active > 0) pthread_cond_wait(&pool_done, &pool_lock);
    pthread_mutex_unlock(&pool_lock);
    pool_account(t1 - t0, now_ns() - t1);
    pthread_mutex_unlock(&pool_busy);
}

/* ---- compiled regions --------------------------------------------------------------------- */

/* A region's kernel was compiled for one variant (jit/plan.py: Spec): the domain's axes merged
 * into `n_axes` groups, each tensor varying or not along each group, chosen from the static
 * types. Here the actual shapes give each group's size and each tensor's strides, as make_plan
 * does; a tensor that the types said varies along an axis but is broadcast along it at run time
 * is a shape the library was not compiled for (a guard failure, not a wrong result). */

typedef struct region_call {
    const dlvm_rt_kernel *k;
    const int64_t *dims;
    void **ptrs;
    char *scratch;
    size_t scratch_bytes;
    int32_t status;
} region_call;

typedef int32_t (*kfn0)(int64_t, int64_t, const int64_t *, void *, ...);

static int32_t call_kernel(const region_call *c, int64_t lo, int64_t hi, void *scratch) {
    void **p = c->ptrs;
    int n = c->k->n_in + c->k->n_out;
    kfn0 f = (kfn0)c->k->fn;
    switch (n) {
#define A(i) p[i]
    case 1: return f(lo, hi, c->dims, scratch, A(0));
    case 2: return f(lo, hi, c->dims, scratch, A(0), A(1));
    case 3: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2));
    case 4: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3));
    case 5: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4));
    case 6: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5));
    case 7: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5), A(6));
    case 8: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7));
    case 9: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8));
    case 10: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8), A(9));
    case 11: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8), A(9), A(10));
    case 12: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8), A(9), A(10), A(11));
    case 13: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8), A(9), A(10), A(11), A(12));
    case 14: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8), A(9), A(10), A(11), A(12), A(13));
    case 15: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8), A(9), A(10), A(11), A(12), A(13), A(14));
    case 16: return f(lo, hi, c->dims, scratch, A(0), A(1), A(2), A(3), A(4), A(5), A(6), A(7), A(8), A(9), A(10), A(11), A(12), A(13), A(14), A(15));
#undef A
    default: return -1;
    }
}

static void region_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    region_call *c = arg;
    void *scratch = c->scratch ? c->scratch + part * c->scratch_bytes : NULL;
    int32_t s = call_kernel(c, lo, hi, scratch);
    if (s) __atomic_fetch_or(&c->status, s, __ATOMIC_RELAXED);
}

/* "[2, 3], [3]": the inputs' shapes, for a region's error message */
static const char *input_shapes(const dlvm_rt_kernel *k, dlvm_val *const *ins, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = 0;
    for (int e = 0; e < k->n_in && at + 24 < size; e++) {
        at += (size_t)snprintf(buf + at, size - at, "%s[", e ? ", " : "");
        for (int d = 0; d < ins[e]->rank && at + 24 < size; d++)
            at += (size_t)snprintf(buf + at, size - at, "%s%lld", d ? ", " : "", (long long)ins[e]->shape[d]);
        at += (size_t)snprintf(buf + at, size - at, "]");
    }
    return buf;
}

/* What a region's operand shapes decide (the group sizes, strides and guard, the outputs'
 * shapes), kept per thread for the last shapes each of a few kernels saw: a recurrent model at
 * batch 1 runs a handful of small regions per step, and working this out again each time was a
 * fifth of its time. Only regions of up to MEMO_INS inputs and MEMO_OUTS outputs are kept. */
#define MEMO_SLOTS 32
#define MEMO_INS 8
#define MEMO_OUTS 4
typedef struct {
    const dlvm_rt_kernel *k;
    int32_t in_rank[MEMO_INS];
    int64_t in_shape[MEMO_INS][DLVM_MAX_RANK];
    int64_t dims[(1 + MEMO_INS + MEMO_OUTS) * DLVM_MAX_RANK];
    int32_t out_rank[MEMO_OUTS];
    int64_t out_shape[MEMO_OUTS][DLVM_MAX_RANK];
    int64_t total, inner_total;
} region_memo;

static __thread region_memo region_memos[MEMO_SLOTS];

static region_memo *memo_slot(const dlvm_rt_kernel *k) {
    return &region_memos[((uintptr_t)k >> 6) % MEMO_SLOTS];
}

static int memo_hit(const region_memo *m, const dlvm_rt_kernel *k, dlvm_val *const *ins) {
    if (m->k != k) return 0;
    for (int i = 0; i < k->n_in; i++) {
        if (ins[i]->rank != m->in_rank[i]) return 0;
        for (int d = 0; d < ins[i]->rank; d++)
            if (ins[i]->shape[d] != m->in_shape[i][d]) return 0;
    }
    return 1;
}

/* allocate the outputs and run the kernel over the domain `dims` describes */
static int region_run(dlvm_ctx *ctx, const dlvm_rt_kernel *k, dlvm_val *const *ins, dlvm_val *outs,
                      const int64_t *dims, const int32_t *out_rank,
                      int64_t (*out_shape)[DLVM_MAX_RANK], int64_t total, int64_t inner_total) {
    int rc = 0;
    for (int j = 0; j < k->n_out && !rc; j++)
        rc = dlvm_rt_alloc(ctx, &outs[j], k->out_dtypes[j], out_rank[j], out_shape[j]);
    if (rc) return rc;
    if (total == 0) {
        if (inner_total == 0 && dims[0] != 0)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "region %s: a reduction over an empty axis "
                                "is not compiled ahead of time", k->name);
        return 0;
    }
    void *ptrs[16];
    for (int i = 0; i < k->n_in; i++) ptrs[i] = ins[i]->data;
    for (int j = 0; j < k->n_out; j++) ptrs[k->n_in + j] = outs[j].data;
    region_call call = {k, dims, ptrs, NULL, 0, 0};
    int threads = dlvm_rt_threads();
    int64_t parts = 1;
    double work = (double)total * k->work_per_element;
    if (threads > 1 && dims[0] > 1 && work > 60000.0) parts = threads;
    size_t scratch_total = 0;
    if (k->slots) {
        call.scratch_bytes = ((size_t)k->slots * (size_t)inner_total * 8 + 63) / 64 * 64;
        scratch_total = call.scratch_bytes * (size_t)threads;
        call.scratch = buffer_alloc(&scratch_total);       /* from the cache, as values */
        if (!call.scratch) return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory");
    }
    dlvm_rt_parallel(region_task, &call, dims[0], parts);
    if (call.scratch) buffer_free(call.scratch, scratch_total);
    if (call.status & 1)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "integer division or modulo by zero, or a "
                            "negative integer exponent");
    if (call.status)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "a sin/cos argument beyond the compiled range "
                            "reduction");
    return 0;
}

HIDDEN int dlvm_rt_region(dlvm_ctx *ctx, const dlvm_rt_kernel *k, dlvm_val *const *ins,
                          dlvm_val *outs) {
    region_memo *memo = k->n_in <= MEMO_INS && k->n_out <= MEMO_OUTS ? memo_slot(k) : NULL;
    if (memo && memo_hit(memo, k, ins))
        return region_run(ctx, k, ins, outs, memo->dims, memo->out_rank, memo->out_shape,
                          memo->total, memo->inner_total);
    int n = k->domain_rank, m = k->inner;
    int n_nodes = k->n_nodes, n_end = k->n_in + k->n_out;
    if (n_end > 16)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "region %s has %d operands (at most 16)",
                            k->name, n_end);
    /* node shapes, right-aligned to rank n (as jit/plan.py: node_shapes) */
    /* on the stack for the usual few dozen nodes (the heap otherwise) */
    int64_t stack_shapes[64][DLVM_MAX_RANK];
    int32_t stack_ranks[64];
    int on_heap = n_nodes > 64;
    int64_t (*shapes)[DLVM_MAX_RANK] = on_heap ? calloc((size_t)n_nodes, sizeof *shapes) : stack_shapes;
    int32_t *ranks = on_heap ? calloc((size_t)n_nodes, sizeof *ranks) : stack_ranks;
    if (!shapes || !ranks) {
        if (on_heap) {
            free(shapes);
            free(ranks);
        }
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory");
    }
    if (!on_heap) {
        memset(stack_ranks, 0, sizeof(int32_t) * (size_t)n_nodes);
        memset(stack_shapes, 0, sizeof(stack_shapes[0]) * (size_t)n_nodes);
    }
    int rc = 0;
    for (int i = 0; i < n_nodes && !rc; i++) {
        const int32_t *nd = k->nodes + 4 * i;
        if (nd[0] == NODE_LOAD) {
            const dlvm_val *v = ins[nd[1]];
            ranks[i] = v->rank;
            for (int a = 0; a < v->rank; a++) shapes[i][a] = v->shape[a];
        } else if (nd[0] == NODE_CONST) {
            ranks[i] = 0;
        } else if (nd[0] == NODE_REDUCE_KEEP || nd[0] == NODE_REDUCE_DROP) {
            int a = nd[1];
            ranks[i] = nd[0] == NODE_REDUCE_KEEP ? ranks[a] : ranks[a] - m;
            for (int d = 0; d < ranks[i]; d++)
                shapes[i][d] = d < ranks[a] - m ? shapes[a][d] : 1;
        } else {
            int r = 0;
            for (int j = 1; j < 4; j++)
                if (nd[j] >= 0 && ranks[nd[j]] > r) r = ranks[nd[j]];
            ranks[i] = r;
            for (int d = 0; d < r; d++) {
                int64_t size = 1;
                for (int j = 1; j < 4; j++) {
                    int a = nd[j];
                    if (a < 0) continue;
                    int off = d - (r - ranks[a]);
                    int64_t s = off >= 0 ? shapes[a][off] : 1;
                    if (s != 1) {
                        if (size != 1 && size != s) rc = 1;
                        size = s;
                    }
                }
                shapes[i][d] = size;
            }
        }
    }
    if (rc) {
        if (on_heap) free(shapes);
        if (on_heap) free(ranks);
        char text[200];
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "region %s: operand shapes %s do not broadcast",
                            k->name, input_shapes(k, ins, text, sizeof text));
    }
    /* the domain: the broadcast of every kept node, right-aligned */
    int64_t domain[DLVM_MAX_RANK];
    for (int d = 0; d < n; d++) domain[d] = 1;
    for (int i = 0; i < n_nodes; i++) {
        if (k->nodes[4 * i] == NODE_REDUCE_DROP || k->nodes[4 * i] == NODE_ROW) continue;
        for (int d = 0; d < ranks[i]; d++) {
            int64_t s = shapes[i][d];
            int dd = d + n - ranks[i];
            if (dd < 0) continue;
            if (s != 1) domain[dd] = s;
        }
    }
    /* aligned shapes of every endpoint: inputs, then outputs */
    int64_t aligned[16][DLVM_MAX_RANK];
    for (int e = 0; e < n_end; e++) {
        int node = e < k->n_in ? -1 : k->out_nodes[e - k->n_in];
        const int64_t *s;
        int r;
        int64_t tmp[DLVM_MAX_RANK];
        if (node < 0) {
            s = ins[e]->shape;
            r = ins[e]->rank;
        } else if (k->nodes[4 * node] == NODE_REDUCE_DROP || k->nodes[4 * node] == NODE_ROW) {
            /* a row value lines up with the domain's outer axes (from the left), then the
             * reduced axes are 1 */
            r = n;
            for (int d = 0; d < n; d++) {
                int off = d - (n - m - ranks[node]);
                tmp[d] = d >= n - m ? 1 : off >= 0 ? shapes[node][off] : 1;
            }
            s = tmp;
        } else {
            s = shapes[node];
            r = ranks[node];
        }
        for (int d = 0; d < n; d++) {
            int off = d - (n - r);
            aligned[e][d] = off >= 0 ? s[off] : 1;
        }
    }
    /* group sizes and the guard: every endpoint is the domain's size along the axes it varies
     * along in the compiled variant, and 1 along the others */
    int64_t dims[(1 + 16) * DLVM_MAX_RANK];
    int na = k->n_axes;
    int64_t total = 1, inner_total = 1;
    for (int g = 0; g < na; g++) {
        const int32_t *grp = k->axis_groups + g * (1 + DLVM_MAX_RANK);
        int64_t size = 1;
        for (int j = 0; j < grp[0]; j++) {
            int d = grp[1 + j];
            size *= domain[d];
            for (int e = 0; e < n_end; e++) {
                int varies = k->patterns[e * na + g];
                int64_t want = varies ? domain[d] : 1;
                if (aligned[e][d] != want && domain[d] != 1) rc = 1;
            }
        }
        dims[g] = size;
        total *= size;
        if (g >= k->outer) inner_total *= size;
    }
    /* domain axes of size > 1 outside every group (the variant dropped them as size 1) */
    for (int d = 0; d < n; d++) {
        int found = 0;
        for (int g = 0; g < na && !found; g++) {
            const int32_t *grp = k->axis_groups + g * (1 + DLVM_MAX_RANK);
            for (int j = 0; j < grp[0]; j++) found |= grp[1 + j] == d;
        }
        if (!found && domain[d] != 1) rc = 1;
    }
    if (rc) {
        if (on_heap) free(shapes);
        if (on_heap) free(ranks);
        char text[200];
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "region %s: operand shapes %s broadcast in a "
                            "way the library was not compiled for", k->name,
                            input_shapes(k, ins, text, sizeof text));
    }
    for (int e = 0; e < n_end; e++) {
        int64_t run = 1;
        for (int g = na - 1; g >= 0; g--) {
            int varies = k->patterns[e * na + g];
            dims[na + e * na + g] = varies ? run : 0;
            if (varies) run *= dims[g];
        }
    }
    /* the outputs' shapes, kept with the rest for the next call with these shapes */
    int32_t out_rank[16];
    int64_t out_shape[16][DLVM_MAX_RANK];
    for (int j = 0; j < k->n_out; j++) {
        int node = k->out_nodes[j];
        out_rank[j] = ranks[node];
        for (int d = 0; d < ranks[node]; d++) out_shape[j][d] = shapes[node][d];
    }
    if (on_heap) free(shapes);
    if (on_heap) free(ranks);
    if (memo) {
        memo->k = NULL;             /* (re)filled below: valid only once complete */
        for (int i = 0; i < k->n_in; i++) {
            memo->in_rank[i] = ins[i]->rank;
            for (int d = 0; d < ins[i]->rank; d++) memo->in_shape[i][d] = ins[i]->shape[d];
        }
        memcpy(memo->dims, dims, sizeof(int64_t) * (size_t)(na + n_end * na));
        for (int j = 0; j < k->n_out; j++) {
            memo->out_rank[j] = out_rank[j];
            memcpy(memo->out_shape[j], out_shape[j], sizeof out_shape[j]);
        }
        memo->total = total;
        memo->inner_total = inner_total;
        memo->k = k;
    }
    return region_run(ctx, k, ins, outs, dims, out_rank, out_shape, total, inner_total);
}

/* ---- matrix products ----------------------------------------------------------------------- */

/* Data movement is split across the pool from this many bytes: at batch 1 a transpose, a
 * resize's gathers or a convolution's padding ran on one thread while the other waited for
 * the next product. */
#define PARALLEL_COPY_BYTES (256 * 1024)

/* the JIT's f32 GEMM kernel (jit/llvm/gemm_kernel.py), compiled into the library */
extern int32_t dlvm_sgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_srow,
                          int64_t a_sk, const float *b, int64_t b_sk, int64_t b_srow, float *c,
                          int64_t ldc, float *pack_a, float *pack_b, int64_t beta, int64_t flags,
                          int64_t a_row0, int64_t a_padded, int64_t b_col0, int64_t b_padded,
                          const float *bias, int64_t epilogue);

extern int32_t dlvm_sgemm_pack_b(int64_t rows, int64_t k, const float *src, int64_t s_row,
                                 int64_t s_k, float *dst);
extern int32_t dlvm_sgemm_pack_a(int64_t rows, int64_t k, const float *src, int64_t s_row,
                                 int64_t s_k, float *dst);

typedef struct gemm_call {
    int64_t m, n, k;
    const float *a, *b;
    float *c;
    int by_rows;
    int failed;
    int64_t b_padded;          /* > 0: b is prepacked (dlvm_sgemm_pack_b), this many columns */
    const int64_t *geometry;   /* non-NULL: b is a padded image whose patches the kernel packs */
    const float *a_packed;     /* non-NULL: a prepacked (dlvm_sgemm_pack_a), a_padded rows */
    int64_t a_padded;
    const float *bias;         /* non-NULL: added to each row as the kernel stores it */
    int relu;                  /* then max(., 0) as it stores (NaN stays NaN) */
    const int64_t *b_rows;     /* non-NULL: b read in place, row k at b + b_rows[k] (flag 8) */
    int64_t ldc;               /* c's row stride (0: n) */
    int64_t a_row0;            /* rows of the prepacked a before the call's first (a group's) */
} gemm_call;

/* Packing buffers per thread, kept between calls (a 3 MB buffer mapped afresh each call costs
 * its page faults every time); freed when the thread exits. */
typedef struct pack_bufs {
    float *pa, *pb;
    size_t pb_floats;
} pack_bufs;

static pthread_key_t pack_key;
static pthread_once_t pack_key_once = PTHREAD_ONCE_INIT;

static void free_pack_bufs(void *p) {
    pack_bufs *b = p;
    free(b->pa);
    free(b->pb);
    free(b);
}

static void make_pack_key(void) { pthread_key_create(&pack_key, free_pack_bufs); }

static pack_bufs *thread_pack_bufs(size_t pb_floats) {
    pthread_once(&pack_key_once, make_pack_key);
    pack_bufs *b = pthread_getspecific(pack_key);
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b) return NULL;
        b->pa = aligned_alloc(64, (size_t)DLVM_GEMM_MC * DLVM_GEMM_KC * 4 + 64);
        if (!b->pa || pthread_setspecific(pack_key, b)) {
            free(b->pa);
            free(b);
            return NULL;
        }
    }
    if (b->pb_floats < pb_floats) {
        free(b->pb);
        b->pb = aligned_alloc(64, (pb_floats * 4 + 63) / 64 * 64);
        b->pb_floats = b->pb ? pb_floats : 0;
        if (!b->pb) return NULL;
    }
    return b;
}

static void gemm_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    gemm_call *g = arg;
    /* lo/hi count register-tile panels of the split side */
    int64_t tile = g->by_rows ? DLVM_GEMM_MR : DLVM_GEMM_NR;
    int64_t side = g->by_rows ? g->m : g->n;
    int64_t first = lo * tile, last = hi * tile < side ? hi * tile : side;
    int64_t rows = g->by_rows ? last - first : g->m, cols = g->by_rows ? g->n : last - first;
    int64_t r0 = g->by_rows ? first : 0, c0 = g->by_rows ? 0 : first;
    int64_t nb = (cols + DLVM_GEMM_NR - 1) / DLVM_GEMM_NR * DLVM_GEMM_NR;
    if (nb > DLVM_GEMM_NC) nb = DLVM_GEMM_NC;
    pack_bufs *bufs = thread_pack_bufs((size_t)(DLVM_GEMM_KC * nb + DLVM_GEMM_SLACK) + 16);
    if (!bufs) {
        __atomic_store_n(&g->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float *pa = bufs->pa, *pb = bufs->pb;
    /* a prepacked A is addressed from its start and the call's first row */
    const float *a = g->a_packed ? g->a_packed : g->a + r0 * g->k;
    int64_t a_flag = g->a_packed ? 1 : 0;
    const float *bias = g->bias ? g->bias + r0 : NULL;
    int64_t epi = (g->bias ? 1 : 0) | (g->relu ? 4 : 0);
    int64_t ldc = g->ldc ? g->ldc : g->n;
    if (g->b_rows) {        /* B unpacked: its rows where the table says, columns contiguous */
        dlvm_sgemm(rows, cols, g->k, a, g->k, 1, g->b, (int64_t)(intptr_t)g->b_rows, 0,
                   g->c + r0 * ldc + c0, ldc, pa, pb, 0, 8 | a_flag, g->a_row0 + r0, g->a_padded, c0, 0,
                   bias, epi);
    }
    else if (g->geometry)   /* implicit GEMM: the patch matrix is read from the image in place */
        dlvm_sgemm(rows, cols, g->k, a, g->k, 1, g->b, (int64_t)(intptr_t)g->geometry,
                   0, g->c + r0 * ldc + c0, ldc, pa, pb, 0, 4 | a_flag, g->a_row0 + r0, g->a_padded, c0, 0,
                   bias, epi);
    else if (g->b_padded)
        dlvm_sgemm(rows, cols, g->k, a, g->k, 1, g->b, 0, 0, g->c + r0 * ldc + c0, ldc, pa, pb,
                   0, 2 | a_flag, g->a_row0 + r0, g->a_padded, c0, g->b_padded, bias, epi);
    else
        dlvm_sgemm(rows, cols, g->k, a, g->k, 1, g->b + c0, g->n, 1, g->c + r0 * ldc + c0, ldc,
                   pa, pb, 0, a_flag, g->a_row0 + r0, g->a_padded, c0, 0, bias, epi);
}

/* A few rows: each output row is a sum of B's rows scaled by a's elements, one pass over B
 * (which a packed product would first copy); the inner loop vectorizes. */
static void few_rows_span(int64_t n, int64_t k, const float *a, const float *b, int64_t ldb,
                          float *restrict y) {
    /* four of B's rows per pass over y: a quarter of the loads and stores of y */
    memset(y, 0, (size_t)n * 4);
    int64_t p = 0;
    for (; p + 4 <= k; p += 4) {
        float s0 = a[p], s1 = a[p + 1], s2 = a[p + 2], s3 = a[p + 3];
        const float *restrict r0 = b + p * ldb, *restrict r1 = r0 + ldb;
        const float *restrict r2 = r1 + ldb, *restrict r3 = r2 + ldb;
        for (int64_t j = 0; j < n; j++) y[j] += s0 * r0[j] + s1 * r1[j] + s2 * r2[j] + s3 * r3[j];
    }
    for (; p < k; p++) {
        float s = a[p];
        const float *restrict row = b + p * ldb;
        for (int64_t j = 0; j < n; j++) y[j] += s * row[j];
    }
}

static void few_rows(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
    for (int64_t i = 0; i < m; i++) few_rows_span(n, k, a + i * k, b, n, c + i * n);
}

typedef struct few_rows_call {
    int64_t m, n, k;
    const float *a, *b;
    float *c;
} few_rows_call;

static void few_rows_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const few_rows_call *f = arg;
    /* columns [lo, hi) of every row */
    for (int64_t i = 0; i < f->m; i++)
        few_rows_span(hi - lo, f->k, f->a + i * f->k, f->b + lo, f->n, f->c + i * f->n + lo);
}

/* Run a product across the pool, split along the side that costs each thread less memory
 * traffic (as jit/targets/cpu/gemm.py): b_reads is what packing B costs in reads of it. */
static int gemm_split(dlvm_ctx *ctx, gemm_call *g, double b_reads) {
    int64_t m = g->m, n = g->n, k = g->k;
    int threads = dlvm_rt_threads();
    int64_t parts = 1, panels;
    /* a sixteenth of the JIT's threshold: the pool's workers spin between the library's
     * operations, so a hand-off costs a microsecond or two, not a wake-up (a recurrent step's
     * 32x64x256 product ran on one thread: LSTM batch 32 1.03 -> 0.85 ms) */
    if (threads > 1 && m * n * k >= DLVM_GEMM_PARALLEL_MACS / 16) {
        int64_t row_panels = (m + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR;
        int64_t col_panels = (n + DLVM_GEMM_NR - 1) / DLVM_GEMM_NR;
        /* a prepacked A (constant weights) is only read: each thread reading all of it
         * costs less than each packing all of B (ResNet-18's 14x14 convolutions at batch 1
         * split by rows, and both threads packed the whole patch matrix) */
        double a_cost = (double)m * k * (g->a_packed ? 1 : 3), b_cost = (double)n * k * b_reads;
        g->by_rows = a_cost / threads + b_cost < a_cost + b_cost / threads;
        if (g->by_rows && row_panels < threads) g->by_rows = 0;
        else if (!g->by_rows && col_panels < threads) g->by_rows = 1;
        panels = g->by_rows ? row_panels : col_panels;
        parts = threads;
    } else {
        g->by_rows = 1;
        panels = (m + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR;
    }
    dlvm_rt_parallel(gemm_task, g, panels, parts);
    if (g->failed) return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (GEMM packing)");
    return 0;
}

static int sgemm_with(dlvm_ctx *ctx, int64_t m, int64_t n, int64_t k, const float *a,
                      const float *b, float *c, const float *packed, int64_t padded) {
    if (m == 0 || n == 0) return 0;
    if (k == 0) {
        memset(c, 0, (size_t)(m * n) * 4);
        return 0;
    }
    if (m < DLVM_GEMM_MIN_ROWS && b) {
        int threads = dlvm_rt_threads();
        if (threads > 1 && m * n * k >= DLVM_GEMM_PARALLEL_MACS / 64 && n >= 256) {
            few_rows_call f = {m, n, k, a, b, c};
            dlvm_rt_parallel(few_rows_task, &f, n, threads);
        } else {
            few_rows(m, n, k, a, b, c);
        }
        return 0;
    }
    gemm_call g = {m, n, k, a, packed ? packed : b, c, 1, 0, packed ? padded : 0, NULL, NULL, 0,
                   NULL};
    /* packing an operand costs about 3 reads of it; a prepacked one is read once */
    return gemm_split(ctx, &g, packed ? 1 : 3);
}

static int sgemm(dlvm_ctx *ctx, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                 float *c) {
    return sgemm_with(ctx, m, n, k, a, b, c, NULL, 0);
}

static pthread_mutex_t pack_lock = PTHREAD_MUTEX_INITIALIZER;

static void pack_lock_reset(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pack_lock = fresh;
}

/* A batch of products with constant right operands, [nb, m, k] x [nb, k, n] (a bidirectional
 * RNN step: both directions' states times their recurrent weights): each B packed once, and the
 * products several to a thread where there are enough multiplies to share. As a batched matmul
 * of unpacked operands each step packed both weights again, and its two products ran one after
 * the other, each split across the pool: a 2-layer bidirectional LSTM at batch 32 took 1.2x the
 * time of two loops of 2-D products with prepacked weights. */
typedef struct {
    const float *a, *b, *packed;
    float *c;
    int64_t m, n, k, padded;
    int failed;
} const_products;

static void const_products_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const_products *j = arg;
    int64_t m = j->m, n = j->n, k = j->k;
    for (int64_t t = lo; t < hi; t++) {
        const float *a = j->a + t * m * k;
        float *c = j->c + t * m * n;
        if (m < DLVM_GEMM_MIN_ROWS || !j->packed) {
            few_rows(m, n, k, a, j->b + t * k * n, c);
            continue;
        }
        gemm_call g = {.m = m, .n = n, .k = k, .a = a, .b = j->packed + t * j->padded * k, .c = c,
                       .by_rows = 1, .b_padded = j->padded};
        gemm_task(&g, 0, (m + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR, 0);
        if (g.failed) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    }
}

/* the constant's packed panels, made on first use; NULL where there is no memory for them */
static const float *packed_once(dlvm_rt_packed *pack, const float *b, int64_t nb, int64_t k,
                                int64_t n) {
    float *packed = __atomic_load_n(&pack->packed, __ATOMIC_ACQUIRE);
    if (packed) return packed;
    pthread_mutex_lock(&pack_lock);
    packed = pack->packed;
    if (!packed) {
        int64_t padded = (n + DLVM_GEMM_NR - 1) / DLVM_GEMM_NR * DLVM_GEMM_NR;
        size_t panel = (size_t)(padded * (k ? k : 1));
        packed = aligned_alloc(64, ((size_t)nb * panel * 4 + 63) / 64 * 64);
        if (packed) {
            if (n && k)
                for (int64_t t = 0; t < nb; t++)
                    dlvm_sgemm_pack_b(n, k, b + t * k * n, 1, n, packed + (size_t)t * panel);
            pack->padded = padded;
            __atomic_store_n(&pack->packed, packed, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&pack_lock);
    return packed;
}

/* a [nb, ..., m, k] x constant b [nb, 1, ..., 1, k, n]: product t is a's rows of batch t (all of
 * its middle axes' rows) times b's t-th matrix */
static int matmul_const_batched(dlvm_ctx *ctx, const dlvm_val *a, const dlvm_val *b,
                                dlvm_rt_packed *pack, dlvm_val *out) {
    int r = a->rank;
    int64_t nb = b->shape[0], k = b->shape[r - 2], n = b->shape[r - 1];
    int64_t m = numel_of(r - 2, a->shape + 1);
    const float *packed = m >= DLVM_GEMM_MIN_ROWS ? packed_once(pack, b->data, nb, k, n) : NULL;
    int64_t shape[DLVM_MAX_RANK];
    memcpy(shape, a->shape, 8 * (size_t)r);
    shape[r - 1] = n;
    if (dlvm_rt_alloc(ctx, out, DT_F32, r, shape)) return 1;
    if (m == 0 || n == 0) return 0;
    if (k == 0) {
        memset(out->data, 0, (size_t)(nb * m * n) * 4);
        return 0;
    }
    int threads = dlvm_rt_threads();
    int64_t padded = packed ? pack->padded : 0;
    /* whole products to threads where each is too small to split itself or they go round the
     * threads evenly (a bidirectional step's two on two threads); else each splits across the
     * pool in turn (two large products on 16 threads) */
    if (threads > 1 && nb >= 2 && nb * m * n * k >= DLVM_GEMM_PARALLEL_MACS / 16 &&
        (m * n * k < DLVM_GEMM_PARALLEL_MACS / 16 || nb % threads == 0 || nb >= 2 * threads)) {
        const_products j = {a->data, b->data, packed, out->data, m, n, k, padded, 0};
        dlvm_rt_parallel(const_products_task, &j, nb, threads < nb ? threads : nb);
        if (j.failed) return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (GEMM packing)");
        return 0;
    }
    for (int64_t t = 0; t < nb; t++)
        if (sgemm_with(ctx, m, n, k, (const float *)a->data + t * m * k,
                       (const float *)b->data + t * k * n, (float *)out->data + t * m * n,
                       packed ? packed + t * padded * k : NULL, padded))
            return 1;
    return 0;
}

HIDDEN int dlvm_rt_matmul_const(dlvm_ctx *ctx, const dlvm_val *a, const dlvm_val *b,
                                dlvm_rt_packed *pack, dlvm_val *out) {
    if (a->dtype == DT_F32 && b->rank >= 3 && a->rank == b->rank && a->shape[0] == b->shape[0] &&
        a->shape[a->rank - 1] == b->shape[b->rank - 2] && numel_of(b->rank - 3, b->shape + 1) == 1)
        return matmul_const_batched(ctx, a, b, pack, out);
    if (a->dtype != DT_F32 || b->rank != 2 || a->rank < 2)
        return dlvm_rt_matmul(ctx, a, b, out);
    int64_t k = b->shape[0], n = b->shape[1];
    int64_t m = numel_of(a->rank - 1, a->shape);
    if (a->shape[a->rank - 1] != k)
        return dlvm_rt_matmul(ctx, a, b, out);      /* it reports the mismatch */
    if (m < DLVM_GEMM_MIN_ROWS)
        return dlvm_rt_matmul(ctx, a, b, out);      /* few rows read B as it is */
    float *packed = __atomic_load_n(&pack->packed, __ATOMIC_ACQUIRE);
    if (!packed) {
        pthread_mutex_lock(&pack_lock);
        packed = pack->packed;
        if (!packed) {
            int64_t padded = (n + DLVM_GEMM_NR - 1) / DLVM_GEMM_NR * DLVM_GEMM_NR;
            packed = aligned_alloc(64, ((size_t)(padded * (k ? k : 1)) * 4 + 63) / 64 * 64);
            if (packed) {
                if (n && k) dlvm_sgemm_pack_b(n, k, b->data, 1, n, packed);
                pack->padded = padded;
                __atomic_store_n(&pack->packed, packed, __ATOMIC_RELEASE);
            }
        }
        pthread_mutex_unlock(&pack_lock);
        if (!packed) return dlvm_rt_matmul(ctx, a, b, out);     /* no memory to spare: unpacked */
    }
    int64_t shape[DLVM_MAX_RANK];
    memcpy(shape, a->shape, 8 * (size_t)a->rank);
    shape[a->rank - 1] = n;
    if (dlvm_rt_alloc(ctx, out, DT_F32, a->rank, shape)) return 1;
    return sgemm_with(ctx, m, n, k, a->data, b->data, out->data, packed, pack->padded);
}

#define NAIVE_MATMUL(T, ACC)                                                                  \
    static void matmul_##T(int64_t m, int64_t n, int64_t k, const T *a, const T *b, T *c) {  \
        for (int64_t i = 0; i < m; i++)                                                       \
            for (int64_t j = 0; j < n; j++) {                                                 \
                ACC s = 0;                                                                    \
                for (int64_t p = 0; p < k; p++) s += (ACC)a[i * k + p] * (ACC)b[p * n + j];   \
                c[i * n + j] = (T)s;                                                          \
            }                                                                                 \
    }
NAIVE_MATMUL(double, double)
NAIVE_MATMUL(int8_t, int8_t)
NAIVE_MATMUL(int16_t, int16_t)
NAIVE_MATMUL(int32_t, int32_t)
NAIVE_MATMUL(int64_t, int64_t)
NAIVE_MATMUL(uint8_t, uint8_t)
NAIVE_MATMUL(uint16_t, uint16_t)
NAIVE_MATMUL(uint32_t, uint32_t)
NAIVE_MATMUL(uint64_t, uint64_t)

static int product(dlvm_ctx *ctx, int32_t dtype, int64_t m, int64_t n, int64_t k, const void *a,
                   const void *b, void *c) {
    switch (dtype) {
    case DT_F32: return sgemm(ctx, m, n, k, a, b, c);
    case DT_F64: matmul_double(m, n, k, a, b, c); return 0;
    case DT_I8: matmul_int8_t(m, n, k, a, b, c); return 0;
    case DT_I16: matmul_int16_t(m, n, k, a, b, c); return 0;
    case DT_I32: matmul_int32_t(m, n, k, a, b, c); return 0;
    case DT_I64: matmul_int64_t(m, n, k, a, b, c); return 0;
    case DT_U8: matmul_uint8_t(m, n, k, a, b, c); return 0;
    case DT_U16: matmul_uint16_t(m, n, k, a, b, c); return 0;
    case DT_U32: matmul_uint32_t(m, n, k, a, b, c); return 0;
    case DT_U64: matmul_uint64_t(m, n, k, a, b, c); return 0;
    default:
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "matmul of %s is not compiled ahead of time",
                            dtype_name(dtype));
    }
}

/* A region compiled for more than one broadcast pattern: the first variant whose guard passes
 * runs (a guard fails before anything is allocated or written); the last one's error stands. */
/* the variant of each region that ran last on this thread: tried first next time (a guard
 * failure formats its message, and each call tried the same failing variants again). Keyed by
 * the first variant's kernel, which is static: the list itself is a compound literal in the
 * calling function, whose address another call site may reuse (a memo keyed by it sent a
 * sentence-embedding model's region to a kernel past the end of another list). */
typedef struct {
    const dlvm_rt_kernel *first;
    int n, index;
} variant_memo;

static __thread variant_memo variant_memos[MEMO_SLOTS];

HIDDEN int dlvm_rt_region_any(dlvm_ctx *ctx, const dlvm_rt_kernel *const *variants, int n,
                              dlvm_val *const *ins, dlvm_val *outs) {
    variant_memo *memo = &variant_memos[((uintptr_t)variants[0] >> 6) % MEMO_SLOTS];
    int first = memo->first == variants[0] && memo->n == n && memo->index < n ? memo->index : 0;
    for (int t = 0; t < n; t++) {
        int i = t == 0 ? first : (t <= first ? t - 1 : t);    /* first, then the others */
        int rc = dlvm_rt_region(ctx, variants[i], ins, outs);
        if (rc == DLVM_RT_OK) {
            memo->first = variants[0];
            memo->n = n;
            memo->index = i;
        }
        if (rc != DLVM_RT_ERR_GUARD || t == n - 1) return rc;
        ctx->status->code = DLVM_RT_OK;         /* try the next variant */
        ctx->status->message[0] = 0;
    }
    return 0;
}

/* f32 products of a batched matmul, several to a thread: [lo, hi) of the batch, each on this
 * thread. A batch of small products (an attention's 32 heads of [32, 16] x [16, 32]) ran one
 * after another on the calling thread, each too small to split. */
typedef struct {
    const float *a, *b;
    float *c;
    int64_t m, n, k;
    int batch_rank, ar, br;
    const int64_t *batch, *as, *bs;
    int failed;
} batched_products;

static void batched_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    batched_products *j = arg;
    int64_t m = j->m, n = j->n, k = j->k;
    for (int64_t t = lo; t < hi; t++) {
        int64_t oa = 0, ob = 0, sa = 1, sb = 1, rest = t;
        for (int d = j->batch_rank - 1; d >= 0; d--) {
            int64_t i = rest % j->batch[d];
            rest /= j->batch[d];
            int ia = d - (j->batch_rank - (j->ar - 2)), ib = d - (j->batch_rank - (j->br - 2));
            if (ia >= 0) { if (j->as[ia] != 1) oa += i * sa; sa *= j->as[ia]; }
            if (ib >= 0) { if (j->bs[ib] != 1) ob += i * sb; sb *= j->bs[ib]; }
        }
        const float *a = j->a + oa * m * k, *b = j->b + ob * k * n;
        float *c = j->c + t * m * n;
        if (m < DLVM_GEMM_MIN_ROWS) {
            few_rows(m, n, k, a, b, c);
            continue;
        }
        gemm_call g = {.m = m, .n = n, .k = k, .a = a, .b = b, .c = c, .by_rows = 1};
        gemm_task(&g, 0, (m + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR, 0);
        if (g.failed) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    }
}

HIDDEN int dlvm_rt_matmul(dlvm_ctx *ctx, const dlvm_val *a, const dlvm_val *b, dlvm_val *out) {
    /* NumPy's matmul: a vector a is a row, a vector b a column; batch dims broadcast */
    int64_t as[DLVM_MAX_RANK + 1], bs[DLVM_MAX_RANK + 1];
    int ar = a->rank, br = b->rank;
    if (ar == 1) { as[0] = 1; as[1] = a->shape[0]; ar = 2; } else memcpy(as, a->shape, 8 * (size_t)ar);
    if (br == 1) { bs[0] = b->shape[0]; bs[1] = 1; br = 2; } else memcpy(bs, b->shape, 8 * (size_t)br);
    int64_t m = as[ar - 2], k = as[ar - 1], n = bs[br - 1];
    if (bs[br - 2] != k)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "matmul inner dimensions %lld and %lld differ",
                            (long long)k, (long long)bs[br - 2]);
    int batch_rank = (ar > br ? ar : br) - 2;
    int64_t batch[DLVM_MAX_RANK];
    for (int d = 0; d < batch_rank; d++) {
        int ia = d - (batch_rank - (ar - 2)), ib = d - (batch_rank - (br - 2));
        int64_t sa = ia >= 0 ? as[ia] : 1, sb = ib >= 0 ? bs[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "matmul batch dims do not broadcast");
        batch[d] = sa != 1 ? sa : sb;
    }
    int64_t shape[DLVM_MAX_RANK];
    int rank = 0;
    for (int d = 0; d < batch_rank; d++) shape[rank++] = batch[d];
    if (a->rank > 1) shape[rank++] = m;
    if (b->rank > 1) shape[rank++] = n;
    if (dlvm_rt_alloc(ctx, out, a->dtype, rank, shape)) return 1;
    size_t item = dlvm_rt_itemsize(a->dtype);
    int64_t nbatch = numel_of(batch_rank, batch);
    /* b shared by every batch (2-D or 1-D): one product of all of a's rows */
    if (br == 2 && b->rank <= 2)
        return product(ctx, a->dtype, nbatch * m, n, k, a->data, b->data, out->data);
    int threads = dlvm_rt_threads();
    /* across the pool by products where each is too small to split itself, or there are
     * enough of them for every thread */
    if (a->dtype == DT_F32 && threads > 1 && nbatch >= 2 && m * n * k > 0 &&
        nbatch * m * n * k >= DLVM_GEMM_PARALLEL_MACS / 16 &&
        (m * n * k < DLVM_GEMM_PARALLEL_MACS / 16 || nbatch >= 2 * threads)) {
        batched_products j = {a->data, b->data, out->data, m, n, k, batch_rank, ar, br, batch, as,
                              bs, 0};
        dlvm_rt_parallel(batched_task, &j, nbatch, threads < nbatch ? threads : nbatch);
        if (j.failed) return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (GEMM packing)");
        return 0;
    }
    int64_t idx[DLVM_MAX_RANK] = {0};
    for (int64_t t = 0; t < nbatch; t++) {
        int64_t oa = 0, ob = 0, sa = 1, sb = 1;
        for (int d = batch_rank - 1; d >= 0; d--) {
            int ia = d - (batch_rank - (ar - 2)), ib = d - (batch_rank - (br - 2));
            if (ia >= 0) { if (as[ia] != 1) oa += idx[d] * sa; sa *= as[ia]; }
            if (ib >= 0) { if (bs[ib] != 1) ob += idx[d] * sb; sb *= bs[ib]; }
        }
        if (product(ctx, a->dtype, m, n, k, (const char *)a->data + (size_t)(oa * m * k) * item,
                    (const char *)b->data + (size_t)(ob * k * n) * item,
                    (char *)out->data + (size_t)(t * m * n) * item))
            return 1;
        for (int d = batch_rank - 1; d >= 0; d--) {
            if (++idx[d] < batch[d]) break;
            idx[d] = 0;
        }
    }
    return 0;
}

/* ---- convolution and pooling (NCHW) -------------------------------------------------------- */

#define CONV_DIRECT(T)                                                                        \
    static void conv_##T(const T *x, const T *w, const T *bias, T *y, int64_t n, int64_t c,    \
                         int64_t h, int64_t wd, int64_t o, int64_t kh, int64_t kw, int64_t ho, \
                         int64_t wo, const int64_t *s, const int64_t *p, const int64_t *d,     \
                         int64_t groups) {                                                    \
        int64_t cg = c / groups, og = o / groups;                                             \
        for (int64_t b = 0; b < n; b++)                                                       \
            for (int64_t oc = 0; oc < o; oc++) {                                              \
                int64_t g = oc / og;                                                          \
                for (int64_t i = 0; i < ho; i++)                                              \
                    for (int64_t j = 0; j < wo; j++) {                                        \
                        T acc = bias ? bias[oc] : (T)0;                                       \
                        for (int64_t ci = 0; ci < cg; ci++)                                   \
                            for (int64_t u = 0; u < kh; u++) {                                \
                                int64_t yy = i * s[0] - p[0] + u * d[0];                      \
                                if (yy < 0 || yy >= h) continue;                              \
                                for (int64_t v = 0; v < kw; v++) {                            \
                                    int64_t xx = j * s[1] - p[1] + v * d[1];                  \
                                    if (xx < 0 || xx >= wd) continue;                         \
                                    acc += x[((b * c + g * cg + ci) * h + yy) * wd + xx] *    \
                                           w[((oc * cg + ci) * kh + u) * kw + v];             \
                                }                                                             \
                            }                                                                 \
                        y[((b * o + oc) * ho + i) * wo + j] = acc;                            \
                    }                                                                         \
            }                                                                                 \
    }
CONV_DIRECT(float)
CONV_DIRECT(double)

/* Grouped and depthwise f32 convolution (few input channels per output channel, where im2col
 * and a product gain nothing). The input channels of a plane's group are copied, zero-padded,
 * into s0 x s1 phase images: phase (pr, pc) holds the input at rows r*s0 + pr and columns
 * c*s1 + pc (of the padded image), R rows of C columns, where C is the output width plus the
 * kernel's reach in phase columns. Then the tap (ci, u, v) reads its phase image at a fixed
 * offset, and the whole output plane, computed C columns wide (the columns past the output width
 * are discarded), is one flat sum over the taps of a weight times a contiguous run of the phase
 * image: no bounds per row or tap, any stride and dilation, and vectors as long as the plane.
 * The flat sum goes in chunks of DW_CHUNK outputs held in registers across all taps. A 7x7 on
 * an 8x8 image was a loop of 8 with border bounds per tap and row before (the ConvNeXt block's
 * depthwise convolution was half its time). Planes (image, output channel) split across the
 * pool; consecutive planes of one group and image share their phase images. */
#define DW_CHUNK 64             /* four vectors of 16 */
typedef float dw_vec __attribute__((vector_size(64)));

static inline dw_vec dw_splat(float v) {
    return (dw_vec){v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v};
}

/* Copy or zero n floats inline: an image's rows are short (8 to 64 floats), and a library call
 * per row (memcpy / memset, or a plain loop the compiler turns into one) cost more than the
 * copy: 9% of a small CNN's time at batch 32, 8% of a MobileNet's. The empty asm keeps the
 * compilers from recognizing the loops as memcpy / memset again. */
static inline void copy_f32(float *restrict dst, const float *restrict src, int64_t n) {
    int64_t q = 0;
    for (; q + 16 <= n; q += 16) {
        dw_vec v;
        memcpy(&v, src + q, sizeof v);
        memcpy(dst + q, &v, sizeof v);
        __asm__ volatile("" ::: "memory");
    }
    if (n - q >= 8) { memcpy(dst + q, src + q, 32); q += 8; }
    if (n - q >= 4) { memcpy(dst + q, src + q, 16); q += 4; }
    if (n - q >= 2) { memcpy(dst + q, src + q, 8); q += 2; }
    if (n - q >= 1) dst[q] = src[q];
}

static inline void zero_f32(float *dst, int64_t n) {
    int64_t q = 0;
    dw_vec z = dw_splat(0.0f);
    for (; q + 16 <= n; q += 16) {
        memcpy(dst + q, &z, sizeof z);
        __asm__ volatile("" ::: "memory");
    }
#ifdef __AVX512F__
    if (q < n) _mm512_mask_storeu_ps(dst + q, (__mmask16)((1u << (n - q)) - 1), _mm512_setzero_ps());
#else
    for (; q < n; q++) {
        dst[q] = 0.0f;
        __asm__ volatile("" ::: "memory");
    }
#endif
}

typedef struct {
    const float *x, *w, *bias;
    float *y;
    int64_t c, h, wd, o, kh, kw, ho, wo, cg, og;
    const int64_t *s, *p, *d;
    int failed;
    int64_t n;          /* images (depthwise_lanes_task) */
} grouped_conv;

/* dst[c] = src[2 * c] for c < n: a stride-2 convolution's column phase. With AVX-512, 16 per
 * step from two masked loads and one permute (the loads read no element past src[2n - 2]: the
 * source may be a caller's array); the scalar strided copy was a fifth of EfficientNet's
 * depthwise convolutions. */
static void take_even(float *restrict dst, const float *restrict src, int64_t n) {
    int64_t c = 0;
#ifdef __AVX512F__
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                           30);
    for (; c < n; c += 16) {
        int64_t m = n - c < 16 ? n - c : 16, k = 2 * m - 1;    /* outputs, source floats */
        __mmask16 lo = (__mmask16)(k >= 16 ? 0xFFFF : (1u << k) - 1);
        __mmask16 hi = (__mmask16)(k > 16 ? (1u << (k - 16)) - 1 : 0);
        __m512 a = _mm512_maskz_loadu_ps(lo, src + 2 * c);
        __m512 b = _mm512_maskz_loadu_ps(hi, src + 2 * c + 16);
        _mm512_mask_storeu_ps(dst + c, (__mmask16)((1u << m) - 1),
                              _mm512_permutex2var_ps(a, even, b));
    }
#endif
    for (; c < n; c++) dst[c] = src[2 * c];
}

static void grouped_conv_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    grouped_conv *g = arg;
    int64_t s0 = g->s[0], s1 = g->s[1], p0 = g->p[0], p1 = g->p[1], d0 = g->d[0], d1 = g->d[1];
    int64_t kh = g->kh, kw = g->kw, h = g->h, wd = g->wd, ho = g->ho, wo = g->wo, cg = g->cg;
    int64_t rows = ho + (kh - 1) * d0 / s0, cols = wo + (kw - 1) * d1 / s1;
    int64_t phases = s0 * s1, phase_len = rows * cols + cols + DW_CHUNK;
    int64_t flat = ho * cols, flat_r = (flat + DW_CHUNK - 1) / DW_CHUNK * DW_CHUNK;
    int64_t taps = cg * kh * kw;
    size_t bytes = (size_t)(cg * phases * phase_len + flat_r) * 4 + (size_t)taps * 8 + 64;
    float *buf = buffer_alloc(&bytes);
    if (!buf) {
        __atomic_store_n(&g->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float *acc = buf + cg * phases * phase_len;
    int64_t *off = (int64_t *)(acc + flat_r);
    for (int64_t ci = 0, t = 0; ci < cg; ci++)
        for (int64_t u = 0; u < kh; u++)
            for (int64_t v = 0; v < kw; v++, t++)
                off[t] = (ci * phases + (u * d0 % s0) * s1 + v * d1 % s1) * phase_len +
                         (u * d0 / s0) * cols + v * d1 / s1;
    int64_t built = -1;                 /* the (image, group) whose phase images are in buf */
    for (int64_t plane = lo; plane < hi; plane++) {
        int64_t b = plane / g->o, oc = plane % g->o, grp = oc / g->og;
        if (b * g->o + grp != built) {
            built = b * g->o + grp;
            for (int64_t ci = 0; ci < cg; ci++) {
                const float *xp = g->x + (b * g->c + grp * cg + ci) * h * wd;
                for (int64_t pr = 0; pr < s0; pr++)
                    for (int64_t pc = 0; pc < s1; pc++) {
                        float *ph = buf + (ci * phases + pr * s1 + pc) * phase_len;
                        /* columns [c0, c1) read the image (column c * s1 + pc - p1) */
                        int64_t sh = pc - p1;
                        int64_t c0 = sh >= 0 ? 0 : (-sh + s1 - 1) / s1;
                        int64_t c1 = wd - 1 - sh < 0 ? 0 : (wd - 1 - sh) / s1 + 1;
                        if (c1 > cols) c1 = cols;
                        if (c0 > c1) c0 = c1;
                        for (int64_t r = 0; r < rows; r++) {
                            int64_t yy = r * s0 + pr - p0;
                            float *dst = ph + r * cols;
                            if (yy < 0 || yy >= h) {
                                zero_f32(dst, cols);
                                continue;
                            }
                            const float *xr = xp + yy * wd;
                            zero_f32(dst, c0);
                            if (s1 == 1)
                                copy_f32(dst + c0, xr + c0 + sh, c1 - c0);
                            else if (s1 == 2)
                                take_even(dst + c0, xr + 2 * c0 + sh, c1 - c0);
                            else
                                for (int64_t c = c0; c < c1; c++) dst[c] = xr[c * s1 + sh];
                            zero_f32(dst + c1, cols - c1);
                        }
                        memset(ph + rows * cols, 0, (size_t)(cols + DW_CHUNK) * 4);
                    }
            }
        }
        const float *wt = g->w + oc * taps;
        float b0 = g->bias ? g->bias[oc] : 0.0f;
        for (int64_t q0 = 0; q0 < flat; q0 += DW_CHUNK) {
            /* vector types, not a loop: a loop over q inside the loop over taps was vectorized
             * over the taps by GCC (gathers) */
            dw_vec a0 = dw_splat(b0), a1 = a0, a2 = a0, a3 = a0;
            for (int64_t t = 0; t < taps; t++) {
                const float *src = buf + off[t] + q0;
                dw_vec wv = dw_splat(wt[t]), x0, x1, x2, x3;
                memcpy(&x0, src, sizeof x0);
                memcpy(&x1, src + 16, sizeof x1);
                memcpy(&x2, src + 32, sizeof x2);
                memcpy(&x3, src + 48, sizeof x3);
                a0 += wv * x0;
                a1 += wv * x1;
                a2 += wv * x2;
                a3 += wv * x3;
            }
            memcpy(acc + q0, &a0, sizeof a0);
            memcpy(acc + q0 + 16, &a1, sizeof a1);
            memcpy(acc + q0 + 32, &a2, sizeof a2);
            memcpy(acc + q0 + 48, &a3, sizeof a3);
        }
        float *y = g->y + plane * ho * wo;
        for (int64_t i = 0; i < ho; i++) copy_f32(y + i * wo, acc + i * cols, wo);
    }
    buffer_free(buf, bytes);
}

/* Ungrouped f32 convolution of images [lo, hi): each image padded into a buffer of this thread
 * (with the slack the kernel may read past its end), then the GEMM packs its patch panels
 * straight from it (implicit GEMM, as jit/targets/cpu/conv.py): out[b] [O, Ho*Wo] = w [O,
 * C*kH*kW] x patches. `split`: the product may split across the pool (one image per call). */
typedef struct {
    const float *x, *w, *bias;
    float *y;
    int64_t c, h, wd, o, kh, kw, ho, wo;
    const int64_t *s, *p, *d;
    int pointwise, split, failed;
    dlvm_ctx *ctx;
    const float *w_packed;      /* the weights packed once per call (NULL: each product packs) */
    int64_t w_padded;           /* rows of w_packed in all */
    int64_t w_row0;             /* rows of w_packed before this job's first (a group's) */
    int relu;                   /* max(., 0) as the products store */
    int64_t group;              /* images per product (CONV_GROUP_COLUMNS) */
    const int64_t *b_rows;      /* non-NULL: products read the (padded) image in place, row k of
                                 * the patch matrix at b_rows[k] (conv_reads_in_place) */
    int64_t x_image, y_image;   /* floats from one image to the next in x and y: C*H*W and
                                 * O*Ho*Wo, or the whole tensor's for one group's channels */
} conv_images;

/* y = max(y, 0) with NaN kept (the ISA's relu) */
static void relu_in_place(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = y[i] < 0.0f ? 0.0f : y[i];
}

/* out [m, n] = a [m, k] x b (or the patches of an image, with geometry) on this thread, then
 * + bias per row (NULL: none), then relu where asked */
static int gemm_here(int64_t m, int64_t n, int64_t k, const float *a, const float *a_packed,
                     int64_t a_padded, int64_t a_row0, const float *b, const int64_t *geometry,
                     const int64_t *b_rows, const float *bias, int relu, float *c, int64_t ldc) {
    if (!geometry && !b_rows && !a_packed && m < DLVM_GEMM_MIN_ROWS) {
        few_rows(m, n, k, a, b, c);
        if (bias)
            for (int64_t i = 0; i < m; i++)
                for (int64_t q = 0; q < n; q++) c[i * n + q] += bias[i];
        if (relu) relu_in_place(c, m * n);
        return 0;
    }
    gemm_call g = {m, n, k, a, b, c, 1, 0, 0, geometry, a_packed, a_padded, bias, relu, b_rows, ldc,
                   a_row0};
    gemm_task(&g, 0, (m + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR, 0);
    return g.failed;
}

/* one image's product: out [O, px] = w x (the image, or its patches with geometry, or read in
 * place with b_rows) + bias, on this thread or split across the pool */
static int conv_product(conv_images *j, int64_t px, int64_t kk, const float *b,
                        const int64_t *geometry, const int64_t *b_rows, float *yb) {
    if (!j->split)
        return gemm_here(j->o, px, kk, j->w, j->w_packed, j->w_padded, j->w_row0, b, geometry,
                         b_rows, j->bias, j->relu, yb, 0);
    if (!geometry && !b_rows && !j->w_packed && j->o < DLVM_GEMM_MIN_ROWS) {
        int rc = sgemm(j->ctx, j->o, px, kk, j->w, b, yb);
        if (!rc && j->bias)
            for (int64_t i = 0; i < j->o; i++)
                for (int64_t q = 0; q < px; q++) yb[i * px + q] += j->bias[i];
        if (!rc && j->relu) relu_in_place(yb, j->o * px);
        return rc;
    }
    gemm_call g = {j->o, px, kk, j->w, b, yb, 1, 0, 0, geometry, j->w_packed, j->w_padded, j->bias,
                   j->relu, b_rows, 0, j->w_row0};
    return gemm_split(j->ctx, &g, b_rows ? 1 : geometry ? 2 : 3);
}

/* planes [lo, hi) of images copied into a padded buffer (zeroed first where `zero`: one image
 * split across the pool, whose planes each part zeroes as it copies them) */
typedef struct {
    const float *x;
    float *padded;
    int64_t h, wd, hp, wp;
    const int64_t *p;
    int zero;
    int64_t c, x_image;         /* channels per image, floats from one image to the next */
} pad_job;

static void pad_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const pad_job *j = arg;
    int64_t h = j->h, wd = j->wd, hp = j->hp, wp = j->wp;
    int64_t top = j->p[0], left = j->p[1], right = wp - left - wd, bottom = hp - top - h;
#ifdef __AVX512F__
    /* rows of up to 64 floats by vectors (below): each vector's lanes of the padded row, and
     * those of them the image's row fills */
    int nv = wp <= 64 && left >= 0 && right >= 0 ? (int)((wp + 15) / 16) : 0;
    __mmask16 in_mask[4] = {0}, out_mask[4] = {0};
    for (int v = 0; v < nv; v++)
        for (int l = 0; l < 16; l++) {
            int64_t at = 16 * v + l;
            if (at < wp) out_mask[v] |= (__mmask16)(1u << l);
            if (at >= left && at < left + wd) in_mask[v] |= (__mmask16)(1u << l);
        }
#endif
    for (int64_t ci = lo; ci < hi; ci++) {      /* image ci / c, channel ci % c */
        float *plane = j->padded + ci * hp * wp;
        /* each float written once, the border's zeros row by row beside its copy (the whole
         * plane zeroed first, then copied into, was 4% of ResNet-18's time at batch 1) */
        if (j->zero) {
            zero_f32(plane, top * wp);
            zero_f32(plane + (top + h) * wp, bottom * wp);
        }
        const float *rows = j->x + ci / j->c * j->x_image + ci % j->c * h * wd;
#ifdef __AVX512F__
        if (nv) {
            /* padded rows of at most four vectors (a small CNN's 32x32 and 16x16 images, a
             * detector's 4x4 levels): per vector of the row one masked load, its zeros from
             * the mask, and one masked store, where the border's zeros and the copy took a
             * loop trip each (pad_task was 13-18% of such a convolution). The loads' addresses
             * are formed as integers: one may lie before the row, in lanes its mask leaves
             * unread. */
            for (int64_t i = 0; i < h; i++) {
                uintptr_t from = (uintptr_t)(rows + i * wd) - (uintptr_t)left * 4;
                float *to = plane + (i + top) * wp;
                for (int v = 0; v < nv; v++) {
                    const void *at = (const void *)(from + 64 * (uintptr_t)v);
                    _mm512_mask_storeu_ps(to + 16 * v, out_mask[v], _mm512_maskz_loadu_ps(in_mask[v], at));
                }
            }
            continue;
        }
#endif
        for (int64_t i = 0; i < h; i++) {
            float *dst = plane + (i + top) * wp + left;
            const float *row = rows + i * wd;
            if (j->zero) {
                zero_f32(dst - left, left);
                zero_f32(dst + wd, right);
            }
            if (wd <= 64)       /* a short row: inline, not a library call */
                copy_f32(dst, row, wd);
            else
                memcpy(dst, row, (size_t)wd * 4);
        }
    }
}

/* rows [lo, hi) of (channel, output row) of a product on the padded width copied out */
typedef struct {
    const float *wide;
    float *y;
    int64_t ho, wo, wp, wide_n;
} kept_job;

static void kept_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const kept_job *k = arg;
    for (int64_t r = lo; r < hi; r++)
        copy_f32(k->y + r * k->wo, k->wide + (r / k->ho) * k->wide_n + (r % k->ho) * k->wp, k->wo);
}

/* output rows [lo, hi) of one image's stride-1 convolution read in place, a product each */
typedef struct {
    conv_images *j;
    const float *src;       /* the padded image */
    float *yb;              /* its output */
    int64_t kk, wp;
    int failed;
} conv_rows;

static void conv_rows_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    conv_rows *r = arg;
    const conv_images *j = r->j;
    for (int64_t y = lo; y < hi; y++)
        if (gemm_here(j->o, j->wo, r->kk, j->w, j->w_packed, j->w_padded, j->w_row0,
                      r->src + y * r->wp, NULL,
                      j->b_rows, j->bias, j->relu, r->yb + y * j->wo, j->ho * j->wo)) {
            __atomic_store_n(&r->failed, 1, __ATOMIC_RELAXED);
            return;
        }
}

/* the products' columns: images of few output pixels are multiplied `group` at a time (their
 * pixels side by side), up to this many columns, so that the register tiles fill */
#define CONV_GROUP_COLUMNS (4 * DLVM_GEMM_NR)

static void conv_images_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    conv_images *j = arg;
    const int64_t *s = j->s, *p = j->p, *d = j->d;
    int64_t c = j->c, h = j->h, wd = j->wd, o = j->o;
    int64_t kk = c * j->kh * j->kw, px = j->ho * j->wo;
    int64_t hp = h + p[0] + p[2], wp = wd + p[1] + p[3], plane = c * hp * wp;
    int64_t group = j->group < hi - lo ? j->group : hi - lo;
    size_t padded_bytes = ((size_t)(group * plane + DLVM_GEMM_SLACK + 16) * 4 + 63) / 64 * 64;
    /* read in place, the product runs over the padded width: output rows [Ho, Wp], of which
     * the first Wo columns are kept (wide_n columns: the last row's padding is not computed) */
    int wide = j->b_rows && !j->pointwise && wp != j->wo;
    /* output rows of whole vectors: one product per output row, straight into the output (no
     * padding columns computed, nothing copied out): 0.80-0.93x the time of the padded width
     * at 16 to 64 pixels a row. Rows of 14 or 28 (vectors and a tail) were slower. */
    int by_rows = wide && j->wo % DLVM_GEMM_VW == 0;
    if (by_rows) wide = 0;
    int64_t wide_n = (j->ho - 1) * wp + j->wo;
    size_t out_bytes = group > 1 ? (size_t)(o * group * px) * 4 : wide ? (size_t)(o * wide_n) * 4 : 0;
    float *padded = j->pointwise ? NULL : buffer_alloc(&padded_bytes);
    float *staging = out_bytes ? buffer_alloc(&out_bytes) : NULL;
    if ((!j->pointwise && !padded) || (out_bytes && !staging)) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        if (padded) buffer_free(padded, padded_bytes);
        if (staging) buffer_free(staging, out_bytes);
        return;
    }
    /* the border stays zero for every image; one image split across the pool zeroes each
     * plane as it copies it in (pad_task) */
    if (padded && !j->split) memset(padded, 0, padded_bytes);
    if (padded && j->split) {
        size_t used = (size_t)(group * plane) * 4;
        memset((char *)padded + used, 0, padded_bytes - used);
    }
    /* the patches of `group` consecutive images: padded ones in this thread's buffer, or (a
     * pointwise convolution) the images themselves */
    int64_t geometry[11] = {j->kh, j->kw, j->wo, s[0], s[1], d[0], d[1], hp * wp, wp, px, plane};
    if (j->pointwise) {
        int64_t direct[11] = {1, 1, wd, 1, 1, 1, 1, h * wd, wd, px, j->x_image};
        memcpy(geometry, direct, sizeof direct);
    }
    for (int64_t b = lo; b < hi; b += group) {
        int64_t g = group < hi - b ? group : hi - b;
        float *yb = j->y + b * j->y_image;
        int rc;
        if (j->pointwise && g == 1) {
            rc = conv_product(j, px, kk, j->x + b * j->x_image, NULL, j->b_rows, yb);
        } else {
            const float *src = j->x + b * j->x_image;
            if (!j->pointwise) {
                src = padded;
                pad_job pj = {j->x + b * j->x_image, padded, h, wd, hp, wp, p, j->split, c,
                              j->x_image};
                if (j->split && (size_t)(g * plane) * 4 >= PARALLEL_COPY_BYTES)
                    dlvm_rt_parallel(pad_task, &pj, g * c, dlvm_rt_threads());
                else
                    pad_task(&pj, 0, g * c, 0);
            }
            if (by_rows) {          /* in place, output row by output row */
                conv_rows rows = {j, src, yb, kk, wp, 0};
                if (j->split)       /* one image: its rows split across the pool */
                    dlvm_rt_parallel(conv_rows_task, &rows, j->ho, dlvm_rt_threads());
                else
                    conv_rows_task(&rows, 0, j->ho, 0);
                rc = rows.failed;
            } else if (j->b_rows) { /* in place: one image, on the padded width where it has one */
                rc = conv_product(j, wide ? wide_n : px, kk, src, NULL, j->b_rows, wide ? staging : yb);
                if (!rc && wide) {
                    kept_job kj = {staging, yb, j->ho, j->wo, wp, wide_n};
                    if (j->split && (size_t)(o * px) * 4 >= PARALLEL_COPY_BYTES)
                        dlvm_rt_parallel(kept_task, &kj, o * j->ho, dlvm_rt_threads());
                    else
                        kept_task(&kj, 0, o * j->ho, 0);
                }
            } else
                rc = conv_product(j, g * px, kk, src, geometry, NULL, g > 1 ? staging : yb);
            if (!rc && g > 1 && !j->b_rows)       /* [O, g * px] to g images of [O, px] */
                for (int64_t q = 0; q < g; q++)
                    for (int64_t oc = 0; oc < o; oc++)
                        copy_f32(yb + q * j->y_image + oc * px, staging + oc * g * px + q * px, px);
        }
        if (rc) {
            __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    if (padded) buffer_free(padded, padded_bytes);
    if (staging) buffer_free(staging, out_bytes);
}

/* Depthwise convolutions (one input channel per group) of small planes, 16 output channels
 * at a time, one per vector lane: the planes are transposed into a zero-bordered [Hp, Wp, 16]
 * image, each output pixel is a vector sum over the taps with per-lane weights, and the
 * [Ho, Wo, 16] result is transposed back. The per-plane form (grouped_conv_task) builds padded
 * phase images per plane and computes whole chunks of 64 outputs: an 8x8 plane's 3x3, stride-2
 * convolution computed 64 lanes for 16 outputs after building four phase images, 6.7x
 * onnxruntime's time (EfficientNet's last blocks). Units are (channel block, image), block-major,
 * so consecutive units share their transposed weights. */

/* Where the lanes pay, measured at batch 32 and 1, 2 threads, against the per-plane form: strided
 * or wider than 3x3 (phase images, or columns of padding, per plane) at up to 56x56 outputs
 * (0.6-0.8x the time; a 32-channel 3x3/2 at 32x32 1.15x); 3x3 stride 1 where the per-plane
 * form's chunks of 64 waste half a small plane (8x8: 0.3-0.5x) or the image is small (144
 * channels at 16x16 0.7x): at 576 channels of 14x14 the sixteen planes read and written side
 * by side were 1.6x the per-plane form's one at a time. */
static int depthwise_by_lanes(int64_t c, int64_t h, int64_t wd, int64_t pixels, int64_t taps,
                              int64_t stride) {
    if (stride > 1 || taps > 9) return pixels <= 4096;
    return pixels <= 64 || (pixels <= 256 && c * h * wd <= 65536);
}

/* r[i][j] <-> r[j][i] for 16 vectors of 16: at step B, rows i and i + B (i & B == 0) swap
 * their off-diagonal B x B blocks, one two-vector shuffle per row; four steps swap every bit of
 * the row and column numbers (64 permutes for 256 floats, where scalar copies were 512 moves). */
#define DW_T8_LO 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define DW_T8_HI 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define DW_T4_LO 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define DW_T4_HI 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define DW_T2_LO 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define DW_T2_HI 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define DW_T1_LO 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define DW_T1_HI 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
#if defined(__clang__)
#define DW_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
typedef int32_t dw_idx __attribute__((vector_size(64)));
#define DW_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, (dw_idx){__VA_ARGS__})
#endif
#define DW_TSTEP(B)                                                                              \
    for (int i = 0; i < 16; i++)                                                                 \
        if (!(i & B)) {                                                                          \
            dw_vec lo = DW_SHUFFLE(r[i], r[i + B], DW_T##B##_LO);                                \
            dw_vec hi = DW_SHUFFLE(r[i], r[i + B], DW_T##B##_HI);                                \
            r[i] = lo;                                                                           \
            r[i + B] = hi;                                                                       \
        }

static inline void transpose16(dw_vec r[16]) {
    DW_TSTEP(8)
    DW_TSTEP(4)
    DW_TSTEP(2)
    DW_TSTEP(1)
}

/* n (< 16) floats into the first lanes of a zero vector */
static inline dw_vec load_part(const float *src, int64_t n) {
    dw_vec v = dw_splat(0.0f);
    memcpy(&v, src, (size_t)n * 4);
    return v;
}

/* 16 [h, w] planes (NULL: a lane of `fill`) into the lanes of an image of rows `wp` pixels wide,
 * pixel (i, j) at (i + p0, j + p1): 16 pixels of the 16 planes per transpose, whole vectors
 * where a chunk is whole (a copy of n floats went through the stack and cost more than the
 * pooling), the pixel's place stepped, not divided */
static void planes_to_lanes(const float *const *src, int64_t h, int64_t w, float *in,
                            int64_t wp, int64_t p0, int64_t p1, dw_vec fill) {
    int whole = 1;          /* all 16 planes there: the chunks' loops unroll in full */
    for (int64_t l = 0; l < 16; l++) whole &= src[l] != NULL;
    for (int64_t q0 = 0; q0 < h * w; q0 += 16) {
        int64_t n = h * w - q0 < 16 ? h * w - q0 : 16;
        dw_vec r[16];
        if (whole && n == 16) {
            /* constant bounds keep the 16 vectors in registers (a loop to a run-time bound
             * made the compiler keep them on the stack: the transposes cost 3x a depthwise
             * convolution's multiplies) */
#pragma GCC unroll 16
            for (int l = 0; l < 16; l++) memcpy(&r[l], src[l] + q0, sizeof r[l]);
            transpose16(r);
            int64_t i = q0 / w, j = q0 % w;
#pragma GCC unroll 16
            for (int k = 0; k < 16; k++) {
                memcpy(in + ((i + p0) * wp + j + p1) * 16, &r[k], sizeof r[k]);
                if (++j == w) j = 0, i++;
            }
            continue;
        }
        for (int64_t l = 0; l < 16; l++)
            if (!src[l]) r[l] = fill;
            else if (n == 16) memcpy(&r[l], src[l] + q0, sizeof r[l]);
            else r[l] = load_part(src[l] + q0, n);
        transpose16(r);
        for (int64_t k = 0, i = q0 / w, j = q0 % w; k < n; k++) {
            memcpy(in + ((i + p0) * wp + j + p1) * 16, &r[k], sizeof r[k]);
            if (++j == w) j = 0, i++;
        }
    }
}

/* the first `lanes` lanes of `pixels` vectors back into planes dst[0 .. lanes) */
static void lanes_to_planes(const float *res, int64_t pixels, float *const *dst, int64_t lanes) {
    for (int64_t q0 = 0; q0 < pixels; q0 += 16) {
        int64_t n = pixels - q0 < 16 ? pixels - q0 : 16;
        dw_vec r[16];
        if (lanes == 16 && n == 16) {       /* unrolled in full, as in planes_to_lanes */
#pragma GCC unroll 16
            for (int k = 0; k < 16; k++) memcpy(&r[k], res + (q0 + k) * 16, sizeof r[k]);
            transpose16(r);
#pragma GCC unroll 16
            for (int l = 0; l < 16; l++) memcpy(dst[l] + q0, &r[l], sizeof r[l]);
            continue;
        }
        for (int64_t k = 0; k < 16; k++)
            if (k < n) memcpy(&r[k], res + (q0 + k) * 16, sizeof r[k]);
            else r[k] = dw_splat(0.0f);
        transpose16(r);
        for (int64_t l = 0; l < lanes; l++)
            if (n == 16) memcpy(dst[l] + q0, &r[l], sizeof r[l]);
            else memcpy(dst[l] + q0, &r[l], (size_t)n * 4);
    }
}

static void depthwise_lanes_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    grouped_conv *g = arg;
    int64_t n = g->n, o = g->o, h = g->h, wd = g->wd, ho = g->ho, wo = g->wo, kh = g->kh, kw = g->kw;
    int64_t s0 = g->s[0], s1 = g->s[1], d0 = g->d[0], d1 = g->d[1], p0 = g->p[0], p1 = g->p[1];
    int64_t hp = h + g->p[0] + g->p[2], wp = wd + g->p[1] + g->p[3], taps = kh * kw;
    size_t bytes = (size_t)(hp * wp + ho * wo + taps + 1) * 16 * 4 + 64;
    float *buf = buffer_alloc(&bytes);
    if (!buf) {
        __atomic_store_n(&g->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float *in = buf, *res = in + hp * wp * 16, *wt = res + ho * wo * 16, *bias = wt + taps * 16;
    memset(in, 0, (size_t)(hp * wp * 16) * 4);            /* the border, for every unit */
    int64_t built = -1;
    for (int64_t unit = lo; unit < hi; unit++) {
        int64_t blk = unit / n, b = unit % n, c0 = blk * 16, lanes = o - c0 < 16 ? o - c0 : 16;
        if (blk != built) {         /* weights [taps, 16] and bias [16], zero past the last lane */
            built = blk;
            for (int64_t t = 0; t < taps; t++)
                for (int64_t l = 0; l < 16; l++)
                    wt[t * 16 + l] = l < lanes ? g->w[(c0 + l) * taps + t] : 0.0f;
            for (int64_t l = 0; l < 16; l++)
                bias[l] = l < lanes && g->bias ? g->bias[c0 + l] : 0.0f;
        }
        /* the planes into the bordered image (lanes past `lanes` are zero: their weights are
         * zero and they are not stored) */
        const float *xs[16];
        float *ys[16];
        for (int64_t l = 0; l < 16; l++) {
            xs[l] = l < lanes ? g->x + (b * g->c + (c0 + l) / g->og) * h * wd : NULL;
            ys[l] = l < lanes ? g->y + (b * o + c0 + l) * ho * wo : NULL;
        }
        planes_to_lanes(xs, h, wd, in, wp, p0, p1, dw_splat(0.0f));
        dw_vec bv;
        memcpy(&bv, bias, sizeof bv);
        for (int64_t i = 0; i < ho; i++) {
            int64_t j = 0;
            for (; j + 4 <= wo; j += 4) {       /* four pixels: four independent sums */
                dw_vec a0 = bv, a1 = bv, a2 = bv, a3 = bv;
                for (int64_t u = 0; u < kh; u++) {
                    const float *r = in + ((i * s0 + u * d0) * wp + j * s1) * 16;
                    for (int64_t v = 0; v < kw; v++) {
                        const float *q = r + v * d1 * 16;
                        dw_vec wv, x0, x1, x2, x3;
                        memcpy(&wv, wt + (u * kw + v) * 16, sizeof wv);
                        memcpy(&x0, q, sizeof x0);
                        memcpy(&x1, q + s1 * 16, sizeof x1);
                        memcpy(&x2, q + 2 * s1 * 16, sizeof x2);
                        memcpy(&x3, q + 3 * s1 * 16, sizeof x3);
                        a0 += wv * x0;
                        a1 += wv * x1;
                        a2 += wv * x2;
                        a3 += wv * x3;
                    }
                }
                float *dst = res + (i * wo + j) * 16;
                memcpy(dst, &a0, sizeof a0);
                memcpy(dst + 16, &a1, sizeof a1);
                memcpy(dst + 32, &a2, sizeof a2);
                memcpy(dst + 48, &a3, sizeof a3);
            }
            for (; j < wo; j++) {
                dw_vec a = bv;
                for (int64_t u = 0; u < kh; u++)
                    for (int64_t v = 0; v < kw; v++) {
                        dw_vec wv, xv;
                        memcpy(&wv, wt + (u * kw + v) * 16, sizeof wv);
                        memcpy(&xv, in + ((i * s0 + u * d0) * wp + j * s1 + v * d1) * 16, sizeof xv);
                        a += wv * xv;
                    }
                memcpy(res + (i * wo + j) * 16, &a, sizeof a);
            }
        }
        lanes_to_planes(res, ho * wo, ys, lanes);
    }
    buffer_free(buf, bytes);
}

static int conv2d(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *w, const dlvm_val *bias,
                  const int64_t *s, const int64_t *p, const int64_t *d, int64_t groups, int relu,
                  dlvm_rt_packed *pack, dlvm_val *out);

/* The relu is applied as the products store where they can (a CNN's convolution-then-ReLU
 * read and wrote its activations a second time). */
HIDDEN int dlvm_rt_conv2d_packed(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *w,
                                 const dlvm_val *bias, const int64_t *s, const int64_t *p,
                                 const int64_t *d, int64_t groups, int relu, dlvm_rt_packed *pack,
                                 dlvm_val *out) {
    return conv2d(ctx, x, w, bias, s, p, d, groups, relu, pack, out);
}

/* constant weights [rows, k] packed for the GEMM's left operand once, shared by every call and
 * thread (published atomically after `padded`); NULL when there is no memory to spare */
static const float *packed_weights(dlvm_rt_packed *pack, int64_t rows, int64_t k, const float *w) {
    float *packed = __atomic_load_n(&pack->packed, __ATOMIC_ACQUIRE);
    if (packed) return packed;
    pthread_mutex_lock(&pack_lock);
    packed = pack->packed;
    if (!packed) {
        int64_t padded = (rows + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR * DLVM_GEMM_MR;
        packed = aligned_alloc(64, ((size_t)(padded * k) * 4 + 63) / 64 * 64);
        if (packed) {
            dlvm_sgemm_pack_a(rows, k, w, k, 1, packed);
            pack->padded = padded;
            __atomic_store_n(&pack->packed, packed, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&pack_lock);
    return packed;
}

/* Whether a stride-1 convolution's products read the image in place (flag 8 of the GEMM)
 * rather than packing its patch panels. A packed panel serves O / MR register tiles, so the
 * fewer the output channels, the more packing costs (a sixth of a 16-channel product); in
 * place, a padded convolution computes its output on the padded width, (Wp - Wo) / Wo more
 * columns, and copies the kept ones out, which a short K (3 input channels) does not repay.
 * Measured at batch 32 and 1 (bench/conv_in_place.py, bench/README.md): 16-64 channels at
 * 16x16 to 64x64 0.72-0.93x the packed time, 128 channels at 14x14 1.06x (not chosen).
 * DLVM_CONV_IN_PLACE=0 or 1 overrides the choice (for measuring it). */
static int conv_reads_in_place(int64_t o, int64_t kk, int64_t wo, int64_t wp, int pointwise) {
    const char *env = getenv("DLVM_CONV_IN_PLACE");
    if (env && *env) return env[0] != '0';
    if (pointwise) return o <= 128;
    /* whole-vector rows are multiplied row by row, without the padded width's waste: in
     * place pays even at 128 channels or 3 input channels (bench/conv_in_place.py) */
    return wo % DLVM_GEMM_VW == 0 || (kk >= 64 && (wp - wo) * o <= 4 * wo);
}

/* A grouped convolution of several input channels per group (ResNeXt's and RegNet's stages: 8
 * and more) as one product per (group, images): the per-plane form sums cg * kH * kW taps per
 * output from phase images, 1.1-1.9x onnxruntime's time at 16 channels a group on 7x7 and 14x14
 * planes; as products 0.7-0.9x the per-plane time at 8 and 16 channels a group, batch 1 and 8.
 * The weights are packed once for all groups (each K block of the packing holds every row, a
 * group's from its first, a multiple of MR), and the (group, images) products are split
 * across the pool. */
static int grouped_by_products(int64_t cg, int64_t og) {
    return cg >= 8 && og >= DLVM_GEMM_MIN_ROWS && og % DLVM_GEMM_MR == 0;
}

typedef struct {
    conv_images *jobs;          /* one per group */
    int64_t n, per, blocks;     /* images, images per product, products per group */
} group_products;

static void group_products_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    group_products *gp = arg;
    for (int64_t u = lo; u < hi; u++) {
        int64_t first = u % gp->blocks * gp->per;
        int64_t last = first + gp->per < gp->n ? first + gp->per : gp->n;
        conv_images_task(&gp->jobs[u / gp->blocks], first, last, part);
    }
}

static int conv2d_group_products(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *w,
                                 const float *bias, const int64_t *s, const int64_t *p,
                                 const int64_t *d, int64_t groups, int relu, dlvm_rt_packed *pack,
                                 dlvm_val *out, int64_t ho, int64_t wo) {
    int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3];
    int64_t o = w->shape[0], cg = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    int64_t og = o / groups, kk = cg * kh * kw, px = ho * wo;
    const float *packed = pack ? packed_weights(pack, o, kk, w->data) : NULL;
    size_t w_bytes = ((size_t)(o * kk) * 4 + 63) / 64 * 64;
    float *w_packed = NULL;
    if (!packed) {                      /* no cache slot: packed for this call */
        w_packed = buffer_alloc(&w_bytes);
        if (!w_packed) return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (conv2d)");
        dlvm_sgemm_pack_a(o, kk, w->data, kk, 1, w_packed);
        packed = w_packed;
    }
    conv_images *jobs = calloc((size_t)groups, sizeof *jobs);
    if (!jobs) {
        if (w_packed) buffer_free(w_packed, w_bytes);
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (conv2d)");
    }
    int pointwise = kh == 1 && kw == 1 && s[0] == 1 && s[1] == 1 && !p[0] && !p[1] && !p[2] &&
                    !p[3] && x->buf != NULL;
    /* images of few output pixels side by side in one product, as conv_images_task does */
    int64_t per = px < CONV_GROUP_COLUMNS ? (CONV_GROUP_COLUMNS + px - 1) / px : 1;
    if (per > n) per = n;
    for (int64_t g = 0; g < groups; g++) {
        conv_images *j = &jobs[g];
        *j = (conv_images){(const float *)x->data + g * cg * h * wd, (const float *)w->data + g * og * kk,
                           bias ? bias + g * og : NULL, (float *)out->data + g * og * px, cg, h, wd,
                           og, kh, kw, ho, wo, s, p, d, pointwise, 0, 0};
        j->relu = relu;
        j->w_packed = packed;        /* addressed by block and row: this group's from row g * og */
        j->w_padded = o;
        j->w_row0 = g * og;
        j->group = per;
        j->x_image = c * h * wd;
        j->y_image = o * px;
    }
    group_products gp = {jobs, n, per, (n + per - 1) / per};
    int64_t units = groups * gp.blocks;
    dlvm_rt_parallel(group_products_task, &gp, units, units);
    int failed = 0;
    for (int64_t g = 0; g < groups; g++) failed |= jobs[g].failed;
    free(jobs);
    if (w_packed) buffer_free(w_packed, w_bytes);
    if (failed)
        return ctx->status->code ? ctx->status->code
                                 : dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (conv2d)");
    return 0;
}

static int conv2d(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *w, const dlvm_val *bias,
                  const int64_t *s, const int64_t *p, const int64_t *d, int64_t groups, int relu,
                  dlvm_rt_packed *pack, dlvm_val *out) {
    if (x->rank != 4 || w->rank != 4)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "conv2d takes NCHW tensors");
    int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3];
    int64_t o = w->shape[0], cg = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    if (c != cg * groups || o % groups)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "conv2d input has %lld channels, but the "
                            "weights take %lld per group x %lld groups", (long long)c,
                            (long long)cg, (long long)groups);
    if (bias && (bias->rank != 1 || bias->shape[0] != o))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "conv2d bias must have shape [%lld]", (long long)o);
    int64_t span_h = d[0] * (kh - 1) + 1, span_w = d[1] * (kw - 1) + 1;
    if (h + p[0] + p[2] < span_h || wd + p[1] + p[3] < span_w)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "conv2d: the kernel is larger than the padded input");
    int64_t ho = (h + p[0] + p[2] - span_h) / s[0] + 1, wo = (wd + p[1] + p[3] - span_w) / s[1] + 1;
    int64_t shape[4] = {n, o, ho, wo};
    if (dlvm_rt_alloc(ctx, out, x->dtype, 4, shape)) return 1;
    const void *bd = bias ? bias->data : NULL;
    if (x->dtype == DT_F32 && groups == 1 && n * o * ho * wo > 0) {
        /* a 1x1, stride-1, unpadded convolution multiplies the image itself (where we allocated
         * it: the GEMM's packing may read a vector past the end, into the allocation's slack) */
        int pointwise = kh == 1 && kw == 1 && s[0] == 1 && s[1] == 1 && !p[0] && !p[1] && !p[2] &&
                        !p[3] && x->buf != NULL;
        conv_images job = {x->data, w->data, bd, out->data, c, h, wd, o, kh, kw, ho, wo, s, p, d,
                           pointwise, 0, 0};
        job.relu = relu;
        job.x_image = c * h * wd;
        job.y_image = o * ho * wo;
        int threads = dlvm_rt_threads();
        /* the weights packed once for every image's product (each product packed them again:
         * as much copying as the product itself for a batch of small images) */
        int64_t kk = c * kh * kw;
        float *w_packed = NULL;
        size_t w_bytes = 0;
        const float *kept = pack && o >= DLVM_GEMM_MIN_ROWS && kk > 0 ?
                            packed_weights(pack, o, kk, w->data) : NULL;
        if (kept) {
            job.w_packed = kept;
            job.w_padded = pack->padded;
        } else if (n >= 2 && o >= DLVM_GEMM_MIN_ROWS && kk > 0) {
            int64_t padded = (o + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR * DLVM_GEMM_MR;
            w_bytes = ((size_t)(padded * kk) * 4 + 63) / 64 * 64;
            w_packed = buffer_alloc(&w_bytes);          /* from the cache: every call packs */
            if (w_packed) {
                dlvm_sgemm_pack_a(o, kk, w->data, kk, 1, w_packed);
                job.w_packed = w_packed;
                job.w_padded = padded;
            }
        }
        /* few output pixels: several images per product, at most a thread's share of them */
        int64_t px = ho * wo, share = n >= 2 && threads > 1 ? (n + threads - 1) / threads : n;
        job.group = px < CONV_GROUP_COLUMNS ? (CONV_GROUP_COLUMNS + px - 1) / px : 1;
        if (job.group > share) job.group = share;
        if (job.group < 1) job.group = 1;
        /* the patch matrix's rows in the image read in place: tap (ci, ky, kx) of the padded
         * image, or channel k of a pointwise convolution's image */
        int64_t hp = h + p[0] + p[2], wp = wd + p[1] + p[3], *b_rows = NULL;
        size_t rows_bytes = (size_t)kk * 8;
        if (job.w_packed && job.group == 1 && s[0] == 1 && s[1] == 1 &&
            conv_reads_in_place(o, kk, wo, pointwise ? wo : wp, pointwise) &&
            (b_rows = buffer_alloc(&rows_bytes)) != NULL) {
            for (int64_t k = 0; k < kk; k++) {
                int64_t ci = k / (kh * kw), ky = k / kw % kh, kx = k % kw;
                b_rows[k] = pointwise ? k * px : (ci * hp + ky * d[0]) * wp + kx * d[1];
            }
            job.b_rows = b_rows;
        }
        if (n >= 2 && threads > 1) {
            /* images split across the pool, each image's product on one thread: no pool hand-off
             * per product (a batch of small images made 64 of them per call) */
            dlvm_rt_parallel(conv_images_task, &job, n, threads);
        } else {
            job.split = 1;      /* one image (or one thread): the product splits itself */
            job.ctx = ctx;
            conv_images_task(&job, 0, n, 0);
        }
        if (w_packed) buffer_free(w_packed, w_bytes);
        if (b_rows) buffer_free(b_rows, rows_bytes);
        if (job.failed)
            return ctx->status->code ? ctx->status->code
                                     : dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (conv2d)");
        return 0;
    }
    /* DLVM_GROUP_PRODUCTS=0 or 1 overrides the choice (for measuring it, and for tests) */
    const char *by_products = getenv("DLVM_GROUP_PRODUCTS");
    if (x->dtype == DT_F32 && n * o * ho * wo > 0 && groups > 1 && o % groups == 0 &&
        (by_products && *by_products ? by_products[0] != '0' && (o / groups) % DLVM_GEMM_MR == 0
                                     : grouped_by_products(cg, o / groups)))
        return conv2d_group_products(ctx, x, w, bd, s, p, d, groups, relu, pack, out, ho, wo);
    if (x->dtype == DT_F32 && n * o * ho * wo > 0) {
        grouped_conv g = {x->data, w->data, bd, out->data, c, h, wd, o, kh, kw, ho, wo, cg,
                          o / groups, s, p, d, 0, n};
        /* a plane is worth a thread from about 16K multiply-adds */
        int64_t work = ho * wo * cg * kh * kw, parts = (n * o * work) / 16384 + 1;
        /* DLVM_DW_LANES=0 or 1 overrides the choice (for measuring it, and for tests) */
        const char *env = getenv("DLVM_DW_LANES");
        int lanes = env && *env ? env[0] != '0' : depthwise_by_lanes(c, h, wd, ho * wo, kh * kw,
                                                                      s[0] * s[1]);
        if (cg == 1 && lanes) {
            int64_t units = n * ((o + 15) / 16);
            dlvm_rt_parallel(depthwise_lanes_task, &g, units, parts < units ? parts : units);
        } else
            dlvm_rt_parallel(grouped_conv_task, &g, n * o, parts);
        if (g.failed)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (conv2d)");
    } else if (x->dtype == DT_F32)
        conv_float(x->data, w->data, bd, out->data, n, c, h, wd, o, kh, kw, ho, wo, s, p, d, groups);
    else if (x->dtype == DT_F64)
        conv_double(x->data, w->data, bd, out->data, n, c, h, wd, o, kh, kw, ho, wo, s, p, d, groups);
    else
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "conv2d of %s is not compiled ahead of time",
                            dtype_name(x->dtype));
    if (relu && x->dtype == DT_F32) relu_in_place(out->data, dlvm_rt_numel(out));
    if (relu && x->dtype == DT_F64) {
        double *y = out->data;
        for (int64_t i = 0, n_out = dlvm_rt_numel(out); i < n_out; i++)
            y[i] = y[i] < 0.0 ? 0.0 : y[i];      /* NaN stays NaN, as max(x, 0) */
    }
    return 0;
}

/* ---- 3-D convolution ----------------------------------------------------------------------
 * One product per (image, output depth) and group, out[O/g, Ho*Wo] = w[O/g, C/g*kD*kH*kW] x
 * that output depth's patches, stored in place in the NCDHW output (row stride Do*Ho*Wo). The
 * importers' 2-D form (depth taps as channels, copies and transposes around one conv2d) spent
 * half of a 3-D UNet's time moving data. The patches, as conv2d's:
 * - stride 1 in height and width: read in place from the input padded once (the GEMM's flag
 *   8, a table of where each patch row starts), over the padded width and the kept columns
 *   copied out, or one output row at a time where a row is whole vectors;
 * - 1x1x1, stride 1, unpadded: the image itself, one product per image;
 * - otherwise: written in the GEMM's packed-panel layout (its flag 2).
 * Units (image, output depth) split across the pool; with fewer units than threads each
 * product splits itself. */
typedef struct {
    const float *x, *w, *bias;
    float *y;
    int64_t c, depth, h, wd, do_, ho, wo, kd, kh, kw;
    const int64_t *s, *p, *d;
    int64_t groups, cg, og, kk, px, n_pad;
    const float *w_packed;      /* each group's weights packed (dlvm_sgemm_pack_a), one after another */
    int64_t w_padded, w_group;  /* rows of each group's packed weights, floats between groups */
    int pointwise;              /* units are images: each one product of the image itself */
    const float *padded;        /* non-NULL: the input padded, [N, C, Dp, Hp, Wp], read in place */
    const int64_t *b_rows;      /* with it: patch row k of a unit at b_rows[k] from its base */
    int64_t dp, hp, wp;
    int split, failed;
    dlvm_ctx *ctx;
} conv3d_job;

/* patch row k of (image b, output depth t, group grp) into `row` [Ho*Wo], zeros where the
 * window reaches the padding */
static void conv3d_row(const conv3d_job *j, int64_t b, int64_t t, int64_t grp, int64_t k,
                       float *row) {
    const int64_t *s = j->s, *p = j->p, *d = j->d;
    int64_t q = k % j->kw, a = k / j->kw % j->kh, u = k / (j->kw * j->kh) % j->kd;
    int64_t ci = grp * j->cg + k / (j->kw * j->kh * j->kd);
    int64_t z = t * s[0] + u * d[0] - p[0], wo = j->wo;
    if (z < 0 || z >= j->depth) {
        zero_f32(row, j->px);
        return;
    }
    const float *plane = j->x + ((b * j->c + ci) * j->depth + z) * j->h * j->wd;
    /* the output columns whose input column q*d2 - p2 + ow*s2 lies in [0, W) */
    int64_t off = q * d[2] - p[2], lo = 0, hi;
    if (off < 0) lo = (-off + s[2] - 1) / s[2];
    int64_t last = j->wd - 1 - off;             /* ow * s2 <= last */
    hi = last < 0 ? 0 : last / s[2] + 1;
    if (hi > wo) hi = wo;
    if (lo > hi) lo = hi;
    for (int64_t oh = 0; oh < j->ho; oh++) {
        float *r = row + oh * wo;
        int64_t yy = oh * s[1] + a * d[1] - p[1];
        if (yy < 0 || yy >= j->h) {
            zero_f32(r, wo);
            continue;
        }
        const float *src = plane + yy * j->wd + off;
        zero_f32(r, lo);
        if (s[2] == 1)
            copy_f32(r + lo, src + lo, hi - lo);
        else if (s[2] == 2)         /* vector deinterleaves: the scalar loop was 40% of it */
            take_even(r + lo, src + 2 * lo, hi - lo);
        else
            for (int64_t ow = lo; ow < hi; ow++) r[ow] = src[ow * s[2]];
        zero_f32(r + hi, wo - hi);
    }
}

/* the patch matrix [K, Ho*Wo] of (image b, output depth t, group grp) in the packed layout the
 * GEMM reads with flag 2: K blocks of KC rows, each block's NR-wide column panels one after
 * another, the last panel's columns past Ho*Wo zero */
static void conv3d_patches(const conv3d_job *j, int64_t b, int64_t t, int64_t grp, float *packed,
                           float *row) {
    int64_t px = j->px, nr = DLVM_GEMM_NR;
    for (int64_t k = 0; k < j->kk; k++) {
        conv3d_row(j, b, t, grp, k, row);
        int64_t block = k / DLVM_GEMM_KC, kb = k - block * DLVM_GEMM_KC;
        int64_t kc = j->kk - block * DLVM_GEMM_KC < DLVM_GEMM_KC ? j->kk - block * DLVM_GEMM_KC
                                                                  : DLVM_GEMM_KC;
        float *dst = packed + block * DLVM_GEMM_KC * j->n_pad + kb * nr;
        for (int64_t col = 0; col < px; col += nr) {
            int64_t width = px - col < nr ? px - col : nr;
            float *panel = dst + col * kc;          /* panel col / NR holds NR * kc floats */
            copy_f32(panel, row + col, width);
            if (width < nr) zero_f32(panel + width, nr - width);
        }
    }
}

/* volumes [lo, hi) of (image, channel) copied into the zero-bordered [Dp, Hp, Wp] input */
static void conv3d_pad_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const conv3d_job *j = arg;
    const int64_t *p = j->p;
    int64_t hp = j->hp, wp = j->wp, volume = j->dp * hp * wp;
    for (int64_t v = lo; v < hi; v++) {
        float *dst = (float *)j->padded + v * volume;
        zero_f32(dst, volume);
        for (int64_t z = 0; z < j->depth; z++)
            for (int64_t i = 0; i < j->h; i++)
                copy_f32(dst + ((z + p[0]) * hp + i + p[1]) * wp + p[2],
                         j->x + ((v * j->depth + z) * j->h + i) * j->wd, j->wd);
    }
}

/* one product of the job's weights (group grp) into c (row stride ldc) */
static int conv3d_product(conv3d_job *j, int64_t grp, int64_t n, const float *b,
                          const int64_t *b_rows, int64_t b_padded, float *c, int64_t ldc) {
    const float *bias = j->bias ? j->bias + grp * j->og : NULL;
    if (!b_rows && !b_padded && j->og < DLVM_GEMM_MIN_ROWS && ldc == n) {
        /* a few output channels of a pointwise convolution: one pass over the image per
         * channel, where the packed product computed whole register tiles of rows (2 output
         * channels: 2.3x onnxruntime's time) */
        const float *a = j->w + grp * j->og * j->kk;
        int threads = dlvm_rt_threads();
        if (j->split && threads > 1 && n >= 256) {
            few_rows_call f = {j->og, n, j->kk, a, b, c};
            dlvm_rt_parallel(few_rows_task, &f, n, threads);
        } else
            few_rows(j->og, n, j->kk, a, b, c);
        if (bias)
            for (int64_t i = 0; i < j->og; i++)
                for (int64_t q = 0; q < n; q++) c[i * n + q] += bias[i];
        return 0;
    }
    gemm_call g = {.m = j->og, .n = n, .k = j->kk, .b = b, .c = c, .by_rows = 1,
                   .b_padded = b_padded, .a_packed = j->w_packed + grp * j->w_group,
                   .a_padded = j->w_padded, .bias = bias, .b_rows = b_rows, .ldc = ldc};
    if (j->split) return gemm_split(j->ctx, &g, 1);
    gemm_task(&g, 0, (j->og + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR, 0);
    return g.failed;
}

/* one unit read in place: (image b, output depth t) of group grp, over the padded width into
 * `wide` and its kept columns copied out, or row by row straight into the output */
static int conv3d_in_place(conv3d_job *j, int64_t b, int64_t t, int64_t grp, float *wide) {
    const float *base = j->padded + ((b * j->c + grp * j->cg) * j->dp + t * j->s[0]) * j->hp * j->wp;
    float *out = j->y + ((b * j->groups + grp) * j->og * j->do_ + t) * j->px;
    int64_t ldc = j->do_ * j->px;
    if (!wide) {            /* rows of whole vectors */
        for (int64_t oh = 0; oh < j->ho; oh++)
            if (conv3d_product(j, grp, j->wo, base + oh * j->wp, j->b_rows, 0, out + oh * j->wo, ldc))
                return 1;
        return 0;
    }
    int64_t wide_n = (j->ho - 1) * j->wp + j->wo;
    if (conv3d_product(j, grp, wide_n, base, j->b_rows, 0, wide, wide_n)) return 1;
    for (int64_t oc = 0; oc < j->og; oc++)
        for (int64_t oh = 0; oh < j->ho; oh++)
            copy_f32(out + oc * ldc + oh * j->wo, wide + oc * wide_n + oh * j->wp, j->wo);
    return 0;
}

static void conv3d_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    conv3d_job *j = arg;
    int by_rows = j->wo % DLVM_GEMM_VW == 0;
    size_t buf_bytes = 0, row_bytes = 0;
    if (j->padded && !by_rows)
        buf_bytes = ((size_t)(j->og * ((j->ho - 1) * j->wp + j->wo)) * 4 + 63) / 64 * 64;
    else if (!j->padded && !j->pointwise) {
        buf_bytes = ((size_t)(j->kk * j->n_pad + DLVM_GEMM_SLACK + 16) * 4 + 63) / 64 * 64;
        row_bytes = ((size_t)(j->px + 16) * 4 + 63) / 64 * 64;
    }
    float *buf = buf_bytes ? buffer_alloc(&buf_bytes) : NULL;
    float *row = row_bytes ? buffer_alloc(&row_bytes) : NULL;
    if ((buf_bytes && !buf) || (row_bytes && !row)) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        if (buf) buffer_free(buf, buf_bytes);
        if (row) buffer_free(row, row_bytes);
        return;
    }
    int64_t depths = j->pointwise ? 1 : j->do_;
    for (int64_t unit = lo; unit < hi; unit++) {
        int64_t b = unit / depths, t = unit % depths;
        for (int64_t grp = 0; grp < j->groups; grp++) {
            int rc;
            if (j->pointwise) {         /* the image's [C, D*H*W] as it is */
                int64_t volume = j->depth * j->px;
                rc = conv3d_product(j, grp, volume, j->x + (b * j->c + grp * j->cg) * volume, NULL, 0,
                                    j->y + (b * j->groups + grp) * j->og * volume, volume);
            } else if (j->padded) {
                rc = conv3d_in_place(j, b, t, grp, buf);
            } else {
                conv3d_patches(j, b, t, grp, buf, row);
                rc = conv3d_product(j, grp, j->px, buf, NULL, j->n_pad,
                                    j->y + ((b * j->groups + grp) * j->og * j->do_ + t) * j->px,
                                    j->do_ * j->px);
            }
            if (rc) {
                __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
                unit = hi;
                break;
            }
        }
    }
    if (buf) buffer_free(buf, buf_bytes);
    if (row) buffer_free(row, row_bytes);
}

HIDDEN int dlvm_rt_conv3d(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *w, const dlvm_val *bias,
                          const int64_t *s, const int64_t *p, const int64_t *d, int64_t groups,
                          dlvm_rt_packed *pack, dlvm_val *out) {
    if (x->rank != 5 || w->rank != 5)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "conv3d takes NCDHW tensors");
    if (x->dtype != DT_F32 || w->dtype != DT_F32 || (bias && bias->dtype != DT_F32))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "conv3d of %s is not compiled ahead of time",
                            dtype_name(x->dtype));
    int64_t n = x->shape[0], c = x->shape[1], o = w->shape[0], cg = w->shape[1];
    if (c != cg * groups || o % groups)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "conv3d input has %lld channels, but the "
                            "weights take %lld per group x %lld groups", (long long)c,
                            (long long)cg, (long long)groups);
    if (bias && (bias->rank != 1 || bias->shape[0] != o))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "conv3d bias must have shape [%lld]", (long long)o);
    int64_t shape[5] = {n, o, 0, 0, 0};
    for (int i = 0; i < 3; i++) {
        int64_t span = d[i] * (w->shape[2 + i] - 1) + 1, size = x->shape[2 + i] + p[i] + p[i + 3];
        if (size < span)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "conv3d: the kernel is larger than the "
                                "padded input");
        shape[2 + i] = (size - span) / s[i] + 1;
    }
    if (dlvm_rt_alloc(ctx, out, DT_F32, 5, shape)) return 1;
    conv3d_job j = {.x = x->data, .w = w->data, .bias = bias ? bias->data : NULL, .y = out->data, .c = c,
                    .depth = x->shape[2], .h = x->shape[3], .wd = x->shape[4], .do_ = shape[2],
                    .ho = shape[3], .wo = shape[4], .kd = w->shape[2], .kh = w->shape[3],
                    .kw = w->shape[4], .s = s, .p = p, .d = d, .groups = groups, .cg = cg,
                    .og = o / groups, .ctx = ctx};
    j.kk = cg * j.kd * j.kh * j.kw;
    j.px = j.ho * j.wo;
    j.n_pad = (j.px + DLVM_GEMM_NR - 1) / DLVM_GEMM_NR * DLVM_GEMM_NR;
    int64_t total = dlvm_rt_numel(out);
    if (total == 0) return 0;
    if (j.kk == 0) {                    /* no input channels: the bias alone */
        float *y = out->data;
        for (int64_t i = 0; i < total; i++)
            y[i] = j.bias ? j.bias[i / (j.do_ * j.px) % o] : 0.0f;
        return 0;
    }
    j.w_padded = (j.og + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR * DLVM_GEMM_MR;
    j.w_group = j.w_padded * j.kk;
    float *w_packed = NULL, *padded = NULL;
    int64_t *b_rows = NULL;
    size_t w_bytes = 0, padded_bytes = 0, rows_bytes = 0;
    const float *kept = pack && groups == 1 ? packed_weights(pack, o, j.kk, w->data) : NULL;
    if (kept) {
        j.w_packed = kept;
        j.w_padded = pack->padded;
    } else {
        w_bytes = ((size_t)(groups * j.w_group) * 4 + 63) / 64 * 64;
        w_packed = buffer_alloc(&w_bytes);
        if (!w_packed) return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (conv3d)");
        const float *wd = w->data;
        for (int64_t grp = 0; grp < groups; grp++)
            dlvm_sgemm_pack_a(j.og, j.kk, wd + grp * j.og * j.kk, j.kk, 1, w_packed + grp * j.w_group);
        j.w_packed = w_packed;
    }
    int threads = dlvm_rt_threads();
    int unpadded = !p[0] && !p[1] && !p[2] && !p[3] && !p[4] && !p[5];
    /* (read as a plain operand, whose packing stops at the image's end: a caller's array too) */
    j.pointwise = j.kd == 1 && j.kh == 1 && j.kw == 1 && s[0] == 1 && s[1] == 1 && s[2] == 1 &&
                  unpadded;
    if (!j.pointwise && s[1] == 1 && s[2] == 1) {
        j.dp = j.depth + p[0] + p[3];
        j.hp = j.h + p[1] + p[4];
        j.wp = j.wd + p[2] + p[5];
        padded_bytes = ((size_t)(n * c * j.dp * j.hp * j.wp + DLVM_GEMM_SLACK + 16) * 4 + 63) / 64 * 64;
        rows_bytes = (size_t)j.kk * 8;
        padded = buffer_alloc(&padded_bytes);
        b_rows = padded ? buffer_alloc(&rows_bytes) : NULL;
        if (b_rows) {
            for (int64_t k = 0; k < j.kk; k++) {
                int64_t q = k % j.kw, a = k / j.kw % j.kh, u = k / (j.kw * j.kh) % j.kd;
                int64_t ci = k / (j.kw * j.kh * j.kd);
                b_rows[k] = ((ci * j.dp + u * d[0]) * j.hp + a * d[1]) * j.wp + q * d[2];
            }
            memset((char *)padded + (size_t)(n * c * j.dp * j.hp * j.wp) * 4, 0,
                   padded_bytes - (size_t)(n * c * j.dp * j.hp * j.wp) * 4);
            j.padded = padded;
            j.b_rows = b_rows;
            int64_t volumes = n * c;
            if ((size_t)(volumes * j.dp * j.hp * j.wp) * 4 >= PARALLEL_COPY_BYTES && threads > 1)
                dlvm_rt_parallel(conv3d_pad_task, &j, volumes, threads < volumes ? threads : volumes);
            else
                conv3d_pad_task(&j, 0, volumes, 0);
        }
    }
    int64_t units = n * (j.pointwise ? 1 : j.do_);
    if (units >= 2 && threads > 1)
        dlvm_rt_parallel(conv3d_task, &j, units, threads < units ? threads : units);
    else {
        j.split = 1;                    /* one unit (or one thread): each product splits itself */
        conv3d_task(&j, 0, units, 0);
    }
    if (w_packed) buffer_free(w_packed, w_bytes);
    if (padded) buffer_free(padded, padded_bytes);
    if (b_rows) buffer_free(b_rows, rows_bytes);
    if (j.failed)
        return ctx->status->code ? ctx->status->code
                                 : dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (conv3d)");
    return 0;
}

static int64_t pool_out(int64_t size, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d,
                        int ceil_mode) {
    int64_t span = d * (k - 1) + 1, room = size + pb + pe - span;
    if (!ceil_mode) return room / s + 1;
    int64_t out = (room + s - 1) / s + 1;
    return (out - 1) * s >= size + pb ? out - 1 : out;
}

#define MAXPOOL(T, LOWEST)                                                                    \
    static void maxpool_##T(const T *x, T *y, int64_t planes, int64_t h, int64_t w, int64_t ho,\
                            int64_t wo, const int64_t *k, const int64_t *s, const int64_t *p,  \
                            const int64_t *d) {                                               \
        for (int64_t q = 0; q < planes; q++)                                                  \
            for (int64_t i = 0; i < ho; i++)                                                  \
                for (int64_t j = 0; j < wo; j++) {                                            \
                    T best = LOWEST;                                                          \
                    int nan = 0;                                                              \
                    for (int64_t u = 0; u < k[0]; u++) {                                      \
                        int64_t yy = i * s[0] - p[0] + u * d[0];                              \
                        if (yy < 0 || yy >= h) continue;                                      \
                        for (int64_t v = 0; v < k[1]; v++) {                                  \
                            int64_t xx = j * s[1] - p[1] + v * d[1];                          \
                            if (xx < 0 || xx >= w) continue;                                  \
                            T t = x[(q * h + yy) * w + xx];                                   \
                            if (t != t) nan = 1;                                              \
                            else if (t > best) best = t;                                      \
                        }                                                                     \
                    }                                                                         \
                    y[(q * ho + i) * wo + j] = nan ? (T)NAN : best;                           \
                }                                                                             \
    }
MAXPOOL(double, -INFINITY)

/* f32 max and average pooling, planes split across the pool. Both are separable: per output
 * row, the window's tap rows are combined column by column first ("vertical": contiguous
 * vector passes over the input rows) into a padded row buffer (the padding -inf for max, 0 for
 * average), then each output column combines its column taps in that one row ("horizontal").
 * With column stride 2 the row buffer is split into its even and odd columns first, so that
 * every column tap is a contiguous run too (a stride-2 pass read every other float and did not
 * vectorize: a ResNet stem's max pool ran 3x onnxruntime's time). Max: a NaN in a window wins,
 * as the op says. Average: the window's sum divided by the positions it covers (the explicit
 * pads too with count_include_pad, never the ceil-mode overhang); the separable sum adds in
 * another order than the reference's row-major taps (rounding only). */
typedef struct {
    const float *x;
    float *y;
    int64_t h, w, ho, wo;
    const int64_t *k, *s, *p, *d;
    int is_max, include_pad, failed;
    int64_t planes;     /* images x channels (pool_lanes_task) */
} pool2d_job;

static int64_t window_count(int64_t i, int64_t k, int64_t s, int64_t pb, int64_t d, int64_t lo,
                            int64_t hi) {
    int64_t n = 0;
    for (int64_t u = 0; u < k; u++) {
        int64_t at = i * s - pb + u * d;
        n += at >= lo && at < hi;
    }
    return n;
}

/* even[t] = x[2t], odd[t] = x[2t + 1]: a stride-2 row's two column phases, 16 at a time with
 * vector shuffles where the compiler has them (a scalar stride-2 copy was most of a stride-2
 * pool's time) */
static void deinterleave2(const float *x, int64_t w, float *even, float *odd) {
    int64_t t = 0;
#if defined(__GNUC__) && !defined(__clang__)
    typedef int32_t dv_idx __attribute__((vector_size(64)));
    const dv_idx ev = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
    const dv_idx od = {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
    for (; 2 * t + 32 <= w; t += 16) {
        dw_vec a, b;
        memcpy(&a, x + 2 * t, sizeof a);
        memcpy(&b, x + 2 * t + 16, sizeof b);
        dw_vec e = __builtin_shuffle(a, b, ev), o = __builtin_shuffle(a, b, od);
        memcpy(even + t, &e, sizeof e);
        memcpy(odd + t, &o, sizeof o);
    }
#endif
    for (; 2 * t < w; t++) {
        even[t] = x[2 * t];
        if (2 * t + 1 < w) odd[t] = x[2 * t + 1];
    }
}

/* A 2x2 window with stride 2 and no padding, every window whole (most CNNs' pooling): both
 * rows and both columns in one pass, 16 outputs per step with the column pairs split by vector
 * shuffles; the general path's padded row, fills and separate passes cost more than the pooling
 * on the small planes of a CNN's batch. A NaN wins a maximum, as in the general path. */
#if defined(__GNUC__) && !defined(__clang__)
typedef int32_t pv_idx __attribute__((vector_size(64)));

/* 16 windows from 32 columns of two rows: the column pairs split by vector shuffles */
static inline dw_vec pool2x2_16(dw_vec a0, dw_vec a1, dw_vec b0, dw_vec b1, int is_max) {
    const pv_idx ev = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
    const pv_idx od = {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
    dw_vec e0 = __builtin_shuffle(a0, a1, ev), o0 = __builtin_shuffle(a0, a1, od);
    dw_vec e1 = __builtin_shuffle(b0, b1, ev), o1 = __builtin_shuffle(b0, b1, od);
    if (!is_max) return ((e0 + e1) + (o0 + o1)) * 0.25f;
    /* t wins over b where t > b or t is NaN: as (t > b || t != t) ? t : b */
    pv_idx c = (e1 > e0) | (e1 != e1);
    dw_vec ve = (dw_vec)(((pv_idx)e1 & c) | ((pv_idx)e0 & ~c));
    c = (o1 > o0) | (o1 != o1);
    dw_vec vo = (dw_vec)(((pv_idx)o1 & c) | ((pv_idx)o0 & ~c));
    c = (vo > ve) | (vo != vo);
    return (dw_vec)(((pv_idx)vo & c) | ((pv_idx)ve & ~c));
}
#endif

static void pool2x2_plane(const float *x, int64_t w, float *y, int64_t ho, int64_t wo, int is_max) {
    for (int64_t i = 0; i < ho; i++) {
        const float *r0 = x + 2 * i * w, *r1 = r0 + w;
        float *yr = y + i * wo;
        int64_t j = 0;
#if defined(__GNUC__) && !defined(__clang__)
        dw_vec a0, a1, b0, b1, r;
        for (; j + 16 <= wo; j += 16) {
            memcpy(&a0, r0 + 2 * j, sizeof a0);
            memcpy(&a1, r0 + 2 * j + 16, sizeof a1);
            memcpy(&b0, r1 + 2 * j, sizeof b0);
            memcpy(&b1, r1 + 2 * j + 16, sizeof b1);
            r = pool2x2_16(a0, a1, b0, b1, is_max);
            memcpy(yr + j, &r, sizeof r);
        }
        if (j < wo) {
            /* the last (or only: a 24x24 plane's 12) windows as one more vector step over
             * masked loads (zeroed copies without AVX-512): the scalar loop's compares were
             * data-dependent branches, mispredicted half the time, and a small CNN's pooling
             * took 28% of its profile */
            int64_t n = wo - j;
#ifdef __AVX512F__
            __mmask16 lo = (__mmask16)(n >= 8 ? 0xFFFF : (1u << (2 * n)) - 1);
            __mmask16 hi = (__mmask16)(n > 8 ? (1u << (2 * (n - 8))) - 1 : 0);
            a0 = (dw_vec)_mm512_maskz_loadu_ps(lo, r0 + 2 * j);
            a1 = (dw_vec)_mm512_maskz_loadu_ps(hi, r0 + 2 * j + 16);
            b0 = (dw_vec)_mm512_maskz_loadu_ps(lo, r1 + 2 * j);
            b1 = (dw_vec)_mm512_maskz_loadu_ps(hi, r1 + 2 * j + 16);
            r = pool2x2_16(a0, a1, b0, b1, is_max);
            _mm512_mask_storeu_ps(yr + j, (__mmask16)((1u << n) - 1), (__m512)r);
#else
            float t0[32] = {0}, t1[32] = {0};
            memcpy(t0, r0 + 2 * j, 8 * (size_t)n);
            memcpy(t1, r1 + 2 * j, 8 * (size_t)n);
            memcpy(&a0, t0, sizeof a0);
            memcpy(&a1, t0 + 16, sizeof a1);
            memcpy(&b0, t1, sizeof b0);
            memcpy(&b1, t1 + 16, sizeof b1);
            r = pool2x2_16(a0, a1, b0, b1, is_max);
            memcpy(yr + j, &r, 4 * (size_t)n);
#endif
            j = wo;
        }
#endif
        for (; j < wo; j++) {
            float a = r0[2 * j], b = r1[2 * j], c = r0[2 * j + 1], d = r1[2 * j + 1];
            if (is_max) {
                float ve = (b > a || b != b) ? b : a, vo = (d > c || d != d) ? d : c;
                yr[j] = (vo > ve || vo != vo) ? vo : ve;
            } else {
                yr[j] = ((a + b) + (c + d)) * 0.25f;
            }
        }
    }
}

/* Pools of small planes, 16 planes at a time, one per vector lane (as depthwise_lanes_task):
 * the planes transposed into an [Hp, Wp, 16] image bordered with the pool's identity (-inf, or 0
 * for an average), each output pixel a vector max or sum over the taps, transposed back. The
 * row-at-a-time form below paid its per-row loops on rows of 5 to 16 outputs: SqueezeNet's
 * 3x3/2 ceil-mode pool of 11x11 planes at batch 32 was 10.9x onnxruntime (now 1.25x),
 * PoolFormer's 3x3/1 average on 16x16 2-3x (now 0.93x); up to 32x32 outputs 0.45-0.9x the
 * row form's time, beyond it (a ResNet stem's 56x56) no faster. Units are blocks of 16 planes
 * (image and channel flattened). */
#define POOL_LANES_MAX_PIXELS 1024

#if defined(__GNUC__) && !defined(__clang__)
static void pool_lanes_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    pool2d_job *m = arg;
    int64_t s0 = m->s[0], s1 = m->s[1], p0 = m->p[0], p1 = m->p[1], d0 = m->d[0], d1 = m->d[1];
    int64_t k0 = m->k[0], k1 = m->k[1], h = m->h, w = m->w, ho = m->ho, wo = m->wo;
    int is_max = m->is_max;
    /* rows and columns the windows reach, ceil-mode overhang included */
    int64_t hp = (ho - 1) * s0 + (k0 - 1) * d0 + 1, wp = (wo - 1) * s1 + (k1 - 1) * d1 + 1;
    if (hp < p0 + h) hp = p0 + h;
    if (wp < p1 + w) wp = p1 + w;
    size_t bytes = (size_t)(hp * wp + ho * wo) * 16 * 4 + (size_t)(ho * wo) * 4 + 64;
    float *buf = buffer_alloc(&bytes);
    if (!buf) {
        __atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float *in = buf, *res = in + hp * wp * 16, *scale = res + ho * wo * 16;
    float fill = is_max ? -INFINITY : 0.0f;
    dw_vec fv = dw_splat(fill);
    for (int64_t q = 0; q < hp * wp; q++) memcpy(in + q * 16, &fv, sizeof fv);
    if (!is_max)        /* 1 / the positions each window covers */
        for (int64_t i = 0; i < ho; i++) {
            float rc = (float)window_count(i, k0, s0, p0, d0, m->include_pad ? -p0 : 0,
                                           m->include_pad ? h + m->p[2] : h);
            for (int64_t j = 0; j < wo; j++)
                scale[i * wo + j] = 1.0f / (rc * (float)window_count(
                    j, k1, s1, p1, d1, m->include_pad ? -p1 : 0, m->include_pad ? w + m->p[3] : w));
        }
    for (int64_t blk = lo; blk < hi; blk++) {
        int64_t q0 = blk * 16, lanes = m->planes - q0 < 16 ? m->planes - q0 : 16;
        const float *xs[16];
        float *ys[16];
        for (int64_t l = 0; l < 16; l++) {
            xs[l] = l < lanes ? m->x + (q0 + l) * h * w : NULL;
            ys[l] = l < lanes ? m->y + (q0 + l) * ho * wo : NULL;
        }
        planes_to_lanes(xs, h, w, in, wp, p0, p1, fv);
        for (int64_t i = 0; i < ho; i++)
            for (int64_t j = 0; j < wo; j++) {
                dw_vec a = fv;
                for (int64_t u = 0; u < k0; u++) {
                    const float *row = in + ((i * s0 + u * d0) * wp + j * s1) * 16;
                    for (int64_t v = 0; v < k1; v++) {
                        dw_vec t;
                        memcpy(&t, row + v * d1 * 16, sizeof t);
                        if (is_max) {   /* t wins where t > a or t is NaN */
                            pv_idx c = (t > a) | (t != t);
                            a = (dw_vec)(((pv_idx)t & c) | ((pv_idx)a & ~c));
                        } else {
                            a += t;
                        }
                    }
                }
                if (!is_max) a *= dw_splat(scale[i * wo + j]);
                memcpy(res + (i * wo + j) * 16, &a, sizeof a);
            }
        lanes_to_planes(res, ho * wo, ys, lanes);
    }
    buffer_free(buf, bytes);
}
#endif

static void pool_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    pool2d_job *m = arg;
    int64_t s0 = m->s[0], s1 = m->s[1], p0 = m->p[0], p1 = m->p[1], d0 = m->d[0], d1 = m->d[1];
    int64_t k0 = m->k[0], k1 = m->k[1], h = m->h, w = m->w, ho = m->ho, wo = m->wo;
    int is_max = m->is_max;
    /* the padded row: column c is the input's column c - p1 */
    int64_t len = (wo - 1) * s1 + (k1 - 1) * d1 + 1;
    if (len < p1 + w) len = p1 + w;
    float fill = is_max ? -INFINITY : 0.0f;
    size_t bytes = (size_t)(2 * len + wo + 64) * 4 + 64;
    float *buf = buffer_alloc(&bytes);
    if (!buf) {
        __atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float *row = buf, *halves = buf + len + 16, *colcount = halves + len + 16;
    if (!is_max)
        for (int64_t j = 0; j < wo; j++)
            colcount[j] = (float)window_count(j, k1, s1, p1, d1, m->include_pad ? -p1 : 0,
                                              m->include_pad ? w + m->p[3] : w);
    for (int64_t c = 0; c < len; c++) row[c] = fill;
    int two_by_two = k0 == 2 && k1 == 2 && s0 == 2 && s1 == 2 && p0 == 0 && p1 == 0 && d0 == 1 &&
                     d1 == 1 && 2 * ho <= h && 2 * wo <= w;
    for (int64_t q = lo; q < hi; q++) {
        const float *xp = m->x + q * h * w;
        if (two_by_two) {
            pool2x2_plane(xp, w, m->y + q * ho * wo, ho, wo, is_max);
            continue;
        }
        for (int64_t i = 0; i < ho; i++) {
            float *yr = m->y + (q * ho + i) * wo;
            /* vertical: the tap rows in range into row[p1 .. p1 + w) */
            float *mid = row + p1;
            int taken = 0;
            for (int64_t u = 0; u < k0; u++) {
                int64_t yy = i * s0 - p0 + u * d0;
                if (yy < 0 || yy >= h) continue;
                const float *xr = xp + yy * w;
                if (!taken)
                    copy_f32(mid, xr, w);
                else if (is_max)
                    for (int64_t c = 0; c < w; c++) {
                        float t = xr[c], b = mid[c];
                        mid[c] = (t > b || t != t) ? t : b;
                    }
                else
                    for (int64_t c = 0; c < w; c++) mid[c] += xr[c];
                taken = 1;
            }
            if (!taken)
                for (int64_t c = 0; c < w; c++) mid[c] = fill;
            /* horizontal: each column tap a contiguous run of the row (or of its halves) */
            const float *even = row, *odd = row;
            if (s1 == 2) {
                deinterleave2(row, len, halves, halves + (len + 1) / 2);
                even = halves;
                odd = halves + (len + 1) / 2;
            }
            for (int64_t j = 0; j < wo; j++) yr[j] = fill;
            for (int64_t v = 0; v < k1; v++) {
                int64_t at = v * d1;
                if (s1 == 1 || s1 == 2) {
                    const float *src = s1 == 1 ? row + at : (at & 1 ? odd : even) + (at >> 1);
                    if (is_max)
                        for (int64_t j = 0; j < wo; j++) {
                            float t = src[j], b = yr[j];
                            yr[j] = (t > b || t != t) ? t : b;
                        }
                    else
                        for (int64_t j = 0; j < wo; j++) yr[j] += src[j];
                } else {
                    for (int64_t j = 0; j < wo; j++) {
                        float t = row[j * s1 + at], b = yr[j];
                        yr[j] = is_max ? ((t > b || t != t) ? t : b) : b + t;
                    }
                }
            }
            if (!is_max) {
                float rc = (float)window_count(i, k0, s0, p0, d0, m->include_pad ? -p0 : 0,
                                               m->include_pad ? h + m->p[2] : h);
                for (int64_t j = 0; j < wo; j++) yr[j] /= rc * colcount[j];
            }
        }
    }
    buffer_free(buf, bytes);
}

/* Pools with AVX-512, a plane at a time in its own layout: output columns in chunks of up to
 * 16 (as many as a window of 32 input columns covers), each chunk one vector. Per output row,
 * the tap rows' 32 columns are two masked loads (columns outside the input read as the pool's
 * identity: -inf, or 0 for an average) combined lane by lane, and each column tap is a
 * two-register permute of that row (lane j takes column j * s + v * d): nothing is transposed
 * or padded in memory. The lanes form (pool_lanes_task) spent twice the pooling on its
 * transposes (SqueezeNet's 3x3/2 ceil-mode pools), and the row form's scalar passes ran a
 * ResNet stem's 3x3/2 pool at 1.3x onnxruntime's time. Returns the chunk width, or 0 where
 * the window is too wide for it. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
static int64_t pool_vector_chunk(const pool2d_job *m) {
    int64_t reach = (m->k[1] - 1) * m->d[1];
    if (reach > 27 || m->s[1] < 1) return 0;
    int64_t nc = (31 - reach) / m->s[1] + 1;
    if (nc < 4) return 0;
    return nc > 16 ? 16 : nc;
}

static inline __m512 pool_combine(__m512 a, __m512 t, int is_max) {
    if (!is_max) return _mm512_add_ps(a, t);
    /* t wins where t > a or t is NaN (a NaN in a window wins, as the other forms) */
    __mmask16 c = _mm512_cmp_ps_mask(t, a, _CMP_GT_OQ) | _mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q);
    return _mm512_mask_mov_ps(a, c, t);
}

/* a chunk's outputs from its 32 columns (a0, a1): lane j combines columns taps[v][j] */
static inline __m512 pool_columns(__m512 a0, __m512 a1, const __m512i *taps, int64_t ntaps,
                                  int is_max) {
    __m512 acc = _mm512_permutex2var_ps(a0, taps[0], a1);
    for (int64_t v = 1; v < ntaps; v++)
        acc = pool_combine(acc, _mm512_permutex2var_ps(a0, taps[v], a1), is_max);
    return acc;
}

static void pool_vector_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    pool2d_job *m = arg;
    int64_t s0 = m->s[0], s1 = m->s[1], p0 = m->p[0], p1 = m->p[1], d0 = m->d[0], d1 = m->d[1];
    int64_t k0 = m->k[0], k1 = m->k[1], h = m->h, w = m->w, ho = m->ho, wo = m->wo;
    int is_max = m->is_max;
    int64_t nc = pool_vector_chunk(m), chunks = (wo + nc - 1) / nc;
    __m512 fill = _mm512_set1_ps(is_max ? -INFINITY : 0.0f);
    /* per chunk: the load masks of its 32 columns, the store mask, 1 / column counts */
    /* stride-1 rows (a YOLO's 5x5/1 SPP, PoolFormer's 3x3/1 average): each input row's
     * column taps are combined once into `across` (one vector per row of a chunk), then an
     * output row combines its k0 rows of it; per output row and tap row, two loads and the
     * column taps again took 1.9x the time (5x5 at b32) and 1.5x (13x13) */
    int across_first = s0 == 1 && k0 > 1;
    int64_t across_n = across_first ? h * 16 : 0;
    size_t bytes = (size_t)(across_n + chunks * 16 + ho) * 4 + (size_t)chunks * 6 + 64;
    float *buf = buffer_alloc(&bytes);
    if (!buf) {
        __atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float *across = buf, *colscale = buf + across_n, *rowscale = colscale + chunks * 16;
    __mmask16 *masks = (__mmask16 *)(rowscale + ho);     /* 3 per chunk: lo, hi, store */
    for (int64_t ch = 0; ch < chunks; ch++) {
        int64_t start = ch * nc * s1 - p1, outs = wo - ch * nc < nc ? wo - ch * nc : nc;
        uint32_t valid = 0;
        for (int64_t t = 0; t < 32; t++)
            if (start + t >= 0 && start + t < w) valid |= 1u << t;
        masks[3 * ch] = (__mmask16)(valid & 0xFFFF);
        masks[3 * ch + 1] = (__mmask16)(valid >> 16);
        masks[3 * ch + 2] = (__mmask16)((1u << outs) - 1);
        for (int64_t j = 0; j < 16; j++)
            colscale[ch * 16 + j] = j < outs && !is_max ? 1.0f / (float)window_count(
                ch * nc + j, k1, s1, p1, d1, m->include_pad ? -p1 : 0,
                m->include_pad ? w + m->p[3] : w) : 1.0f;
    }
    for (int64_t i = 0; i < ho; i++)
        rowscale[i] = is_max ? 1.0f : 1.0f / (float)window_count(
            i, k0, s0, p0, d0, m->include_pad ? -p0 : 0, m->include_pad ? h + m->p[2] : h);
    /* lane j of tap v: column j * s1 + v * d1 of the chunk's 32 */
    __m512i taps[32];
    int64_t ntaps = k1 < 32 ? k1 : 32;
    for (int64_t v = 0; v < ntaps; v++) {
        int32_t idx[16];
        for (int64_t j = 0; j < 16; j++) {
            int64_t at = j * s1 + v * d1;
            idx[j] = (int32_t)(j < nc && at < 32 ? at : 0);
        }
        taps[v] = _mm512_loadu_si512(idx);
    }
    for (int64_t q = lo; q < hi; q++) {
        const float *xp = m->x + q * h * w;
        float *yp = m->y + q * ho * wo;
        for (int64_t ch = 0; across_first && ch < chunks; ch++) {
            int64_t start = ch * nc * s1 - p1;
            __mmask16 mlo = masks[3 * ch], mhi = masks[3 * ch + 1];
            for (int64_t yy = 0; yy < h; yy++) {
                const float *r = (const float *)((uintptr_t)xp + (uintptr_t)((yy * w + start) * 4));
                __m512 a0 = _mm512_mask_loadu_ps(fill, mlo, r);
                __m512 a1 = _mm512_mask_loadu_ps(fill, mhi, (const float *)((uintptr_t)r + 64));
                __m512 acc = pool_columns(a0, a1, taps, ntaps, is_max);
                _mm512_storeu_ps(across + yy * 16, acc);
            }
            for (int64_t i = 0; i < ho; i++) {
                __m512 acc = fill;
                for (int64_t u = 0; u < k0; u++) {
                    int64_t yy = i - p0 + u * d0;
                    if (yy >= 0 && yy < h)
                        acc = pool_combine(acc, _mm512_loadu_ps(across + yy * 16), is_max);
                }
                if (!is_max)
                    acc = _mm512_mul_ps(_mm512_mul_ps(acc, _mm512_set1_ps(rowscale[i])),
                                        _mm512_loadu_ps(colscale + ch * 16));
                _mm512_mask_storeu_ps(yp + i * wo + ch * nc, masks[3 * ch + 2], acc);
            }
        }
        for (int64_t i = 0; !across_first && i < ho; i++) {
            __m512 rs = _mm512_set1_ps(rowscale[i]);
            for (int64_t ch = 0; ch < chunks; ch++) {
                int64_t start = ch * nc * s1 - p1;
                __mmask16 mlo = masks[3 * ch], mhi = masks[3 * ch + 1];
                __m512 a0 = fill, a1 = fill;
                for (int64_t u = 0; u < k0; u++) {
                    int64_t yy = i * s0 - p0 + u * d0;
                    if (yy < 0 || yy >= h) continue;
                    /* the window may start before the plane or end past it (its lanes
                     * there are masked off and never read): the address is an integer */
                    const float *r = (const float *)((uintptr_t)xp +
                                                     (uintptr_t)((yy * w + start) * 4));
                    a0 = pool_combine(a0, _mm512_mask_loadu_ps(fill, mlo, r), is_max);
                    a1 = pool_combine(a1, _mm512_mask_loadu_ps(fill, mhi, (const float *)(
                        (uintptr_t)r + 64)), is_max);
                }
                __m512 acc = pool_columns(a0, a1, taps, ntaps, is_max);
                if (!is_max)
                    acc = _mm512_mul_ps(_mm512_mul_ps(acc, rs), _mm512_loadu_ps(colscale + ch * 16));
                _mm512_mask_storeu_ps(yp + i * wo + ch * nc, masks[3 * ch + 2], acc);
            }
        }
    }
    buffer_free(buf, bytes);
}
#endif

/* the planes of a 2-D pool: with AVX-512 a vector per chunk of output columns where the window
 * fits one (pool_vector_task), otherwise 16 planes to a vector where they are small and not the
 * 2x2/2 fast path (pool_lanes_task); DLVM_POOL_LANES=0 or 1 overrides the choice (for
 * measuring it, and tests) */
static void pool_planes(pool2d_job *m, int64_t planes, int64_t work) {
#if defined(__GNUC__) && !defined(__clang__)
    const int64_t *k = m->k, *s = m->s, *p = m->p, *d = m->d;
    int two_by_two = k[0] == 2 && k[1] == 2 && s[0] == 2 && s[1] == 2 && !p[0] && !p[1] &&
                     d[0] == 1 && d[1] == 1 && 2 * m->ho <= m->h && 2 * m->wo <= m->w;
    const char *env = getenv("DLVM_POOL_LANES");
#ifdef __AVX512F__
    /* rows of 8 outputs or fewer fill half a vector or less: there 16 planes to a vector
     * (lanes) were 0.85-0.95x the time (SqueezeNet's 15x15 -> 7x7 and 7x7 -> 3x3, b32), and
     * wider rows 0.3-0.7x of it; DLVM_POOL_VECTOR=0 or 1 overrides the choice (1: wherever
     * the window fits a chunk) */
    const char *vec_env = getenv("DLVM_POOL_VECTOR");
    int small = planes >= 16 && m->wo <= 8 && m->ho * m->wo <= POOL_LANES_MAX_PIXELS;
    int vector = vec_env && *vec_env ? vec_env[0] != '0'
                                     : !two_by_two && !(env && *env) && !small;
    if (vector && planes > 0 && pool_vector_chunk(m)) {
        dlvm_rt_parallel(pool_vector_task, m, planes, work / 65536 + 1);
        return;
    }
#endif
    int lanes = env && *env ? env[0] != '0'
                            : !two_by_two && planes >= 16 && m->ho * m->wo <= POOL_LANES_MAX_PIXELS;
    if (lanes && planes > 0) {
        m->planes = planes;
        int64_t blocks = (planes + 15) / 16;
        dlvm_rt_parallel(pool_lanes_task, m, blocks, work / 65536 + 1);
        return;
    }
#endif
    dlvm_rt_parallel(pool_task, m, planes, work / 65536 + 1);
}

/* The output of a 1-D or 2-D pool (an NCW tensor, the generator passing a kernel of height 1,
 * pools as NC1W): checks the window against the padded input, allocates `out`, and gives the
 * plane's geometry. */
static int pool_output(dlvm_ctx *ctx, const char *op, const dlvm_val *x, const int64_t *k,
                       const int64_t *s, const int64_t *p, const int64_t *d, int ceil_mode,
                       dlvm_val *out, int64_t *h, int64_t *w, int64_t *ho, int64_t *wo) {
    if (x->rank != 4 && x->rank != 3)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "%s takes NCHW or NCW tensors", op);
    int flat = x->rank == 3;
    *h = flat ? 1 : x->shape[2];
    *w = x->shape[x->rank - 1];
    if (*h + p[0] + p[2] < d[0] * (k[0] - 1) + 1 || *w + p[1] + p[3] < d[1] * (k[1] - 1) + 1)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "%s: the window is larger than the padded "
                            "input", op);
    *ho = pool_out(*h, k[0], s[0], p[0], p[2], d[0], ceil_mode);
    *wo = pool_out(*w, k[1], s[1], p[1], p[3], d[1], ceil_mode);
    int64_t shape[4] = {x->shape[0], x->shape[1], *ho, *wo};
    if (flat) shape[2] = *wo;
    return dlvm_rt_alloc(ctx, out, x->dtype, x->rank, shape);
}

HIDDEN int dlvm_rt_maxpool2d(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *k, const int64_t *s,
                             const int64_t *p, const int64_t *d, int ceil_mode, dlvm_val *out) {
    int64_t h, w, ho, wo;
    if (pool_output(ctx, "maxpool2d", x, k, s, p, d, ceil_mode, out, &h, &w, &ho, &wo)) return 1;
    int64_t planes = x->shape[0] * x->shape[1];
    if (x->dtype == DT_F32) {
        pool2d_job m = {x->data, out->data, h, w, ho, wo, k, s, p, d, 1, 0, 0};
        int64_t work = planes * ho * wo * k[0] * k[1];
        pool_planes(&m, planes, work);
        if (m.failed) return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (maxpool2d)");
    }
    else if (x->dtype == DT_F64) maxpool_double(x->data, out->data, planes, h, w, ho, wo, k, s, p, d);
    else
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "maxpool2d of %s is not compiled ahead of time",
                            dtype_name(x->dtype));
    return 0;
}

/* f64 average pooling (f32 is pool_task's): each output row sums, tap by tap in the window's
 * row-major order, the tap's input row over the output columns whose column is inside the
 * image, then divides by the window's count. */
typedef struct {
    const void *x;
    void *y;
    int64_t h, w, ho, wo;
    const int64_t *k, *s, *p, *d;
    int include_pad;
} avgpool_job;

static void avgpool_double_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const avgpool_job *m = arg;
    int64_t s0 = m->s[0], s1 = m->s[1], p0 = m->p[0], p1 = m->p[1], d0 = m->d[0], d1 = m->d[1];
    int64_t rlo = m->include_pad ? -p0 : 0, rhi = m->include_pad ? m->h + m->p[2] : m->h;
    int64_t clo = m->include_pad ? -p1 : 0, chi = m->include_pad ? m->w + m->p[3] : m->w;
    for (int64_t q = lo; q < hi; q++)
        for (int64_t i = 0; i < m->ho; i++) {
            double *yr = (double *)m->y + (q * m->ho + i) * m->wo;
            for (int64_t j = 0; j < m->wo; j++) yr[j] = 0;
            for (int64_t u = 0; u < m->k[0]; u++) {
                int64_t yy = i * s0 - p0 + u * d0;
                if (yy < 0 || yy >= m->h) continue;
                const double *xr = (const double *)m->x + (q * m->h + yy) * m->w;
                for (int64_t v = 0; v < m->k[1]; v++) {
                    int64_t shift = v * d1 - p1;
                    int64_t j0 = shift >= 0 ? 0 : (-shift + s1 - 1) / s1;
                    int64_t j1 = m->w - 1 - shift < 0 ? 0 : (m->w - 1 - shift) / s1 + 1;
                    if (j1 > m->wo) j1 = m->wo;
                    for (int64_t j = j0; j < j1; j++) yr[j] += xr[j * s1 + shift];
                }
            }
            int64_t rows = window_count(i, m->k[0], s0, p0, d0, rlo, rhi);
            for (int64_t j = 0; j < m->wo; j++)
                yr[j] /= (double)(rows * window_count(j, m->k[1], s1, p1, d1, clo, chi));
        }
}

HIDDEN int dlvm_rt_avgpool2d(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *k, const int64_t *s,
                             const int64_t *p, const int64_t *d, int ceil_mode, int include_pad,
                             dlvm_val *out) {
    if (x->dtype != DT_F32 && x->dtype != DT_F64)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "avgpool2d of %s is not compiled ahead of time",
                            dtype_name(x->dtype));
    int64_t h, w, ho, wo;
    if (pool_output(ctx, "avgpool2d", x, k, s, p, d, ceil_mode, out, &h, &w, &ho, &wo)) return 1;
    int64_t planes = x->shape[0] * x->shape[1];
    int64_t work = planes * ho * wo * k[0] * k[1];
    if (x->dtype == DT_F32) {
        pool2d_job m = {x->data, out->data, h, w, ho, wo, k, s, p, d, 0, include_pad, 0};
        pool_planes(&m, planes, work);
        if (m.failed) return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (avgpool2d)");
    } else {
        avgpool_job m = {x->data, out->data, h, w, ho, wo, k, s, p, d, include_pad};
        dlvm_rt_parallel(avgpool_double_task, &m, planes, work / 65536 + 1);
    }
    return 0;
}

/* 3-D pooling, [N, C, D, H, W]: a window's max (or sum) is the max (sum) over its depth taps
 * of the (H, W) window's, so it is the 2-D pooling of the N*C*D planes, then a pass over depth.
 * An average divides by the window's count, which is the product of the per-axis counts: each
 * step divides by its own. */
#define POOL_DEPTH(NAME, T)                                                                       \
    static void NAME(const T *x, T *y, int64_t planes, int64_t depth, int64_t od, int64_t rest,   \
                     int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int is_max,          \
                     int include_pad) {                                                           \
        for (int64_t q = 0; q < planes; q++)                                                      \
            for (int64_t o = 0; o < od; o++) {                                                    \
                T *yr = y + (q * od + o) * rest;                                                  \
                int first = 1;                                                                    \
                for (int64_t u = 0; u < k; u++) {                                                 \
                    int64_t at = o * s - pb + u * d;                                              \
                    if (at < 0 || at >= depth) continue;                                          \
                    const T *xr = x + (q * depth + at) * rest;                                    \
                    if (first)                                                                    \
                        memcpy(yr, xr, (size_t)rest * sizeof(T));                                 \
                    else if (is_max)                                                              \
                        for (int64_t r = 0; r < rest; r++) {                                      \
                            T t = xr[r], b = yr[r];                                               \
                            yr[r] = (t > b || t != t) && b == b ? t : b;                          \
                        }                                                                         \
                    else                                                                          \
                        for (int64_t r = 0; r < rest; r++) yr[r] += xr[r];                        \
                    first = 0;                                                                    \
                }                                                                                 \
                if (first)      /* only padding under the window: the 2-D step's empty value */  \
                    for (int64_t r = 0; r < rest; r++) yr[r] = is_max ? (T)-INFINITY : (T)0;      \
                if (!is_max) {                                                                    \
                    T n = (T)window_count(o, k, s, pb, d, include_pad ? -pb : 0,                  \
                                          include_pad ? depth + pe : depth);                      \
                    for (int64_t r = 0; r < rest; r++) yr[r] /= n;                                \
                }                                                                                 \
            }                                                                                     \
    }
POOL_DEPTH(pool_depth_float, float)
POOL_DEPTH(pool_depth_double, double)

HIDDEN int dlvm_rt_pool3d(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *k, const int64_t *s,
                          const int64_t *p, const int64_t *d, int ceil_mode, int is_max,
                          int include_pad, dlvm_val *out) {
    if (x->rank != 5)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "3-D pooling takes NCDHW tensors");
    if (x->dtype != DT_F32 && x->dtype != DT_F64)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "3-D pooling of %s is not compiled ahead of "
                            "time", dtype_name(x->dtype));
    int64_t depth = x->shape[2], h = x->shape[3], w = x->shape[4];
    for (int i = 0; i < 3; i++)
        if (x->shape[2 + i] + p[i] + p[i + 3] < d[i] * (k[i] - 1) + 1)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "pooling: the window is larger than the "
                                "padded input");
    int64_t od = pool_out(depth, k[0], s[0], p[0], p[3], d[0], ceil_mode);
    int64_t ho = pool_out(h, k[1], s[1], p[1], p[4], d[1], ceil_mode);
    int64_t wo = pool_out(w, k[2], s[2], p[2], p[5], d[2], ceil_mode);
    int64_t planes = x->shape[0] * x->shape[1];
    /* step 1: the (H, W) windows of every depth slice */
    int64_t k2[2] = {k[1], k[2]}, s2[2] = {s[1], s[2]}, d2[2] = {d[1], d[2]};
    int64_t p2[4] = {p[1], p[2], p[4], p[5]};
    int64_t flat_shape[3] = {planes * depth, ho, wo};
    dlvm_val mid = {0};
    if (dlvm_rt_alloc(ctx, &mid, x->dtype, 3, flat_shape)) return 1;
    int64_t work = planes * depth * ho * wo * k[1] * k[2];
    if (x->dtype == DT_F32) {
        pool2d_job m = {x->data, mid.data, h, w, ho, wo, k2, s2, p2, d2, is_max, include_pad, 0};
        pool_planes(&m, planes * depth, work);
        if (m.failed) {
            dlvm_rt_release(&mid);
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (3-D pooling)");
        }
    } else if (is_max) {
        maxpool_double(x->data, mid.data, planes * depth, h, w, ho, wo, k2, s2, p2, d2);
    } else {
        avgpool_job m = {x->data, mid.data, h, w, ho, wo, k2, s2, p2, d2, include_pad};
        dlvm_rt_parallel(avgpool_double_task, &m, planes * depth, work / 65536 + 1);
    }
    /* step 2: the depth windows */
    int64_t shape[5] = {x->shape[0], x->shape[1], od, ho, wo};
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, 5, shape)) {
        dlvm_rt_release(&mid);
        return 1;
    }
    if (x->dtype == DT_F32)
        pool_depth_float(mid.data, tmp.data, planes, depth, od, ho * wo, k[0], s[0], p[0], p[3],
                         d[0], is_max, include_pad);
    else
        pool_depth_double(mid.data, tmp.data, planes, depth, od, ho * wo, k[0], s[0], p[0], p[3],
                          d[0], is_max, include_pad);
    dlvm_rt_release(&mid);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

/* ---- movement: every result is a new tensor, or shares its operand's buffer (reshape) ------- */

/* shape_of: the operand's extents as an i64 vector (a new tensor) */
HIDDEN int dlvm_rt_shape_of(dlvm_ctx *ctx, const dlvm_val *x, dlvm_val *out) {
    int64_t n = x->rank;
    if (dlvm_rt_alloc(ctx, out, DT_I64, 1, &n)) return 1;
    for (int i = 0; i < x->rank; i++) ((int64_t *)out->data)[i] = x->shape[i];
    return 0;
}

HIDDEN int dlvm_rt_reshape(dlvm_ctx *ctx, const dlvm_val *x, int32_t rank, const int64_t *shape,
                           dlvm_val *out) {
    int64_t want[DLVM_MAX_RANK], known = 1;
    int unknown = -1;
    for (int i = 0; i < rank; i++) {
        want[i] = shape[i];
        if (shape[i] == -1) unknown = i;
        else known *= shape[i];
    }
    int64_t n = dlvm_rt_numel(x);
    if (unknown >= 0) {
        if (known == 0 || n % known)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "cannot reshape %lld elements with a -1 "
                                "beside %lld", (long long)n, (long long)known);
        want[unknown] = n / known;
    } else if (known != n) {
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "cannot reshape %lld elements into %lld",
                            (long long)n, (long long)known);
    }
    dlvm_val v = *x;
    if (v.buf) v.buf->refs++;
    v.rank = rank;
    for (int i = 0; i < rank; i++) v.shape[i] = want[i];
    dlvm_rt_release(out);
    *out = v;
    return 0;
}

/* rows [r0, r1) of a strided copy (a row: the last axis; one whose elements are adjacent in
 * src is one memcpy) */
static void strided_rows(char *dst, const char *src, size_t item, int rank, const int64_t *shape,
                         const int64_t *strides, int64_t offset, int64_t r0, int64_t r1) {
    int64_t inner = shape[rank - 1], step = strides[rank - 1];
    int64_t idx[DLVM_MAX_RANK] = {0};
    int64_t pos = offset;
    int64_t rest = r0;
    for (int dd = rank - 2; dd >= 0; dd--) {      /* row r0's position */
        idx[dd] = rest % shape[dd];
        pos += idx[dd] * strides[dd];
        rest /= shape[dd];
    }
    for (int64_t r = r0; r < r1; r++) {
        char *d = dst + (size_t)(r * inner) * item;
        const char *s = src + (size_t)pos * item;
        if (step == 1)
            memcpy(d, s, (size_t)inner * item);
        else if (item == 4)
            for (int64_t j = 0; j < inner; j++) memcpy(d + 4 * j, s + 4 * j * step, 4);
        else if (item == 8)
            for (int64_t j = 0; j < inner; j++) memcpy(d + 8 * j, s + 8 * j * step, 8);
        else
            for (int64_t j = 0; j < inner; j++) memcpy(d + item * (size_t)j, s + (size_t)(j * step) * item, item);
        for (int dd = rank - 2; dd >= 0; dd--) {
            pos += strides[dd];
            if (++idx[dd] < shape[dd]) break;
            pos -= strides[dd] * shape[dd];
            idx[dd] = 0;
        }
    }
}

/* Blocks [b0, b1) of the last two axes, [rows, inner] each, where the last axis is short: a
 * transposed convolution's interleave of its phases ([.., L, 2] from two planes) copied two
 * floats per row, and the row bookkeeping cost more than the copy (a tenth of a 3x3/2
 * transposed convolution at batch 1). Two planes of f32 interleave in one vectorizable loop. */
static void strided_blocks(char *dst, const char *src, size_t item, int rank, const int64_t *shape,
                           const int64_t *strides, int64_t offset, int64_t b0, int64_t b1) {
    int64_t inner = shape[rank - 1], step = strides[rank - 1];
    int64_t rows = shape[rank - 2], across = strides[rank - 2];
    int64_t idx[DLVM_MAX_RANK] = {0};
    int64_t pos = offset, rest = b0;
    for (int dd = rank - 3; dd >= 0; dd--) {      /* block b0's position */
        idx[dd] = rest % shape[dd];
        pos += idx[dd] * strides[dd];
        rest /= shape[dd];
    }
    for (int64_t blk = b0; blk < b1; blk++) {
        char *d = dst + (size_t)(blk * rows * inner) * item;
        const char *s = src + (size_t)pos * item;
        if (item == 4 && inner == 2 && across == 1) {
            const float *restrict p0 = (const float *)s, *restrict p1 = p0 + step;
            float *restrict out = (float *)d;
            for (int64_t a = 0; a < rows; a++) {
                out[2 * a] = p0[a];
                out[2 * a + 1] = p1[a];
            }
        } else if (item == 4) {
            for (int64_t a = 0; a < rows; a++)
                for (int64_t b = 0; b < inner; b++)
                    memcpy(d + 4 * (a * inner + b), s + 4 * (a * across + b * step), 4);
        } else {
            for (int64_t a = 0; a < rows; a++)
                for (int64_t b = 0; b < inner; b++)
                    memcpy(d + item * (size_t)(a * inner + b),
                           s + item * (size_t)(a * across + b * step), item);
        }
        for (int dd = rank - 3; dd >= 0; dd--) {
            pos += strides[dd];
            if (++idx[dd] < shape[dd]) break;
            pos -= strides[dd] * shape[dd];
            idx[dd] = 0;
        }
    }
}

/* Units [u0, u1) of an f32 copy whose last two axes are a transpose of the source's, [R, C]
 * blocks with dst[a][b] = src[b * step + a]: a unit is 16 rows of one block, moved as 16x16
 * tiles through registers (transpose16). Element by element, an attention's K^T ([8, 16,
 * 1024] -> [8, 1024, 16]) was half of a batched product's time. */
static void transposed_tiles(float *dst, const float *src, int rank, const int64_t *shape,
                             const int64_t *strides, int64_t offset, int64_t u0, int64_t u1) {
    int64_t inner = shape[rank - 1], step = strides[rank - 1], rows = shape[rank - 2];
    int64_t tiles = (rows + 15) / 16;
    for (int64_t u = u0; u < u1; u++) {
        int64_t blk = u / tiles, a0 = u % tiles * 16, na = rows - a0 < 16 ? rows - a0 : 16;
        int64_t pos = offset, rest = blk;
        for (int dd = rank - 3; dd >= 0; dd--) {
            pos += rest % shape[dd] * strides[dd];
            rest /= shape[dd];
        }
        const float *s = src + pos + a0;
        float *d = dst + (blk * rows + a0) * inner;
        int64_t b = 0;
        if (na == 16)
            for (; b + 16 <= inner; b += 16) {
                dw_vec r[16];
                for (int i = 0; i < 16; i++) memcpy(&r[i], s + (b + i) * step, sizeof r[i]);
                transpose16(r);
                for (int i = 0; i < 16; i++) memcpy(d + i * inner + b, &r[i], sizeof r[i]);
            }
        for (int64_t a = 0; a < na; a++)
            for (int64_t c = b; c < inner; c++) d[a * inner + c] = s[c * step + a];
    }
}

typedef struct {
    char *dst;
    const char *src;
    size_t item;
    int rank;
    const int64_t *shape, *strides;
    int64_t offset;
    int blocks;         /* units are blocks of the last two axes (strided_blocks), not rows */
    int tiles;          /* units are 16-row tiles of transposed blocks (transposed_tiles) */
} strided_job;

static void strided_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const strided_job *j = arg;
    if (j->tiles)
        transposed_tiles((float *)j->dst, (const float *)j->src, j->rank, j->shape, j->strides,
                         j->offset, lo, hi);
    else if (j->blocks)
        strided_blocks(j->dst, j->src, j->item, j->rank, j->shape, j->strides, j->offset, lo, hi);
    else
        strided_rows(j->dst, j->src, j->item, j->rank, j->shape, j->strides, j->offset, lo, hi);
}

/* a last axis this short, with no unit stride, is copied in blocks of the last two axes */
#define SHORT_ROW 4

/* dst (contiguous) = the elements of src at offset + sum(idx * strides) (in elements) */
static void strided_copy(char *dst, const char *src, size_t item, int rank, const int64_t *shape,
                         const int64_t *strides, int64_t offset) {
    int64_t n = numel_of(rank, shape);
    if (n == 0) return;
    if (rank == 0) {
        memcpy(dst, src + (size_t)offset * item, item);
        return;
    }
    int blocks = rank >= 2 && shape[rank - 1] <= SHORT_ROW && strides[rank - 1] != 1 &&
                 shape[rank - 2] > 1;
    /* the last two axes a transpose of the source's (its rows along our second-last axis) */
    int tiles = !blocks && item == 4 && rank >= 2 && strides[rank - 2] == 1 &&
                strides[rank - 1] != 1 && shape[rank - 1] >= 16 && shape[rank - 2] >= 16;
    int64_t units = blocks ? n / (shape[rank - 1] * shape[rank - 2]) : n / shape[rank - 1];
    if (tiles) units = n / (shape[rank - 1] * shape[rank - 2]) * ((shape[rank - 2] + 15) / 16);
    strided_job job = {dst, src, item, rank, shape, strides, offset, blocks, tiles};
    int64_t parts = (int64_t)((size_t)n * item / PARALLEL_COPY_BYTES) + 1;
    dlvm_rt_parallel(strided_task, &job, units, parts);
}

static void contiguous_strides(int rank, const int64_t *shape, int64_t *strides) {
    int64_t run = 1;
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = run;
        run *= shape[d];
    }
}

HIDDEN int dlvm_rt_transpose(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *perm, dlvm_val *out) {
    int64_t shape[DLVM_MAX_RANK], st[DLVM_MAX_RANK], src[DLVM_MAX_RANK];
    contiguous_strides(x->rank, x->shape, src);
    for (int d = 0; d < x->rank; d++) {
        shape[d] = x->shape[perm[d]];
        st[d] = src[perm[d]];
    }
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, x->rank, shape)) return 1;
    strided_copy(tmp.data, x->data, dlvm_rt_itemsize(x->dtype), x->rank, shape, st, 0);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

HIDDEN int dlvm_rt_broadcast_to(dlvm_ctx *ctx, const dlvm_val *x, int32_t rank, const int64_t *shape,
                                dlvm_val *out) {
    int64_t src[DLVM_MAX_RANK], st[DLVM_MAX_RANK];
    contiguous_strides(x->rank, x->shape, src);
    for (int d = 0; d < rank; d++) {
        int s = d - (rank - x->rank);
        int64_t size = s >= 0 ? x->shape[s] : 1;
        if (size != 1 && size != shape[d])
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "cannot broadcast dim %d of size %lld to %lld",
                                d, (long long)size, (long long)shape[d]);
        st[d] = size == 1 ? 0 : src[s];
    }
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, rank, shape)) return 1;
    strided_copy(tmp.data, x->data, dlvm_rt_itemsize(x->dtype), rank, shape, st, 0);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

/* the values of a shape operand (an i64 or i32 vector) */
static int shape_values(dlvm_ctx *ctx, const char *op, const dlvm_val *s, int64_t *dims, int *k) {
    if (s->rank != 1 || s->shape[0] > DLVM_MAX_RANK || (s->dtype != DT_I64 && s->dtype != DT_I32))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "%s: a shape operand of rank %d and %s",
                            op, s->rank, dtype_name(s->dtype));
    *k = (int)s->shape[0];
    for (int i = 0; i < *k; i++)
        dims[i] = s->dtype == DT_I64 ? ((const int64_t *)s->data)[i] : ((const int32_t *)s->data)[i];
    return 0;
}

HIDDEN int dlvm_rt_reshape_dyn(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *shape,
                               int copy_zero, dlvm_val *out) {
    int64_t dims[DLVM_MAX_RANK];
    int k, unknown = 0;
    if (shape_values(ctx, "reshape_dyn", shape, dims, &k)) return 1;
    for (int i = 0; i < k; i++) {
        if (copy_zero && dims[i] == 0) {
            if (i >= x->rank)
                return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "reshape_dyn: the shape copies dim %d of "
                                    "a rank-%d operand", i, x->rank);
            dims[i] = x->shape[i];
        }
        if (dims[i] < -1 || (dims[i] == -1 && unknown++))
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "reshape_dyn: the shape has more than one "
                                "-1 or a negative size");
    }
    return dlvm_rt_reshape(ctx, x, k, dims, out);
}

/* a tensor of the shape a run-time vector gives, every element the scalar `value` (ONNX's
 * ConstantOfShape of a shape computed in the graph): the value's bytes copied in doubling runs */
HIDDEN int dlvm_rt_fill_dyn(dlvm_ctx *ctx, const dlvm_val *shape, const dlvm_val *value,
                            dlvm_val *out) {
    int64_t dims[DLVM_MAX_RANK];
    int k;
    if (shape_values(ctx, "fill", shape, dims, &k)) return 1;
    for (int i = 0; i < k; i++)
        if (dims[i] < 0)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "fill: the shape has a negative size %lld",
                                (long long)dims[i]);
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, value->dtype, k, dims)) return 1;
    size_t item = dlvm_rt_itemsize(value->dtype), bytes = (size_t)dlvm_rt_numel(&tmp) * item;
    char *p = tmp.data;
    if (bytes) memcpy(p, value->data, item);
    for (size_t done = item; done < bytes; done *= 2)
        memcpy(p + done, p, done < bytes - done ? done : bytes - done);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

HIDDEN int dlvm_rt_broadcast_dyn(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *shape,
                                 dlvm_val *out) {
    int64_t dims[DLVM_MAX_RANK], want[DLVM_MAX_RANK];
    int k;
    if (shape_values(ctx, "broadcast_dyn", shape, dims, &k)) return 1;
    int n = k > x->rank ? k : x->rank;
    for (int d = 0; d < n; d++) {       /* NumPy's broadcast of the two shapes */
        int a = d - (n - x->rank), b = d - (n - k);
        int64_t sa = a >= 0 ? x->shape[a] : 1, sb = b >= 0 ? dims[b] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "broadcast_dyn: dim %d of size %lld and %lld "
                                "do not broadcast", d, (long long)sa, (long long)sb);
        want[d] = sa == 1 ? sb : sa;
    }
    return dlvm_rt_broadcast_to(ctx, x, n, want, out);
}

/* pad with a constant: begins[d] / ends[d] elements before / after each axis (negative: crop) */
HIDDEN int dlvm_rt_pad(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *begins, const int64_t *ends,
                       double value, dlvm_val *out) {
    int rank = x->rank;
    int64_t shape[DLVM_MAX_RANK], src[DLVM_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        shape[d] = x->shape[d] + begins[d] + ends[d];
        if (shape[d] < 0)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "pad crops axis %d below size 0", d);
    }
    contiguous_strides(rank, x->shape, src);
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, rank, shape)) return 1;
    size_t item = dlvm_rt_itemsize(x->dtype);
    unsigned char fill[8] = {0};
    switch (x->dtype) {      /* converted as cast converts a float: integers truncate */
    case DT_F32: { float v = (float)value; memcpy(fill, &v, 4); break; }
    case DT_F64: memcpy(fill, &value, 8); break;
    case DT_BOOL: case DT_U8: fill[0] = value != 0 && x->dtype == DT_BOOL ? 1 : (uint8_t)(int64_t)value; break;
    case DT_I8: { int8_t v = (int8_t)(int64_t)value; memcpy(fill, &v, 1); break; }
    case DT_I16: { int16_t v = (int16_t)(int64_t)value; memcpy(fill, &v, 2); break; }
    case DT_U16: { uint16_t v = (uint16_t)(int64_t)value; memcpy(fill, &v, 2); break; }
    case DT_I32: { int32_t v = (int32_t)(int64_t)value; memcpy(fill, &v, 4); break; }
    case DT_U32: { uint32_t v = (uint32_t)(int64_t)value; memcpy(fill, &v, 4); break; }
    case DT_I64: { int64_t v = (int64_t)value; memcpy(fill, &v, 8); break; }
    case DT_U64: { uint64_t v = (uint64_t)(int64_t)value; memcpy(fill, &v, 8); break; }
    default:
        dlvm_rt_release(&tmp);
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "pad of %s is not compiled ahead of time",
                            dtype_name(x->dtype));
    }
    int64_t total = dlvm_rt_numel(&tmp);
    unsigned char *y = tmp.data;
    const unsigned char *xs = x->data;
    if (rank == 0) {
        if (total) memcpy(y, xs, item);
    } else {
        int64_t row = shape[rank - 1], rows = row ? total / row : 0;
        int64_t b = begins[rank - 1], lo = b > 0 ? b : 0;
        int64_t hi = x->shape[rank - 1] + b < row ? x->shape[rank - 1] + b : row;
        int64_t idx[DLVM_MAX_RANK] = {0};
        for (int64_t r = 0; r < rows; r++) {
            unsigned char *yr = y + (size_t)(r * row) * item;
            for (int64_t j = 0; j < row; j++) memcpy(yr + (size_t)j * item, fill, item);
            int64_t off = 0, inside = 1;
            for (int d = 0; d < rank - 1; d++) {
                int64_t i = idx[d] - begins[d];
                if (i < 0 || i >= x->shape[d]) inside = 0;
                off += i * src[d];
            }
            if (inside && hi > lo)
                memcpy(yr + (size_t)lo * item, xs + (size_t)(off + lo - b) * item,
                       (size_t)(hi - lo) * item);
            for (int d = rank - 2; d >= 0; d--) {
                if (++idx[d] < shape[d]) break;
                idx[d] = 0;
            }
        }
    }
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

/* One run of reduced axes between kept ones, as (outer, red, inner) over contiguous data: each
 * output element reduces `red` inputs `inner` apart. Sums accumulate in double, max / min in the
 * input type (exact either way) with a NaN flag, so the loops have no branches and vectorize: the
 * element-at-a-time walk of the general case was 55% of an attention-over-channels model. */
typedef struct {
    const void *x;
    void *y;
    int f32, kind;
    int64_t outer, red, inner, chunks;
} reduce_job;

#define REDUCE_CHUNK 256             /* inner outputs per task: their accumulators stay in L1 */
#define REDUCE_LANES 8

#define DEFINE_REDUCE_KERNELS(T, NAME)                                                          \
static double NAME##_row_sum(const T *x, int64_t n, int prod) {                                 \
    double acc[REDUCE_LANES];                                                                   \
    for (int j = 0; j < REDUCE_LANES; j++) acc[j] = prod ? 1.0 : 0.0;                           \
    int64_t i = 0;                                                                              \
    for (; i + REDUCE_LANES <= n; i += REDUCE_LANES)                                            \
        for (int j = 0; j < REDUCE_LANES; j++)                                                  \
            acc[j] = prod ? acc[j] * (double)x[i + j] : acc[j] + (double)x[i + j];              \
    double s = prod ? 1.0 : 0.0;                                                                \
    for (int j = 0; j < REDUCE_LANES; j++) s = prod ? s * acc[j] : s + acc[j];                  \
    for (; i < n; i++) s = prod ? s * (double)x[i] : s + (double)x[i];                          \
    return s;                                                                                   \
}                                                                                               \
static T NAME##_row_ext(const T *x, int64_t n, int is_max) {                                    \
    T m[REDUCE_LANES];                                                                          \
    int nan[REDUCE_LANES] = {0};                                                                \
    for (int j = 0; j < REDUCE_LANES; j++) m[j] = is_max ? -INFINITY : INFINITY;                \
    int64_t i = 0;                                                                              \
    for (; i + REDUCE_LANES <= n; i += REDUCE_LANES)                                            \
        for (int j = 0; j < REDUCE_LANES; j++) {                                                \
            T v = x[i + j];                                                                     \
            m[j] = (is_max ? v > m[j] : v < m[j]) ? v : m[j];                                   \
            nan[j] |= v != v;                                                                   \
        }                                                                                       \
    T r = m[0];                                                                                 \
    int any = nan[0];                                                                           \
    for (int j = 1; j < REDUCE_LANES; j++) {                                                    \
        r = (is_max ? m[j] > r : m[j] < r) ? m[j] : r;                                          \
        any |= nan[j];                                                                          \
    }                                                                                           \
    for (; i < n; i++) {                                                                        \
        r = (is_max ? x[i] > r : x[i] < r) ? x[i] : r;                                          \
        any |= x[i] != x[i];                                                                    \
    }                                                                                           \
    return any ? (T)NAN : r;                                                                    \
}                                                                                               \
static void NAME##_reduce_task(const reduce_job *j, int64_t lo, int64_t hi) {                   \
    const T *x = j->x;                                                                          \
    T *y = j->y;                                                                                \
    int kind = j->kind;                                                                         \
    double count = (double)j->red;                                                              \
    if (j->inner == 1) {                                                                        \
        for (int64_t o = lo; o < hi; o++) {                                                     \
            const T *row = x + o * j->red;                                                      \
            if (kind == 2 || kind == 3) { y[o] = NAME##_row_ext(row, j->red, kind == 2); continue; } \
            double s = NAME##_row_sum(row, j->red, kind == 4);                                  \
            y[o] = (T)(kind == 1 ? (j->red ? s / count : NAN) : s);                             \
        }                                                                                       \
        return;                                                                                 \
    }                                                                                           \
    double acc[REDUCE_CHUNK];                                                                   \
    T ext[REDUCE_CHUNK];                                                                        \
    int nan[REDUCE_CHUNK];                                                                      \
    for (int64_t t = lo; t < hi; t++) {                                                         \
        int64_t o = t / j->chunks, c0 = (t % j->chunks) * REDUCE_CHUNK;                         \
        int64_t w = j->inner - c0 < REDUCE_CHUNK ? j->inner - c0 : REDUCE_CHUNK;                \
        const T *base = x + o * j->red * j->inner + c0;                                         \
        T *out = y + o * j->inner + c0;                                                         \
        if (kind == 2 || kind == 3) {                                                           \
            int is_max = kind == 2;                                                             \
            for (int64_t i = 0; i < w; i++) { ext[i] = is_max ? -INFINITY : INFINITY; nan[i] = 0; } \
            for (int64_t r = 0; r < j->red; r++) {                                              \
                const T *src = base + r * j->inner;                                             \
                for (int64_t i = 0; i < w; i++) {                                               \
                    T v = src[i];                                                               \
                    ext[i] = (is_max ? v > ext[i] : v < ext[i]) ? v : ext[i];                   \
                    nan[i] |= v != v;                                                           \
                }                                                                               \
            }                                                                                   \
            for (int64_t i = 0; i < w; i++) out[i] = nan[i] ? (T)NAN : ext[i];                  \
            continue;                                                                           \
        }                                                                                       \
        int prod = kind == 4;                                                                   \
        for (int64_t i = 0; i < w; i++) acc[i] = prod ? 1.0 : 0.0;                              \
        for (int64_t r = 0; r < j->red; r++) {                                                  \
            const T *src = base + r * j->inner;                                                 \
            if (prod) for (int64_t i = 0; i < w; i++) acc[i] *= (double)src[i];                 \
            else for (int64_t i = 0; i < w; i++) acc[i] += (double)src[i];                      \
        }                                                                                       \
        for (int64_t i = 0; i < w; i++)                                                         \
            out[i] = (T)(kind == 1 ? (j->red ? acc[i] / count : NAN) : acc[i]);                 \
    }                                                                                           \
}

DEFINE_REDUCE_KERNELS(float, f32)
DEFINE_REDUCE_KERNELS(double, f64)

static void reduce_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const reduce_job *j = arg;
    if (j->f32) f32_reduce_task(j, lo, hi);
    else f64_reduce_task(j, lo, hi);
}

/* The axes of `x` as runs of reduced and kept extents (extent-1 axes dropped): one reduced run
 * with kept ones around it is (outer, red, inner); anything else returns 0. */
static int reduce_as_one_run(const dlvm_val *x, uint32_t mask, int64_t *outer, int64_t *red,
                             int64_t *inner) {
    int64_t part[3] = {1, 1, 1};
    int stage = 0;                        /* 0: before the reduced run, 1: in it, 2: after */
    for (int d = 0; d < x->rank; d++) {
        int64_t n = x->shape[d];
        if (n == 1) continue;
        int r = (mask >> d) & 1;
        if (r && stage == 2) return 0;
        if (r) stage = 1;
        else if (stage == 1) stage = 2;
        part[stage] *= n;
    }
    *outer = part[0], *red = part[1], *inner = part[2];
    return 1;
}

/* A float reduction over any axes (the region kernels fold only trailing ones): kind 0 sum,
 * 1 mean, 2 max, 3 min, 4 prod; `mask` has bit d set for a reduced axis. Sums accumulate in
 * double. An empty max / min is left to the VM (a guard), which traps as the op defines. */
HIDDEN int dlvm_rt_reduce(dlvm_ctx *ctx, const dlvm_val *x, uint32_t mask, int kind, int keepdims,
                          dlvm_val *out) {
    if (x->dtype != DT_F32 && x->dtype != DT_F64)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "a reduction of %s over these axes is not "
                            "compiled ahead of time", dtype_name(x->dtype));
    int rank = x->rank, r = 0;
    int64_t shape[DLVM_MAX_RANK], ostride[DLVM_MAX_RANK], count = 1, n_out = 1;
    for (int d = rank - 1; d >= 0; d--) {
        int red = (mask >> d) & 1;
        ostride[d] = red ? 0 : n_out;
        if (red) count *= x->shape[d];
        else n_out *= x->shape[d];
    }
    for (int d = 0; d < rank; d++)
        if (!((mask >> d) & 1)) shape[r++] = x->shape[d];
        else if (keepdims) shape[r++] = 1;
    if (count == 0 && (kind == 2 || kind == 3))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "a maximum or minimum over an empty axis");
    reduce_job job = {.f32 = x->dtype == DT_F32, .kind = kind};
    if (count > 0 && n_out > 0 && reduce_as_one_run(x, mask, &job.outer, &job.red, &job.inner)) {
        dlvm_val tmp = {0};
        if (dlvm_rt_alloc(ctx, &tmp, x->dtype, r, shape)) return 1;
        job.x = x->data;
        job.y = tmp.data;
        job.chunks = (job.inner + REDUCE_CHUNK - 1) / REDUCE_CHUNK;
        int64_t tasks = job.inner == 1 ? job.outer : job.outer * job.chunks;
        dlvm_rt_parallel(reduce_task, &job, tasks, count * n_out / 65536 + 1);
        dlvm_rt_release(out);
        *out = tmp;
        return 0;
    }
    double *acc = malloc((size_t)(n_out ? n_out : 1) * sizeof(double));
    if (!acc) return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (reduction)");
    double init = kind == 4 ? 1.0 : kind == 2 ? -INFINITY : kind == 3 ? INFINITY : 0.0;
    for (int64_t i = 0; i < n_out; i++) acc[i] = init;
    int64_t total = dlvm_rt_numel(x), idx[DLVM_MAX_RANK] = {0}, o = 0;
    for (int64_t i = 0; i < total; i++) {
        double v = x->dtype == DT_F32 ? ((const float *)x->data)[i] : ((const double *)x->data)[i];
        double *a = &acc[o];
        switch (kind) {
        case 2: if (v > *a || isnan(v)) *a = isnan(*a) ? *a : v; break;
        case 3: if (v < *a || isnan(v)) *a = isnan(*a) ? *a : v; break;
        case 4: *a *= v; break;
        default: *a += v;
        }
        for (int d = rank - 1; d >= 0; d--) {       /* next index; the output offset follows */
            o += ostride[d];
            if (++idx[d] < x->shape[d]) break;
            o -= ostride[d] * idx[d];
            idx[d] = 0;
        }
    }
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, r, shape)) { free(acc); return 1; }
    for (int64_t i = 0; i < n_out; i++) {
        double v = kind == 1 ? (count ? acc[i] / (double)count : NAN) : acc[i];
        if (x->dtype == DT_F32) ((float *)tmp.data)[i] = (float)v;
        else ((double *)tmp.data)[i] = v;
    }
    free(acc);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

static double element_as_double(const dlvm_val *x, int64_t i) {
    switch (x->dtype) {
    case DT_F32: return ((const float *)x->data)[i];
    case DT_F64: return ((const double *)x->data)[i];
    case DT_I8: return ((const int8_t *)x->data)[i];
    case DT_U8: case DT_BOOL: return ((const uint8_t *)x->data)[i];
    case DT_I16: return ((const int16_t *)x->data)[i];
    case DT_U16: return ((const uint16_t *)x->data)[i];
    case DT_I32: return ((const int32_t *)x->data)[i];
    case DT_U32: return ((const uint32_t *)x->data)[i];
    default: return 0.0;
    }
}

/* argmax / argmin of 64-bit integers, compared exactly (as doubles they would lose precision):
 * token ids, where a text encoder picks each sequence's end token by the largest id (CLIP); a
 * guard there sent the whole model to the VM */
#define ARGEXT_INT(T, NAME)                                                                    \
    static void NAME(const T *x, int64_t *y, int64_t outer, int64_t size, int64_t inner,    \
                     int sign) {                                                           \
        for (int64_t a = 0; a < outer; a++)                                                \
            for (int64_t b = 0; b < inner; b++) {                                          \
                const T *v = x + a * size * inner + b;                                     \
                T best = v[0];                                                             \
                int64_t at = 0;                                                            \
                for (int64_t k = 1; k < size; k++) {                                       \
                    T e = v[k * inner];                                                    \
                    if (sign > 0 ? e > best : e < best) { best = e; at = k; }              \
                }                                                                          \
                y[a * inner + b] = at;                                                     \
            }                                                                              \
    }
ARGEXT_INT(int64_t, argext_i64)
ARGEXT_INT(uint64_t, argext_u64)

/* argmax (sign 1) / argmin (sign -1) along `axis`: the i64 index of the first extreme, a NaN
 * counting as the extreme (NumPy's rule). */
HIDDEN int dlvm_rt_argext(dlvm_ctx *ctx, const dlvm_val *x, int64_t axis, int keepdims, int sign,
                          dlvm_val *out) {
    if (x->dtype == DT_F16)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "arg%s of %s is not compiled ahead of time",
                            sign > 0 ? "max" : "min", dtype_name(x->dtype));
    int rank = x->rank;
    if (axis < 0) axis += rank;
    int64_t size = x->shape[axis];
    if (size == 0)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "arg%s over an empty axis", sign > 0 ? "max" : "min");
    int64_t shape[DLVM_MAX_RANK];
    int r = 0;
    for (int d = 0; d < rank; d++)
        if (d != axis) shape[r++] = x->shape[d];
        else if (keepdims) shape[r++] = 1;
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, DT_I64, r, shape)) return 1;
    int64_t outer = numel_of((int)axis, x->shape), inner = numel_of(rank - (int)axis - 1, x->shape + axis + 1);
    int64_t *y = tmp.data;
    if (x->dtype == DT_I64 || x->dtype == DT_U64) {
        if (x->dtype == DT_I64) argext_i64(x->data, y, outer, size, inner, sign);
        else argext_u64(x->data, y, outer, size, inner, sign);
        dlvm_rt_release(out);
        *out = tmp;
        return 0;
    }
    size_t best_bytes = (size_t)inner * 4;
    float *best_row = x->dtype == DT_F32 && inner > 1 ? buffer_alloc(&best_bytes) : NULL;
    if (best_row) {
        /* f32 over an inner axis (a segmentation map's argmax over classes): whole rows of the
         * other axes at a time, contiguous and vectorizable, where one position at a time
         * strode across every plane (2.3x onnxruntime's time) */
        const float *xf = x->data;
        for (int64_t a = 0; a < outer; a++) {
            const float *plane = xf + a * size * inner;
            int64_t *yi = y + a * inner;
            memcpy(best_row, plane, (size_t)inner * 4);
            for (int64_t b = 0; b < inner; b++) yi[b] = 0;
            for (int64_t k = 1; k < size; k++) {
                const float *row = plane + k * inner;
                for (int64_t b = 0; b < inner; b++) {
                    float v = row[b], cur = best_row[b];
                    /* the first NaN wins and stays */
                    int take = cur == cur && (v != v || (sign > 0 ? v > cur : v < cur));
                    best_row[b] = take ? v : cur;
                    yi[b] = take ? k : yi[b];
                }
            }
        }
        buffer_free(best_row, best_bytes);
        dlvm_rt_release(out);
        *out = tmp;
        return 0;
    }
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            int64_t best_i = 0;
            double best = element_as_double(x, a * size * inner + b);
            if (best == best)
                for (int64_t k = 1; k < size; k++) {
                    double v = element_as_double(x, (a * size + k) * inner + b);
                    if (v != v) { best_i = k; break; }
                    if (sign > 0 ? v > best : v < best) { best = v; best_i = k; }
                }
            y[a * inner + b] = best_i;
        }
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

/* range start, limit, delta: start + i * delta in the operands' dtype (ONNX Range) */
/* cumsum and cumprod along the axis an integer scalar names (negative from the end), with the
 * ops' exclusive (shift by one, the identity first) and reverse (from the end) attributes; f32,
 * f64, i32, i64. Rows along the axis are walked with the axis's stride, one outer x inner pair
 * at a time, in the order of the reference (np.cumsum / np.cumprod: sequential). */
#define CUMSUM(T, NAME, IDENT, OP)                                                              \
    static void NAME(const void *xv, void *yv, int64_t outer, int64_t len, int64_t inner,      \
                     int exclusive, int reverse) {                                              \
        const T *x = xv;                                                                        \
        T *y = yv;                                                                              \
        for (int64_t o = 0; o < outer; o++)                                                     \
            for (int64_t i = 0; i < inner; i++) {                                               \
                const T *xr = x + o * len * inner + i;                                          \
                T *yr = y + o * len * inner + i;                                                \
                T acc = IDENT;                                                                  \
                for (int64_t j = 0; j < len; j++) {                                             \
                    int64_t at = (reverse ? len - 1 - j : j) * inner;                           \
                    T v = xr[at];                                                               \
                    if (exclusive) {                                                            \
                        yr[at] = acc;                                                           \
                        acc OP v;                                                               \
                    } else {                                                                    \
                        acc OP v;                                                               \
                        yr[at] = acc;                                                           \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
    }
CUMSUM(float, cumsum_float, 0, +=)
CUMSUM(double, cumsum_double, 0, +=)
CUMSUM(int32_t, cumsum_i32, 0, +=)
CUMSUM(int64_t, cumsum_i64, 0, +=)
CUMSUM(float, cumprod_float, 1, *=)
CUMSUM(double, cumprod_double, 1, *=)
CUMSUM(int32_t, cumprod_i32, 1, *=)
CUMSUM(int64_t, cumprod_i64, 1, *=)

/* product: 0 for cumsum, 1 for cumprod */
HIDDEN int dlvm_rt_cumulative(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *axis,
                              int product, int exclusive, int reverse, dlvm_val *out) {
    if (dlvm_rt_numel(axis) != 1 || (axis->dtype != DT_I32 && axis->dtype != DT_I64))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "%s: the axis must be one integer",
                            product ? "cumprod" : "cumsum");
    int64_t ax = axis->dtype == DT_I64 ? ((const int64_t *)axis->data)[0]
                                       : ((const int32_t *)axis->data)[0];
    if (ax < -x->rank || ax >= x->rank)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "%s: axis %lld is out of range for rank %d",
                            product ? "cumprod" : "cumsum", (long long)ax, x->rank);
    if (ax < 0) ax += x->rank;
    void (*fn)(const void *, void *, int64_t, int64_t, int64_t, int, int) =
        x->dtype == DT_F32 ? (product ? cumprod_float : cumsum_float) :
        x->dtype == DT_F64 ? (product ? cumprod_double : cumsum_double) :
        x->dtype == DT_I32 ? (product ? cumprod_i32 : cumsum_i32) :
        x->dtype == DT_I64 ? (product ? cumprod_i64 : cumsum_i64) : NULL;
    if (!fn)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "%s of %s is not compiled ahead of time",
                            product ? "cumprod" : "cumsum", dtype_name(x->dtype));
    int64_t outer = 1, inner = 1, len = x->shape[ax];
    for (int d = 0; d < ax; d++) outer *= x->shape[d];
    for (int d = (int)ax + 1; d < x->rank; d++) inner *= x->shape[d];
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, x->rank, x->shape)) return 1;
    fn(x->data, tmp.data, outer, len, inner, exclusive, reverse);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

/* topk along `axis` (the op's reference: a stable sort, so equal elements keep their index
 * order, the lower first; NaNs sort last whether largest or smallest). Pairs (value, index)
 * compare with the index as the tie-break, so the order is total and any sort gives the
 * reference's. A few of many (k <= TOPK_SELECT, a nearest-neighbour search's): one pass keeping
 * the best k in order, most elements rejected by one comparison with the k-th; else a merge
 * sort of the whole row (glibc's qsort with a comparator call per comparison was 60% of a
 * point-cloud model). Rows are split across the pool (`topk_parts`). */
#define TOPK_SELECT 64

typedef struct {
    const void *x;
    void *y;
    int64_t *iv;
    int64_t len, inner, k;
    int is_f32, largest, failed;
} topk_job;

static int topk_selects(int64_t k, int64_t len) { return k > 0 && k <= TOPK_SELECT && 4 * k <= len; }

/* about 16K elements a part (a part's set-up, its buffers, is a few hundred nanoseconds) */
static void topk_parts(dlvm_rt_task task, topk_job *t, int64_t outer) {
    int64_t rows = outer * t->inner, parts = rows * t->len / 16384 + 1;
    dlvm_rt_parallel(task, t, rows, parts < rows ? parts : rows);
}

#define TOPK(T, NAME)                                                                              \
    typedef struct { T v; int64_t i; } NAME##_pair;                                                \
    /* whether a goes before b */                                                                  \
    static inline int NAME##_before(NAME##_pair a, NAME##_pair b, int largest) {                   \
        int an = a.v != a.v, bn = b.v != b.v;                                                      \
        if (an != bn) return bn;                        /* a NaN after any number */               \
        if (!an && a.v != b.v) return largest ? a.v > b.v : a.v < b.v;                             \
        return a.i < b.i;                                                                          \
    }                                                                                              \
    static void NAME##_msort(NAME##_pair *a, NAME##_pair *tmp, int64_t n, int largest) {           \
        for (int64_t w = 1; w < n; w *= 2) {                                                       \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                            \
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;       \
                int64_t i = lo, j = mid, o = lo;                                                   \
                while (i < mid && j < hi)                                                          \
                    tmp[o++] = NAME##_before(a[j], a[i], largest) ? a[j++] : a[i++];               \
                while (i < mid) tmp[o++] = a[i++];                                                 \
                while (j < hi) tmp[o++] = a[j++];                                                  \
            }                                                                                      \
            memcpy(a, tmp, sizeof *a * (size_t)n);                                                 \
        }                                                                                          \
    }                                                                                              \
    /* rows [lo, hi) (row = outer index * inner + inner index) */                                  \
    static void NAME##_task(void *arg, int64_t lo, int64_t hi, int64_t part) {                     \
        (void)part;                                                                                \
        topk_job *t = arg;                                                                         \
        int64_t len = t->len, inner = t->inner, k = t->k;                                          \
        int largest = t->largest, select = topk_selects(k, len);                                   \
        size_t n = (size_t)(len ? len : 1);                                                        \
        NAME##_pair *row = malloc(sizeof *row * n * 2);                                            \
        if (!row) {                                                                                \
            __atomic_store_n(&t->failed, 1, __ATOMIC_RELAXED);                                     \
            return;                                                                                \
        }                                                                                          \
        NAME##_pair *tmp = row + n;                                                                \
        const T *x = t->x;                                                                         \
        T *y = t->y;                                                                               \
        for (int64_t r = lo; r < hi && k > 0; r++) {                                               \
            int64_t o = r / inner, c = r % inner;                                                  \
            const T *src = x + o * len * inner + c;                                                \
            if (select) {                                                                          \
                int64_t have = 0;                                                                  \
                for (int64_t j = 0; j < len; j++) {                                                \
                    NAME##_pair p = {src[j * inner], j};                                           \
                    if (have == k && !NAME##_before(p, row[k - 1], largest)) continue;             \
                    int64_t at = have < k ? have++ : k - 1;                                        \
                    while (at > 0 && NAME##_before(p, row[at - 1], largest)) {                     \
                        row[at] = row[at - 1];                                                     \
                        at--;                                                                      \
                    }                                                                              \
                    row[at] = p;                                                                   \
                }                                                                                  \
            } else {                                                                               \
                for (int64_t j = 0; j < len; j++) {                                                \
                    row[j].v = src[j * inner];                                                     \
                    row[j].i = j;                                                                  \
                }                                                                                  \
                NAME##_msort(row, tmp, len, largest);                                              \
            }                                                                                      \
            for (int64_t j = 0; j < k; j++) {                                                      \
                y[(o * k + j) * inner + c] = row[j].v;                                             \
                t->iv[(o * k + j) * inner + c] = row[j].i;                                         \
            }                                                                                      \
        }                                                                                          \
        free(row);                                                                                 \
    }
TOPK(double, topk_double)
TOPK(int64_t, topk_i64)
TOPK(float, topk_float)          /* f32 and i32 rows too long for 32-bit indices in a key */
TOPK(int32_t, topk_i32)

/* f32 and i32 rows as 64-bit keys: the value mapped to an unsigned order (descending for
 * largest; NaNs last either way; -0 as +0, equal to it as in the reference) above the index,
 * so that plain integer comparisons give the reference's total order. Sorts take runs of 8 by
 * insertion, then branch-free merges: the pairs' comparator (NaN tests, the index tie-break,
 * branches that mispredict) made a sort of 64-float rows (torch.sort, topk of most of a row)
 * 3.5x onnxruntime's time, and a nearest-neighbour search's select (k = 16 of 256) 8 ns an
 * element. */
static inline uint32_t order_key32(const void *row, int64_t j, int is_f32, int largest) {
    uint32_t u;
    if (is_f32) {
        float f = ((const float *)row)[j];
        if (f != f) return 0xFFFFFFFFu;
        if (f == 0.0f) f = 0.0f;
        memcpy(&u, &f, 4);
        u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    } else {
        u = (uint32_t)((const int32_t *)row)[j] ^ 0x80000000u;
    }
    return largest ? ~u : u;
}

static void sort_keys(uint64_t *a, uint64_t *tmp, int64_t n) {
    for (int64_t lo = 0; lo < n; lo += 8) {
        int64_t hi = lo + 8 < n ? lo + 8 : n;
        for (int64_t i = lo + 1; i < hi; i++) {
            uint64_t v = a[i];
            int64_t j = i;
            for (; j > lo && a[j - 1] > v; j--) a[j] = a[j - 1];
            a[j] = v;
        }
    }
    uint64_t *src = a, *dst = tmp;
    for (int64_t w = 8; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                uint64_t x = src[i], y = src[j];
                int take = y < x;
                dst[o++] = take ? y : x;
                i += !take;
                j += take;
            }
            while (i < mid) dst[o++] = src[i++];
            while (j < hi) dst[o++] = src[j++];
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)n * 8);
}

/* the best k keys of a row, in order, into keys[0, k): an element is admitted only below the
 * k-th so far (one integer comparison rejects most of a long row) */
static void select_keys(const uint32_t *row, int64_t len, int64_t k, int is_f32, int largest,
                        uint64_t *keys) {
    int64_t have = 0;
    uint64_t worst = UINT64_MAX;
    for (int64_t j = 0; j < len; j++) {
        uint64_t key = (uint64_t)order_key32(row, j, is_f32, largest) << 32 | (uint64_t)j;
        if (key >= worst) continue;
        int64_t at = have < k ? have++ : k - 1;
        for (; at > 0 && keys[at - 1] > key; at--) keys[at] = keys[at - 1];
        keys[at] = key;
        if (have == k) worst = keys[k - 1];
    }
}

/* rows [lo, hi) (row = outer index * inner + inner index) */
static void keyed_topk_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    topk_job *t = arg;
    int64_t len = t->len, inner = t->inner, k = t->k;
    int select = topk_selects(k, len);
    uint64_t *keys = malloc(sizeof *keys * (size_t)len * 2);
    uint32_t *copy = inner > 1 ? malloc(4 * (size_t)len) : NULL;
    if (!keys || (inner > 1 && !copy)) {
        free(keys);
        free(copy);
        __atomic_store_n(&t->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    const uint32_t *x = t->x;
    uint32_t *y = t->y;
    for (int64_t r = lo; r < hi; r++) {
        int64_t o = r / inner, c = r % inner;
        const uint32_t *line = x + o * len * inner + c, *row = line;
        if (inner > 1) {
            for (int64_t j = 0; j < len; j++) copy[j] = line[j * inner];
            row = copy;
        }
        if (select) {
            select_keys(row, len, k, t->is_f32, t->largest, keys);
        } else {
            for (int64_t j = 0; j < len; j++)
                keys[j] = (uint64_t)order_key32(row, j, t->is_f32, t->largest) << 32 | (uint64_t)j;
            sort_keys(keys, keys + len, len);
        }
        for (int64_t j = 0; j < k; j++) {
            int64_t at = (int64_t)(keys[j] & 0xFFFFFFFFu);
            y[(o * k + j) * inner + c] = row[at];
            t->iv[(o * k + j) * inner + c] = at;
        }
    }
    free(keys);
    free(copy);
}

HIDDEN int dlvm_rt_topk(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *kv, int64_t axis,
                        int largest, dlvm_val *values, dlvm_val *indices) {
    if (dlvm_rt_numel(kv) != 1 || (kv->dtype != DT_I32 && kv->dtype != DT_I64))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "topk: k must be one integer");
    int64_t k = kv->dtype == DT_I64 ? ((const int64_t *)kv->data)[0]
                                    : ((const int32_t *)kv->data)[0];
    if (axis < 0) axis += x->rank;
    int64_t len = x->shape[axis];
    if (k < 0 || k > len)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "topk: k = %lld is outside [0, %lld]",
                            (long long)k, (long long)len);
    int keyed = (x->dtype == DT_F32 || x->dtype == DT_I32) && len < ((int64_t)1 << 31);
    dlvm_rt_task task = keyed ? keyed_topk_task : x->dtype == DT_F64 ? topk_double_task :
        x->dtype == DT_I64 ? topk_i64_task : x->dtype == DT_F32 ? topk_float_task :
        x->dtype == DT_I32 ? topk_i32_task : NULL;
    if (!task)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "topk of %s is not compiled ahead of time",
                            dtype_name(x->dtype));
    int64_t shape[DLVM_MAX_RANK], outer = 1, inner = 1;
    for (int d = 0; d < x->rank; d++) shape[d] = d == axis ? k : x->shape[d];
    for (int d = 0; d < axis; d++) outer *= x->shape[d];
    for (int d = (int)axis + 1; d < x->rank; d++) inner *= x->shape[d];
    dlvm_val v = {0}, ix = {0};
    if (dlvm_rt_alloc(ctx, &v, x->dtype, x->rank, shape)) return 1;
    if (dlvm_rt_alloc(ctx, &ix, DT_I64, x->rank, shape)) {
        dlvm_rt_release(&v);
        return 1;
    }
    topk_job job = {x->data, v.data, ix.data, len, inner, k, x->dtype == DT_F32, largest, 0};
    if (k > 0 && outer * inner > 0) topk_parts(task, &job, outer);
    if (job.failed) {
        dlvm_rt_release(&v);
        dlvm_rt_release(&ix);
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (topk)");
    }
    dlvm_rt_release(values);
    *values = v;
    dlvm_rt_release(indices);
    *indices = ix;
    return 0;
}

HIDDEN int dlvm_rt_range(dlvm_ctx *ctx, const dlvm_val *start, const dlvm_val *limit,
                         const dlvm_val *delta, dlvm_val *out) {
    int32_t dt = start->dtype;
    if (dt != DT_I64 && dt != DT_I32 && dt != DT_F32 && dt != DT_F64)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "range of %s is not compiled ahead of time",
                            dtype_name(dt));
    double s0 = element_as_double(start, 0), l0 = element_as_double(limit, 0);
    double d0 = element_as_double(delta, 0);
    if (dt == DT_I64) {
        s0 = (double)((const int64_t *)start->data)[0];
        l0 = (double)((const int64_t *)limit->data)[0];
        d0 = (double)((const int64_t *)delta->data)[0];
    }
    if (d0 == 0) return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "range: delta is 0");
    double count = ceil((l0 - s0) / d0);
    int64_t n = count > 0 ? (int64_t)count : 0;
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, dt, 1, &n)) return 1;
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case DT_I64: ((int64_t *)tmp.data)[i] = ((const int64_t *)start->data)[0] +
                                                 i * ((const int64_t *)delta->data)[0]; break;
        case DT_I32: ((int32_t *)tmp.data)[i] = (int32_t)(((const int32_t *)start->data)[0] +
                                                 (int32_t)i * ((const int32_t *)delta->data)[0]); break;
        case DT_F32: ((float *)tmp.data)[i] = ((const float *)start->data)[0] +
                                               (float)i * ((const float *)delta->data)[0]; break;
        default: ((double *)tmp.data)[i] = s0 + (double)i * d0;
        }
    }
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

/* gather_nd with batch_dims b (ONNX GatherND): per batch entry, each index tuple of length k
 * (the last dim of idx) picks a slice a[batch][i0, ..., ik-1]; negative indices count from the
 * back, out-of-range ones trap */
HIDDEN int dlvm_rt_gather_nd(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx, int64_t b,
                             dlvm_val *out) {
    if (idx->dtype != DT_I64 && idx->dtype != DT_I32)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "gather_nd indices of %s", dtype_name(idx->dtype));
    int64_t k = idx->shape[idx->rank - 1];
    for (int d = 0; d < b; d++)
        if (x->shape[d] != idx->shape[d])
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "gather_nd: batch dims of the operand and "
                                "the indices differ");
    int64_t shape[DLVM_MAX_RANK];
    int r = 0;
    for (int d = 0; d < idx->rank - 1; d++) shape[r++] = idx->shape[d];
    for (int d = (int)(b + k); d < x->rank; d++) {
        if (r >= DLVM_MAX_RANK)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "gather_nd result of rank above %d", DLVM_MAX_RANK);
        shape[r++] = x->shape[d];
    }
    int64_t batch = numel_of((int)b, x->shape);
    int64_t tuples = numel_of(idx->rank - 1 - (int)b, idx->shape + b);
    int64_t slice = numel_of(x->rank - (int)(b + k), x->shape + b + k);
    int64_t per_batch = numel_of(x->rank - (int)b, x->shape + b);
    size_t item = dlvm_rt_itemsize(x->dtype);
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, r, shape)) return 1;
    const char *src = x->data;
    char *dst = tmp.data;
    for (int64_t j = 0; j < batch; j++)
        for (int64_t t = 0; t < tuples; t++) {
            int64_t off = 0;
            for (int64_t q = 0; q < k; q++) {
                int64_t at = (j * tuples + t) * k + q;
                int64_t i = idx->dtype == DT_I64 ? ((const int64_t *)idx->data)[at]
                                                 : ((const int32_t *)idx->data)[at];
                int64_t size = x->shape[b + q];
                if (i < -size || i >= size) {
                    dlvm_rt_release(&tmp);
                    return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "gather_nd index %lld is out of range",
                                        (long long)i);
                }
                off = off * size + (i < 0 ? i + size : i);
            }
            memcpy(dst + (size_t)((j * tuples + t) * slice) * item,
                   src + (size_t)(j * per_batch + off * slice) * item, (size_t)slice * item);
        }
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

/* outer rows [lo, hi) of a concat: each the operands' rows one after another, `row` bytes */
typedef struct {
    dlvm_val *const *xs;
    int n;
    int64_t axis, inner;
    size_t item, row;
    char *dst;
} concat_job;

static void concat_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const concat_job *j = arg;
    for (int64_t o = lo; o < hi; o++) {
        char *dst = j->dst + (size_t)o * j->row;
        for (int i = 0; i < j->n; i++) {
            size_t bytes = (size_t)(j->xs[i]->shape[j->axis] * j->inner) * j->item;
            memcpy(dst, (const char *)j->xs[i]->data + (size_t)o * bytes, bytes);
            dst += bytes;
        }
    }
}

HIDDEN int dlvm_rt_concat(dlvm_ctx *ctx, dlvm_val *const *xs, int n, int64_t axis, dlvm_val *out) {
    int rank = xs[0]->rank;
    if (axis < 0) axis += rank;
    int64_t shape[DLVM_MAX_RANK];
    memcpy(shape, xs[0]->shape, 8 * (size_t)rank);
    shape[axis] = 0;
    for (int i = 0; i < n; i++) {
        for (int d = 0; d < rank; d++)
            if (d != axis && xs[i]->shape[d] != xs[0]->shape[d])
                return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "concat operands differ in dim %d", d);
        shape[axis] += xs[i]->shape[axis];
    }
    size_t item = dlvm_rt_itemsize(xs[0]->dtype);
    int64_t outer = numel_of((int)axis, shape), inner = numel_of(rank - (int)axis - 1, shape + axis + 1);
    /* A sequence grown one step at a time (a recurrent loop's outputs: ys = concat(ys, y_t)
     * along axis 0) appends in place: values are never written after they are made, so the
     * first operand's bytes stay as they are, and the buffer's `used` mark says nobody else
     * appended after them. Its copy, when there is no room, leaves room for as much again. */
    dlvm_rt_buf *base = xs[0]->buf;
    size_t first = (size_t)dlvm_rt_numel(xs[0]) * item, added = 0;
    for (int i = 1; i < n; i++) added += (size_t)dlvm_rt_numel(xs[i]) * item;
    if (outer == 1 && base && xs[0]->data == base->data && base->used == first &&
        first + added + 64 <= base->bytes) {
        char *end = (char *)base->data + first;
        for (int i = 1; i < n; i++) {
            size_t bytes = (size_t)dlvm_rt_numel(xs[i]) * item;
            memmove(end, xs[i]->data, bytes);
            end += bytes;
        }
        base->used = first + added;
        dlvm_val grown = *xs[0];            /* before out is released: out may be xs[0] */
        memcpy(grown.shape, shape, 8 * (size_t)rank);
        base->refs++;
        dlvm_rt_release(out);
        *out = grown;
        return 0;
    }
    dlvm_val tmp = {0};
    if (alloc_with_room(ctx, &tmp, xs[0]->dtype, rank, shape, outer == 1 ? first + added : 0))
        return 1;
    concat_job job = {xs, n, axis, inner, item, first / (size_t)(outer ? outer : 1) +
                      added / (size_t)(outer ? outer : 1), tmp.data};
    /* a megabyte a part: a U-Net's skip connections at batch 32 copy tens of megabytes per
     * call, a sixth of its time on one thread */
    dlvm_rt_parallel(concat_task, &job, outer, (int64_t)((first + added) >> 20) + 1);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

static void slice_range(int64_t start, int64_t end, int64_t step, int64_t size, int64_t *first,
                        int64_t *count) {
    if (start < 0) start += size;
    if (end < 0) end += size;
    if (step > 0) {
        start = start < 0 ? 0 : start > size ? size : start;
        end = end < 0 ? 0 : end > size ? size : end;
        *count = end > start ? (end - start + step - 1) / step : 0;
    } else {
        start = start < -1 ? -1 : start > size - 1 ? size - 1 : start;
        end = end < -1 ? -1 : end > size - 1 ? size - 1 : end;
        *count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    }
    *first = start;
}

/* starts/stops/steps per axis of x (the generated code fills unsliced axes with 0, max, 1) */
/* whether a slice of x is one contiguous run of its elements: from the innermost dim out, whole
 * dims (steps of 1), then at most one partial dim, and outside it dims of one element */
static int slice_is_one_run(const dlvm_val *x, const int64_t *shape, const int64_t *steps) {
    int partial = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
        if (partial) {
            if (shape[d] > 1) return 0;
            continue;
        }
        if (shape[d] > 1 && steps[d] != 1) return 0;
        if (shape[d] != x->shape[d]) partial = 1;
    }
    return 1;
}

HIDDEN int dlvm_rt_slice(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *starts,
                         const int64_t *stops, const int64_t *steps, dlvm_val *out) {
    int64_t shape[DLVM_MAX_RANK], st[DLVM_MAX_RANK], src[DLVM_MAX_RANK], offset = 0;
    contiguous_strides(x->rank, x->shape, src);
    for (int d = 0; d < x->rank; d++) {
        int64_t first, count;
        slice_range(starts[d], stops[d], steps[d], x->shape[d], &first, &count);
        shape[d] = count;
        st[d] = src[d] * steps[d];
        if (count) offset += first * src[d];
    }
    if (numel_of(x->rank, shape) > 0 && slice_is_one_run(x, shape, steps)) {
        /* a view of x's buffer, as a reshape is: values are never written after they are made
         * (a recurrent step's gate slices were copied, with an allocation each) */
        dlvm_val v = *x;
        if (v.buf) v.buf->refs++;
        v.data = (char *)x->data + (size_t)offset * dlvm_rt_itemsize(x->dtype);
        for (int d = 0; d < x->rank; d++) v.shape[d] = shape[d];
        dlvm_rt_release(out);
        *out = v;
        return 0;
    }
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, x->rank, shape)) return 1;
    strided_copy(tmp.data, x->data, dlvm_rt_itemsize(x->dtype), x->rank, shape, st, offset);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

typedef struct {
    const char *src;
    char *dst;
    const int64_t *at;          /* the indices, wrapped */
    int64_t n_idx, size, inner;
    size_t item;
} gather_job;

#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#define GATHER_BY_SHUFFLE
typedef uint32_t v16u __attribute__((vector_size(64)));
#define SHUFFLE_MAX_INDICES 256

/* d[i] = src[at[i]] for a row of at most 32 elements: the row in two vector registers and one
 * two-source permute (vpermt2ps) per 16 results, `picks` the indices 16 at a time. Element by
 * element, a resize's gathers along the last axis ran at one element per cycle. (GCC's vector
 * extensions; other compilers take the scalar loop.) */
static void gather_by_shuffle(const uint32_t *src, int64_t size, const v16u *picks, int64_t n_idx,
                              uint32_t *d) {
    v16u lo = {0}, hi = {0};
    memcpy(&lo, src, (size_t)(size < 16 ? size : 16) * 4);
    if (size > 16) memcpy(&hi, src + 16, (size_t)(size - 16) * 4);
    for (int64_t i = 0; i < n_idx; i += 16) {
        v16u got = __builtin_shuffle(lo, hi, picks[i / 16]);
        memcpy(d + i, &got, (size_t)(n_idx - i < 16 ? n_idx - i : 16) * 4);
    }
}
#endif

/* output rows [lo, hi) of a gather, row (o, i) = x[o, at[i], :] */
static void gather_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const gather_job *g = arg;
    int64_t n_idx = g->n_idx, size = g->size, inner = g->inner;
    size_t row = (size_t)inner * g->item;
    if (n_idx == 1 && inner == 1 && (g->item == 4 || g->item == 8)) {
        /* one element of each row (a box's x of [B, N, 4]): a strided pick, not a shuffle or a
         * loop trip per element */
        if (g->item == 4) {
            const uint32_t *src = (const uint32_t *)g->src + g->at[0];
            uint32_t *d = (uint32_t *)g->dst;
            for (int64_t o = lo; o < hi; o++) d[o] = src[o * size];
        } else {
            const uint64_t *src = (const uint64_t *)g->src + g->at[0];
            uint64_t *d = (uint64_t *)g->dst;
            for (int64_t o = lo; o < hi; o++) d[o] = src[o * size];
        }
        return;
    }
#ifdef GATHER_BY_SHUFFLE
    v16u picks[SHUFFLE_MAX_INDICES / 16] = {{0}};     /* (lanes past n_idx pick element 0) */
    int shuffle = inner == 1 && g->item == 4 && size <= 32 && n_idx <= SHUFFLE_MAX_INDICES;
    if (shuffle)
        for (int64_t i = 0; i < n_idx; i++) picks[i / 16][i % 16] = (uint32_t)g->at[i];
#endif
    for (int64_t o = lo / n_idx; o * n_idx < hi; o++) {
        int64_t i0 = lo > o * n_idx ? lo - o * n_idx : 0, i1 = hi - o * n_idx < n_idx ? hi - o * n_idx : n_idx;
        if (inner == 1 && g->item == 4) {           /* element by element, no memcpy call each */
            const uint32_t *src = (const uint32_t *)g->src + o * size;
            uint32_t *d32 = (uint32_t *)g->dst + o * n_idx;
#ifdef GATHER_BY_SHUFFLE
            if (shuffle && i0 == 0 && i1 == n_idx) {    /* (a part's first and last rows may be partial) */
                gather_by_shuffle(src, size, picks, n_idx, d32);
                continue;
            }
#endif
            for (int64_t i = i0; i < i1; i++) d32[i] = src[g->at[i]];
        } else if (g->item == 4 && inner <= 64) {   /* short rows (a resize's): a loop, not a call */
            const uint32_t *src = (const uint32_t *)g->src + o * size * inner;
            uint32_t *d32 = (uint32_t *)g->dst + (o * n_idx + i0) * inner;
            for (int64_t i = i0; i < i1; i++, d32 += inner) {
                const uint32_t *s32 = src + g->at[i] * inner;
                for (int64_t c = 0; c < inner; c++) d32[c] = s32[c];
            }
        } else {
            char *dst = g->dst + (size_t)(o * n_idx + i0) * row;
            for (int64_t i = i0; i < i1; i++, dst += row)
                memcpy(dst, g->src + (size_t)(o * size + g->at[i]) * row, row);
        }
    }
}

HIDDEN int dlvm_rt_gather(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx, int64_t axis,
                          dlvm_val *out) {
    int rank = x->rank;
    if (axis < 0) axis += rank;
    int64_t size = x->shape[axis], n_idx = dlvm_rt_numel(idx);
    int64_t shape[DLVM_MAX_RANK];
    int r = 0;
    for (int d = 0; d < axis; d++) shape[r++] = x->shape[d];
    for (int d = 0; d < idx->rank; d++) shape[r++] = idx->shape[d];
    for (int d = (int)axis + 1; d < rank; d++) shape[r++] = x->shape[d];
    if (r > DLVM_MAX_RANK)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "gather result of rank %d", r);
    for (int64_t i = 0; i < n_idx; i++) {
        int64_t j = idx->dtype == DT_I32 ? ((const int32_t *)idx->data)[i] : ((const int64_t *)idx->data)[i];
        if (j < -size || j >= size)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "gather index %lld is out of range for axis "
                                "%lld of size %lld", (long long)j, (long long)axis, (long long)size);
    }
    size_t item = dlvm_rt_itemsize(x->dtype);
    int64_t outer = numel_of((int)axis, x->shape), inner = numel_of(rank - (int)axis - 1, x->shape + axis + 1);
    size_t row = (size_t)inner * item;
    if (n_idx == 1 && (outer == 1 || size == 1)) {
        /* one index where nothing comes before the axis (a recurrent loop's x[t] of its input
         * projections), or along an axis of size 1 (torch's `[..., 0]` after a product of
         * column vectors: a reshape): the result is a contiguous run of x, so it shares x's
         * buffer instead of copying it. Values are never written after they are made: concat's
         * in-place append writes only past the buffer's `used` bytes (a view that spans them
         * all, as a reshape does, may be appended to; the view itself keeps its bytes).
         * Copied element by element, a capsule network's [B, 288, 5, 12, 1] took 46% of its
         * time. */
        int64_t j = idx->dtype == DT_I32 ? ((const int32_t *)idx->data)[0] : ((const int64_t *)idx->data)[0];
        dlvm_val view = *x;
        view.data = (char *)x->data + (size_t)(j < 0 ? j + size : j) * row;
        view.rank = r;
        memcpy(view.shape, shape, 8 * (size_t)r);
        if (view.buf) view.buf->refs++;
        dlvm_rt_release(out);
        *out = view;
        return 0;
    }
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, r, shape)) return 1;
    char *dst = tmp.data;
    /* the indices once, wrapped (a gather along the last axis, a resize's, reads them per row) */
    int64_t stack_at[256];
    int64_t *at = n_idx <= 256 ? stack_at : malloc((size_t)(n_idx ? n_idx : 1) * 8);
    if (!at) {
        dlvm_rt_release(&tmp);
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (gather)");
    }
    for (int64_t i = 0; i < n_idx; i++) {
        int64_t j = idx->dtype == DT_I32 ? ((const int32_t *)idx->data)[i] : ((const int64_t *)idx->data)[i];
        at[i] = j < 0 ? j + size : j;
    }
    gather_job job = {x->data, dst, at, n_idx, size, inner, item};
    int64_t parts = (int64_t)((size_t)(outer * n_idx) * row / PARALLEL_COPY_BYTES) + 1;
    dlvm_rt_parallel(gather_task, &job, outer * n_idx, parts);
    if (at != stack_at) free(at);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

/* ---- resize (separable taps, tables computed by the program compiler) --------------------- */

/* y [outer, O0, O1] = x [outer, N0, N1] resampled along its last two axes: row oh of a plane is
 * the sum over k0 taps of weight w0[k][oh] times input row i0[k][oh], then each output column
 * the sum over k1 taps of w1[k][ow] times that row's column i1[k][ow] (the order of the
 * interpreter's resize: the first axis, then the second). One pass over the output; the
 * separable gathers and products it replaces wrote and read every intermediate. A resize of
 * the last axis alone has N0 = O0 = 1. */
typedef struct {
    const float *x;
    float *y;
    int64_t n0, o0, k0, n1, o1, k1;
    const int64_t *i0, *i1;
    const float *w0, *w1;
    int failed;
} resample_job;

static void resample_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    resample_job *j = arg;
    int64_t n0 = j->n0, o0 = j->o0, n1 = j->n1, o1 = j->o1, k0 = j->k0, k1 = j->k1;
    int64_t nv = (o1 + 15) / 16;
#ifdef GATHER_BY_SHUFFLE
    /* rows of at most 32 columns sit in two vector registers: each tap's 16 columns are one
     * two-source permute (as gather_by_shuffle), times that tap's weights */
    int shuffle = n1 <= 32;
#else
    int shuffle = 0;
#endif
    size_t bytes = (size_t)(n1 + 16) * 4 + (shuffle ? (size_t)(2 * k1 * nv) * 64 : 0) + 64;
    float *tmp = buffer_alloc(&bytes);
    if (!tmp) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
#ifdef GATHER_BY_SHUFFLE
    v16u *picks = NULL;
    dw_vec *wts = NULL;
    if (shuffle) {
        picks = (v16u *)(tmp + ((n1 + 16 + 15) / 16) * 16);
        wts = (dw_vec *)(picks + k1 * nv);
        for (int64_t k = 0; k < k1; k++)
            for (int64_t v = 0; v < nv; v++)
                for (int64_t l = 0; l < 16; l++) {
                    int64_t c = v * 16 + l;
                    picks[k * nv + v][l] = c < o1 ? (uint32_t)j->i1[k * o1 + c] : 0;
                    wts[k * nv + v][l] = c < o1 ? j->w1[k * o1 + c] : 0.0f;
                }
    }
#endif
    int ones = k1 == 1;         /* nearest: the permuted columns are the results */
    for (int64_t c = 0; c < o1 && ones; c++) ones = j->w1[c] == 1.0f;
    int rows_as_is = k0 == 1;   /* nearest rows (or an axis left as it is): read in place */
    for (int64_t c = 0; c < o0 && rows_as_is; c++) rows_as_is = j->w0[c] == 1.0f;
#ifdef GATHER_BY_SHUFFLE
    __mmask16 m_lo = n1 >= 16 ? 0xFFFF : (__mmask16)((1u << (n1 & 15)) - 1);
    __mmask16 m_hi = n1 >= 32 ? 0xFFFF : n1 > 16 ? (__mmask16)((1u << (n1 - 16)) - 1) : 0;
    __mmask16 m_last = (o1 & 15) ? (__mmask16)((1u << (o1 & 15)) - 1) : 0xFFFF;
#endif
    /* (row r is output row oh of plane r / o0: counted, not divided, per row) */
    for (int64_t r = lo, plane = lo / o0, oh = lo % o0; r < hi;
         r++, oh = oh + 1 == o0 ? 0 : oh + 1, plane += oh == 0) {
        const float *xp = j->x + plane * n0 * n1, *src;
        if (rows_as_is) {
            src = xp + j->i0[oh] * n1;
        } else {
            const float *a = xp + j->i0[oh] * n1;
            float wa = j->w0[oh];
            for (int64_t c = 0; c < n1; c++) tmp[c] = a[c] * wa;
            for (int64_t k = 1; k < k0; k++) {
                const float *b = xp + j->i0[k * o0 + oh] * n1;
                float wb = j->w0[k * o0 + oh];
                for (int64_t c = 0; c < n1; c++) tmp[c] += b[c] * wb;
            }
            src = tmp;
        }
        float *yr = j->y + r * o1;
#ifdef GATHER_BY_SHUFFLE
        if (shuffle) {
            /* masked loads and stores: a memcpy of a run-time length was a library call per
             * row and per 16 results (slower than the two gathers this replaces) */
            __m512 mlo = _mm512_maskz_loadu_ps(m_lo, src);
            __m512 mhi = m_hi ? _mm512_maskz_loadu_ps(m_hi, src + 16) : _mm512_setzero_ps();
            v16u rlo, rhi;
            memcpy(&rlo, &mlo, sizeof rlo);
            memcpy(&rhi, &mhi, sizeof rhi);
            for (int64_t v = 0; v < nv; v++) {
                v16u got = __builtin_shuffle(rlo, rhi, picks[v]);
                dw_vec acc;
                memcpy(&acc, &got, sizeof acc);
                if (!ones) acc *= wts[v];
                for (int64_t k = 1; k < k1; k++) {
                    dw_vec t;
                    got = __builtin_shuffle(rlo, rhi, picks[k * nv + v]);
                    memcpy(&t, &got, sizeof t);
                    acc += t * wts[k * nv + v];
                }
                __m512 out;
                memcpy(&out, &acc, sizeof out);
                _mm512_mask_storeu_ps(yr + v * 16, v + 1 < nv ? 0xFFFF : m_last, out);
            }
            continue;
        }
#endif
        for (int64_t c = 0; c < o1; c++) {
            float acc = src[j->i1[c]] * j->w1[c];
            for (int64_t k = 1; k < k1; k++) acc += src[j->i1[k * o1 + c]] * j->w1[k * o1 + c];
            yr[c] = acc;
        }
    }
    buffer_free(tmp, bytes);
}

HIDDEN int dlvm_rt_resample(dlvm_ctx *ctx, const dlvm_val *x, int nd, int64_t n0, int64_t o0,
                            int64_t k0, const void *i0, const void *w0, int64_t n1, int64_t o1,
                            int64_t k1, const void *i1, const void *w1, dlvm_val *out) {
    int rank = x->rank;
    if (nd == 1 && (n0 != 1 || o0 != 1))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_ARGUMENT, "resize: a table for an axis not resized");
    if (x->dtype != DT_F32 || rank < nd || x->shape[rank - 1] != n1 ||
        (nd == 2 && x->shape[rank - 2] != n0))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "resize: the input is not the f32 tensor its "
                            "tables were computed for");
    int64_t shape[DLVM_MAX_RANK];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)rank);
    shape[rank - 1] = o1;
    if (nd == 2) shape[rank - 2] = o0;
    int64_t outer = n0 * n1 ? dlvm_rt_numel(x) / (n0 * n1) : 0;
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, DT_F32, rank, shape)) return 1;
    resample_job job = {x->data, tmp.data, n0, o0, k0, n1, o1, k1, i0, i1, w0, w1, 0};
    int64_t rows = outer * o0;
    int64_t parts = (int64_t)((size_t)(rows * o1) * 4 * (size_t)(k0 + k1) / PARALLEL_COPY_BYTES) + 1;
    if (rows) dlvm_rt_parallel(resample_task, &job, rows, parts);
    if (job.failed) {
        dlvm_rt_release(&tmp);
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (resize)");
    }
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

/* ---- grid_sample ---------------------------------------------------------------------------- */

/* No fused multiply-adds here (the build contracts a * b + c): the reference rounds each product
 * and sum, and a huge position reflected with one rounding less lands on another pixel */
#if defined(__clang__)
#define GRID_NO_FMA _Pragma("clang fp contract(off)")
#else
#define GRID_NO_FMA
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

/* The interpreter's grid_sample point by point: per spatial dim the position, its taps (1
 * nearest, 2 linear, 4 cubic) with their weights and whether each is inside, then per channel
 * the sum over every combination of taps in the reference's order, in double, so results are
 * the reference's to rounding. Before, the library handed the instruction back to the VM (a
 * Python round trip inside the call: a spatial transformer at batch 1). */
typedef struct {
    const void *x, *g;
    void *y;
    int xf32, gf32, nd, mode, padding, corners;
    int64_t c, points, dims[3], strides[3], plane;
} grid_job;

static double grid_load(const void *p, int f32, int64_t i) {
    GRID_NO_FMA
    return f32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* fold v into [lo, hi] by repeated reflection at the borders (isa/ops/sampling.py _reflect) */
static double grid_reflect(double v, double lo, double hi) {
    GRID_NO_FMA
    double span = hi - lo;
    if (span <= 0) return lo;
    if (isnan(v) || (v >= lo && v <= hi)) return v;
    int below = v < lo;
    double d = below ? lo - v : v - hi, k = floor(d / span), r = d - k * span;
    int even = fmod(k, 2.0) == 0.0;
    if (below) return even ? lo + r : hi - r;
    return even ? hi - r : lo + r;
}

/* float64 -> int64 as NumPy computes it on x86-64 (the interpreter's platform here): a NaN or a
 * value outside the int64 range becomes INT64_MIN */
static int64_t grid_index(double v) {
    return isnan(v) || !(v >= -0x1p63 && v < 0x1p63) ? INT64_MIN : (int64_t)v;
}

static void grid_cubic(double t, double *w) {
    GRID_NO_FMA
    const double a = -0.75;                 /* CUBIC_A */
#define GRID_NEAR(s) ((((a + 2) * (s) - (a + 3)) * (s) * (s)) + 1)
#define GRID_FAR(s) ((((a * (s) - 5 * a) * (s) + 8 * a) * (s)) - 4 * a)
    w[0] = GRID_FAR(t + 1);
    w[1] = GRID_NEAR(t);
    w[2] = GRID_NEAR(1 - t);
    w[3] = GRID_FAR(2 - t);
#undef GRID_NEAR
#undef GRID_FAR
}

static void grid_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    GRID_NO_FMA
    (void)part;
    const grid_job *j = arg;
    int nd = j->nd;
    for (int64_t q = lo; q < hi; q++) {       /* q = batch * points + point */
        int64_t b = q / j->points, p = q % j->points;
        int taps[3];
        int64_t at[3][4];
        double w[3][4];
        int in[3][4];
        for (int k = 0; k < nd; k++) {
            int64_t size = j->dims[k];
            double d = (double)size;
            double v = grid_load(j->g, j->gf32, q * nd + (nd - 1 - k));    /* x first */
            v = j->corners ? (v + 1) / 2 * (d - 1) : ((v + 1) * d - 1) / 2;
            if (j->mode == 1) v = nearbyint(v);                             /* half to even */
            double lo_b = j->corners ? 0.0 : -0.5, hi_b = j->corners ? d - 1 : d - 0.5;
            if (j->padding == 2) v = grid_reflect(v, lo_b, hi_b);
            if (j->mode == 1) {
                taps[k] = 1;
                at[k][0] = grid_index(trunc(v));
                w[k][0] = 1.0;
            } else {
                double base = floor(v), t = v - base;
                int64_t i0 = grid_index(base);
                if (j->mode == 0) {
                    taps[k] = 2;
                    w[k][0] = 1 - t;
                    w[k][1] = t;
                } else {
                    taps[k] = 4;
                    grid_cubic(t, w[k]);
                }
                for (int m = 0; m < taps[k]; m++)      /* wrapping as NumPy's int64 does */
                    at[k][m] = (int64_t)((uint64_t)i0 + (uint64_t)m - (uint64_t)(j->mode == 2));
            }
            for (int m = 0; m < taps[k]; m++) {
                int64_t i = at[k][m];
                in[k][m] = 1;
                if (j->padding == 0) in[k][m] = i >= 0 && i < size;
                else if (j->padding == 2)      /* INT64_MIN (a NaN) reflects as a float too */
                    i = grid_index(trunc(grid_reflect((double)i, lo_b, hi_b)));
                at[k][m] = i < 0 ? 0 : (i > size - 1 ? size - 1 : i);
            }
        }
        /* every combination of taps, the last dim's fastest (itertools.product's order) */
        double cw[64];
        int64_t off[64];
        int combos = 0, pick[3] = {0, 0, 0};
        for (;;) {
            double weight = 1.0;
            int inside = 1;
            int64_t o = 0;
            for (int k = 0; k < nd; k++) {
                weight = weight * w[k][pick[k]];
                inside &= in[k][pick[k]];
                o += at[k][pick[k]] * j->strides[k];
            }
            cw[combos] = inside ? weight : 0.0;
            off[combos++] = o;
            int k = nd - 1;
            while (k >= 0 && ++pick[k] == taps[k]) pick[k--] = 0;
            if (k < 0) break;
        }
        for (int64_t c = 0; c < j->c; c++) {
            int64_t base = (b * j->c + c) * j->plane, dst = (b * j->c + c) * j->points + p;
            double acc = 0.0;
            for (int m = 0; m < combos; m++) acc += cw[m] * grid_load(j->x, j->xf32, base + off[m]);
            if (j->xf32) ((float *)j->y)[dst] = (float)acc;
            else ((double *)j->y)[dst] = acc;
        }
    }
}

static int64_t spatial_numel(const dlvm_val *x) {
    int64_t n = 1;
    for (int d = 2; d < x->rank; d++) n *= x->shape[d];
    return n;
}

HIDDEN int dlvm_rt_grid_sample(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *grid, int mode,
                               int padding, int align_corners, dlvm_val *out) {
    int nd = x->rank - 2;
    if ((x->dtype != DT_F32 && x->dtype != DT_F64) || (grid->dtype != DT_F32 && grid->dtype != DT_F64) ||
        nd < 1 || nd > 3 || grid->rank != x->rank || grid->shape[grid->rank - 1] != nd ||
        grid->shape[0] != x->shape[0] || (dlvm_rt_numel(grid) > 0 && !spatial_numel(x)))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "grid_sample of %s at a %s grid of rank %d is "
                            "not compiled ahead of time", dtype_name(x->dtype),
                            dtype_name(grid->dtype), grid->rank);
    grid_job job = {x->data, grid->data, NULL, x->dtype == DT_F32, grid->dtype == DT_F32, nd, mode,
                    padding, align_corners, x->shape[1], 1, {1, 1, 1}, {0, 0, 0}, 1};
    int64_t shape[DLVM_MAX_RANK];
    shape[0] = x->shape[0];
    shape[1] = x->shape[1];
    for (int k = nd - 1; k >= 0; k--) {
        job.dims[k] = x->shape[2 + k];
        job.strides[k] = job.plane;
        job.plane *= x->shape[2 + k];
        shape[2 + k] = grid->shape[1 + k];
        job.points *= grid->shape[1 + k];
    }
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, x->rank, shape)) return 1;
    job.y = tmp.data;
    int64_t rows = x->shape[0] * job.points;
    int64_t per_point = job.c * (mode == 2 ? 16 : mode == 0 ? 4 : 1) * (nd == 3 ? 4 : 1) + 32;
    int64_t parts = (int64_t)((size_t)(rows * per_point) * 8 / PARALLEL_COPY_BYTES) + 1;
    if (rows) dlvm_rt_parallel(grid_task, &job, rows, parts);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

#if !defined(__clang__)
#pragma GCC pop_options
#endif
#undef GRID_NO_FMA

/* ---- gather_elements, scatter_elements, slice_dyn ------------------------------------------ */

static int64_t index_at(const dlvm_val *idx, int64_t i) {
    return idx->dtype == DT_I32 ? ((const int32_t *)idx->data)[i] : ((const int64_t *)idx->data)[i];
}

/* the element offsets into x that an elementwise index tensor addresses along `axis` (the other
 * coordinates its own): the shared walk of gather_elements and scatter_elements, with their
 * traps (indices larger than x off the axis, an index out of range) */
static int element_offsets(dlvm_ctx *ctx, const char *op, const dlvm_val *x, const dlvm_val *idx,
                           int64_t axis, int64_t *offsets) {
    int rank = x->rank;
    int64_t xs[DLVM_MAX_RANK], pos[DLVM_MAX_RANK] = {0};
    contiguous_strides(rank, x->shape, xs);
    int64_t size = x->shape[axis], n = dlvm_rt_numel(idx);
    for (int64_t k = 0; k < n; k++) {
        int64_t j = index_at(idx, k);
        if (j < -size || j >= size)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "%s index %lld is out of range for axis "
                                "%lld of size %lld", op, (long long)j, (long long)axis,
                                (long long)size);
        if (j < 0) j += size;
        int64_t off = 0;
        for (int d = 0; d < rank; d++) off += (d == axis ? j : pos[d]) * xs[d];
        offsets[k] = off;
        for (int d = rank - 1; d >= 0; d--) {      /* the next index position, row-major */
            if (++pos[d] < idx->shape[d]) break;
            pos[d] = 0;
        }
    }
    return 0;
}

static int check_elementwise_index(dlvm_ctx *ctx, const char *op, const dlvm_val *x,
                                   const dlvm_val *idx, int64_t axis) {
    if (idx->rank != x->rank)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "%s needs indices of the data's rank", op);
    for (int d = 0; d < x->rank; d++)
        if (d != axis && idx->shape[d] > x->shape[d])
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "%s: indices exceed data on axis %d", op, d);
    return 0;
}

/* the checked offsets of an elementwise index tensor (malloc'd; NULL with ctx's status set) */
static int64_t *checked_offsets(dlvm_ctx *ctx, const char *op, const dlvm_val *x,
                                const dlvm_val *idx, int64_t axis) {
    if (check_elementwise_index(ctx, op, x, idx, axis)) return NULL;
    int64_t n = dlvm_rt_numel(idx);
    int64_t *offsets = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!offsets) {
        dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (%s)", op);
        return NULL;
    }
    if (element_offsets(ctx, op, x, idx, axis, offsets)) {
        free(offsets);
        return NULL;
    }
    return offsets;
}

HIDDEN int dlvm_rt_gather_elements(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx,
                                   int64_t axis, dlvm_val *out) {
    if (axis < 0) axis += x->rank;
    int64_t n = dlvm_rt_numel(idx);
    int64_t *offsets = checked_offsets(ctx, "gather_elements", x, idx, axis);
    if (!offsets) return 1;
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, idx->rank, idx->shape)) {
        free(offsets);
        return 1;
    }
    size_t item = dlvm_rt_itemsize(x->dtype);
    if (item == 4) {
        const uint32_t *src = x->data;
        uint32_t *dst = tmp.data;
        for (int64_t k = 0; k < n; k++) dst[k] = src[offsets[k]];
    } else {
        for (int64_t k = 0; k < n; k++)
            memcpy((char *)tmp.data + k * item, (const char *)x->data + offsets[k] * item, item);
    }
    free(offsets);
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

/* the scatters' reductions, 1 add, 2 mul, 3 max, 4 min (NaN-propagating as NumPy's maximum),
 * of n elements of u into d at the offsets `at` (NULL: d[0..n)) */
#define SCATTER_COMBINE_FN(T)                                                                  \
    static void scatter_combine_##T(T *d, const int64_t *at, const T *u, int64_t n,           \
                                    int reduction) {                                           \
        for (int64_t k = 0; k < n; k++) {                                                      \
            T *p = d + (at ? at[k] : k), a = *p, b = u[k];                                     \
            *p = reduction == 1 ? (T)(a + b) : reduction == 2 ? (T)(a * b)                     \
               : reduction == 3 ? (a != a || a > b ? a : b) : (a != a || a < b ? a : b);       \
        }                                                                                      \
    }
SCATTER_COMBINE_FN(float)
SCATTER_COMBINE_FN(double)
SCATTER_COMBINE_FN(int32_t)
SCATTER_COMBINE_FN(int64_t)

/* combine n elements of u into d (at the offsets `at`, or in a run) by x's dtype; 0 if that
 * dtype has no reduction here */
static int scatter_combine(int32_t dtype, void *d, const int64_t *at, const void *u, int64_t n,
                           int reduction) {
    switch (dtype) {
    case DT_F32: scatter_combine_float(d, at, u, n, reduction); return 1;
    case DT_F64: scatter_combine_double(d, at, u, n, reduction); return 1;
    case DT_I32: scatter_combine_int32_t(d, at, u, n, reduction); return 1;
    case DT_I64: scatter_combine_int64_t(d, at, u, n, reduction); return 1;
    default: return 0;
    }
}

HIDDEN int dlvm_rt_scatter_elements(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx,
                                    const dlvm_val *upd, int64_t axis, int reduction,
                                    dlvm_val *out) {
    if (axis < 0) axis += x->rank;
    if (upd->rank != idx->rank || numel_of(idx->rank, idx->shape) != dlvm_rt_numel(upd))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "scatter_elements: indices and updates differ");
    for (int d = 0; d < idx->rank; d++)
        if (upd->shape[d] != idx->shape[d])
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "scatter_elements: indices and updates "
                                "differ");
    int64_t n = dlvm_rt_numel(idx);
    int64_t *offsets = checked_offsets(ctx, "scatter_elements", x, idx, axis);
    if (!offsets) return 1;
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, x->rank, x->shape)) {
        free(offsets);
        return 1;
    }
    size_t item = dlvm_rt_itemsize(x->dtype);
    memcpy(tmp.data, x->data, (size_t)dlvm_rt_numel(x) * item);
    int ok = 1;
    if (reduction == 0) {
        for (int64_t k = 0; k < n; k++)
            memcpy((char *)tmp.data + offsets[k] * item, (const char *)upd->data + k * item, item);
    } else {
        ok = scatter_combine(x->dtype, tmp.data, offsets, upd->data, n, reduction);
    }
    free(offsets);
    if (!ok) {
        dlvm_rt_release(&tmp);
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "scatter_elements reduction on dtype %d",
                            x->dtype);
    }
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}

HIDDEN int dlvm_rt_slice_dyn(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *starts,
                             const dlvm_val *ends, const dlvm_val *axes, const dlvm_val *steps,
                             dlvm_val *out) {
    int64_t st[DLVM_MAX_RANK], sp[DLVM_MAX_RANK], sk[DLVM_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        st[d] = 0;
        sp[d] = (int64_t)1 << 62;
        sk[d] = 1;
    }
    int64_t n = dlvm_rt_numel(axes);
    if (dlvm_rt_numel(starts) != n || dlvm_rt_numel(ends) != n || dlvm_rt_numel(steps) != n)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "slice_dyn: starts, ends, axes and steps "
                            "differ in length");
    for (int64_t i = 0; i < n; i++) {
        int64_t ax = index_at(axes, i), step = index_at(steps, i);
        if (ax < -x->rank || ax >= x->rank)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "slice_dyn: axis %lld out of range for "
                                "rank %d", (long long)ax, x->rank);
        if (step == 0) return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "slice_dyn: a zero step");
        if (ax < 0) ax += x->rank;
        st[ax] = index_at(starts, i);
        sp[ax] = index_at(ends, i);
        sk[ax] = step;
    }
    return dlvm_rt_slice(ctx, x, st, sp, sk, out);
}

/* scatter_nd: a copy of x with the slices x[idx[j, :k]] (of shape x.shape[k:]) set to, or
 * combined with, updates[j] in index order (the last of repeated indices wins) */
HIDDEN int dlvm_rt_scatter_nd(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx,
                              const dlvm_val *upd, int reduction, dlvm_val *out) {
    if (idx->rank < 1)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "scatter_nd needs indices of rank 1 or more");
    int64_t k = idx->shape[idx->rank - 1];
    int fits = k <= x->rank && upd->rank == idx->rank - 1 + x->rank - (int)k;
    for (int d = 0; fits && d < idx->rank - 1; d++) fits = upd->shape[d] == idx->shape[d];
    for (int d = (int)k; fits && d < x->rank; d++)
        fits = upd->shape[idx->rank - 1 + d - (int)k] == x->shape[d];
    if (!fits)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "scatter_nd: updates do not fit indices into "
                            "the data");
    if (reduction && x->dtype != DT_F32 && x->dtype != DT_F64 && x->dtype != DT_I32 &&
        x->dtype != DT_I64)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "scatter_nd reduction on dtype %d", x->dtype);
    int64_t n = numel_of(idx->rank - 1, idx->shape), slice = numel_of(x->rank - (int)k,
                                                                       x->shape + k);
    int64_t xs[DLVM_MAX_RANK];
    contiguous_strides(x->rank, x->shape, xs);
    for (int64_t j = 0; j < n * k; j++) {       /* every index checked before anything is written */
        int64_t v = index_at(idx, j), size = x->shape[j % k];
        if (v < -size || v >= size)
            return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "scatter_nd index %lld is out of range",
                                (long long)v);
    }
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, x->rank, x->shape)) return 1;
    size_t item = dlvm_rt_itemsize(x->dtype);
    memcpy(tmp.data, x->data, (size_t)dlvm_rt_numel(x) * item);
    for (int64_t j = 0; j < n; j++) {
        int64_t base = 0;
        for (int64_t c = 0; c < k; c++) {
            int64_t v = index_at(idx, j * k + c);
            base += (v < 0 ? v + x->shape[c] : v) * xs[c];
        }
        if (reduction == 0) {
            memcpy((char *)tmp.data + base * item, (const char *)upd->data + j * slice * item,
                   (size_t)slice * item);
            continue;
        }
        scatter_combine(x->dtype, (char *)tmp.data + base * item, NULL,
                        (const char *)upd->data + j * slice * item, slice, reduction);
    }
    dlvm_rt_release(out);
    *out = tmp;
    return 0;
}
