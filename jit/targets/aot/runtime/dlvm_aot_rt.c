/* dlvm AOT runtime: buffers, values, entry checks, a small thread pool, compiled regions and
 * matrix products (convolution and pooling: dlvm_aot_conv.c; movement, reductions and the other
 * ops: dlvm_aot_ops.c; what they share: dlvm_aot_internal.h). Compiled into every library
 * `dlvm aot` builds, with the library's generated configuration (dlvm_aot_config.h: the GEMM
 * kernel's tile).
 *
 * Needs only the C library, libm and pthreads.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE                 /* sched_getaffinity, CPU_COUNT: the CPUs this process may use */
#endif
#ifdef __linux__
#include <sched.h>
#endif
#include "dlvm_aot_internal.h"

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
HIDDEN void *buffer_alloc(size_t *bytes) {
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

HIDDEN void buffer_free(void *data, size_t bytes) {
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

HIDDEN int64_t numel_of(int32_t rank, const int64_t *shape) {
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

HIDDEN int alloc_with_room(dlvm_ctx *ctx, dlvm_val *v, int32_t dtype, int32_t rank,
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

HIDDEN const char *dtype_name(int32_t d) {
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

/* the job's parts, claimed one by one until none is left; returns how many this thread ran */
static int64_t run_parts(void) {
    for (int64_t ran = 0;; ran++) {
        int64_t p = __atomic_fetch_add(&pool_job.next, 1, __ATOMIC_RELAXED);
        if (p >= pool_job.parts) return ran;
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
 * POOL_WINDOW parallel jobs at a time: if it waited for the workers and handed them the jobs
 * for longer than they saved it (the parts they ran, each at the caller's own time per part),
 * the next `solo_span` jobs run on the caller alone. (The parts the caller ran itself count:
 * on a 2-vCPU VM the worker, asleep between calls and woken as one begins, came too late for
 * most of a small CNN's jobs at batch 1; the caller ran their parts alone, paying the wake-ups,
 * and the account, which took every part but the caller's first as the workers', kept the pool:
 * 87 us a call against 34 us on one thread.) (Comparing the wait with the caller's own time alone, right for 2 threads, sent
 * 16 threads to one whenever the workers' wake-ups took a sixteenth of a job: UNet at batch 32 on
 * 16 cores ran 66 ms, against 9 ms on its 16 threads and 85 ms on one.) Then the pool is tried again; each failed try
 * doubles the span (up to POOL_SOLO_MAX), a good one resets it. All of it under pool_busy (one
 * caller at a time). Counting the threads' involuntary context switches instead sent ResNet-18
 * to one thread on a machine only as busy as usual (1.1x -> 1.6x onnxruntime's time). */
#define POOL_WINDOW 32
#define POOL_SOLO_MIN 256
#define POOL_SOLO_MAX 16384
static double pool_win_gain;
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

/* One job's account: the caller ran `mine` of its `parts` in `busy` ns, then waited `wait` for
 * the workers, after `handoff` ns of handing the job over (the lock, waking them). */
static void pool_account(double handoff, double busy, double wait, int64_t mine, int64_t parts) {
    /* the caller alone would have run `parts` parts at its own pace; the workers ran the rest
     * (none of them its own: nothing to compare, the job counts for neither way) */
    if (mine > 0)
        pool_win_gain += busy / (double)mine * (double)(parts - mine) - wait - handoff;
    if (++pool_win_jobs < POOL_WINDOW) return;
    if (pool_win_gain < 0.0) {
        __atomic_store_n(&pool_solo_left, pool_solo_span, __ATOMIC_RELAXED);
        pool_solo_span = pool_solo_span * 2 > POOL_SOLO_MAX ? POOL_SOLO_MAX : pool_solo_span * 2;
    } else {
        pool_solo_span = POOL_SOLO_MIN;
    }
    pool_win_gain = 0.0;
    pool_win_jobs = 0;
}

/* A part's hand-off and the wait for the slowest of the workers cost about the same whatever
 * the part's size, and more the more threads share a job: on 16 threads a recurrent step's
 * 32x256x64 product split 16 ways (32K multiply-adds a part) made the LSTM slower than on one
 * thread. So a job is split only into parts of some minimum work; the minimums are half of what
 * the job needs to be split at all, so 2 threads split as before. */
HIDDEN int64_t dlvm_rt_parts_for(double work, double min_part) {
    int threads = dlvm_rt_threads();
    double parts = work / min_part;
    if (!(parts >= 1.0)) return 1;
    return parts >= (double)threads ? threads : (int64_t)parts;
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
    double t_handoff = now_ns();
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
    int64_t mine = run_parts();
    double t1 = now_ns();
    spin_while_int(&pool_active, 1);      /* the usual case: one worker still finishing */
    pthread_mutex_lock(&pool_lock);
    while (pool_active > 0) pthread_cond_wait(&pool_done, &pool_lock);
    pthread_mutex_unlock(&pool_lock);
    pool_account(t0 - t_handoff, t1 - t0, now_ns() - t1, mine, parts);
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
    if (threads > 1 && dims[0] > 1 && work > 60000.0) parts = dlvm_rt_parts_for(work, 30000.0);
    if (parts > threads) parts = threads;   /* the scratch below is sized for `threads` parts */
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

HIDDEN void gemm_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
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
    if (g->b_rows) {        /* B unpacked: its rows where the table says, columns contiguous
                             * (or vectors b_vstep apart) */
        dlvm_sgemm(rows, cols, g->k, a, g->k, 1, g->b, (int64_t)(intptr_t)g->b_rows, g->b_vstep,
                   g->c + r0 * ldc + c0, ldc, pa, pb, 0, 8 | a_flag, g->a_row0 + r0, g->a_padded, c0,
                   g->b_vstep ? g->b_vpr : 0,
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

HIDDEN void few_rows(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
    for (int64_t i = 0; i < m; i++) few_rows_span(n, k, a + i * k, b, n, c + i * n);
}


HIDDEN void few_rows_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const few_rows_call *f = arg;
    /* columns [lo, hi) of every row */
    for (int64_t i = 0; i < f->m; i++)
        few_rows_span(hi - lo, f->k, f->a + i * f->k, f->b + lo, f->n, f->c + i * f->n + lo);
}

/* Run a product across the pool, split along the side that costs each thread less memory
 * traffic (as jit/targets/cpu/gemm.py): b_reads is what packing B costs in reads of it. */
HIDDEN int gemm_split(dlvm_ctx *ctx, gemm_call *g, double b_reads) {
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
        parts = dlvm_rt_parts_for((double)m * n * k, DLVM_GEMM_PARALLEL_MACS / 32);
        double a_cost = (double)m * k * (g->a_packed ? 1 : 3), b_cost = (double)n * k * b_reads;
        g->by_rows = a_cost / parts + b_cost < a_cost + b_cost / parts;
        if (g->by_rows && row_panels < parts) g->by_rows = 0;
        else if (!g->by_rows && col_panels < parts) g->by_rows = 1;
        panels = g->by_rows ? row_panels : col_panels;
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
            int64_t parts = dlvm_rt_parts_for((double)m * n * k, DLVM_GEMM_PARALLEL_MACS / 128);
            dlvm_rt_parallel(few_rows_task, &f, n, parts < n / 128 ? parts : n / 128);
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

HIDDEN int sgemm(dlvm_ctx *ctx, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                 float *c) {
    return sgemm_with(ctx, m, n, k, a, b, c, NULL, 0);
}

HIDDEN pthread_mutex_t pack_lock = PTHREAD_MUTEX_INITIALIZER;

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

