/* The runtime's interface between its own source files, which the first build on a machine
 * compiles in parallel (one file was 5.5 s of -O3 on a core before the first library could load;
 * the tier's calls run on the VM meanwhile):
 *   dlvm_aot_rt.c    buffers, values, entry checks, the thread pool, regions, matrix products
 *   dlvm_aot_conv.c  convolution and pooling (NCHW)
 *   dlvm_aot_ops.c   movement, reductions, top-k, gathers, resize, grid_sample, scatters
 * What they share is hidden in the library and named dlvm_rti_* (the defines below), so that a
 * static archive of a program cannot clash with names of the program it is linked into. */
#ifndef DLVM_AOT_INTERNAL_H
#define DLVM_AOT_INTERNAL_H

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
#if defined(__AVX__) || defined(__SSE__)
#include <immintrin.h>
#endif

#define HIDDEN __attribute__((visibility("hidden")))

#define buffer_alloc dlvm_rti_buffer_alloc
#define buffer_free dlvm_rti_buffer_free
#define numel_of dlvm_rti_numel_of
#define alloc_with_room dlvm_rti_alloc_with_room
#define dtype_name dlvm_rti_dtype_name
#define gemm_task dlvm_rti_gemm_task
#define few_rows dlvm_rti_few_rows
#define few_rows_task dlvm_rti_few_rows_task
#define gemm_split dlvm_rti_gemm_split
#define sgemm dlvm_rti_sgemm
#define pack_lock dlvm_rti_pack_lock
#define winograd_pays dlvm_rti_winograd_pays
#define conv2d_winograd dlvm_rti_conv2d_winograd

/* ---- buffers and values (dlvm_aot_rt.c) ---------------------------------------------------- */

/* a buffer of at least *bytes from this thread's cache (*bytes: what it holds), and back */
HIDDEN void *buffer_alloc(size_t *bytes);
HIDDEN void buffer_free(void *data, size_t bytes);
HIDDEN int64_t numel_of(int32_t rank, const int64_t *shape);
/* a new tensor whose buffer has room for `room` more bytes after its data (an appendable
 * concat result) */
HIDDEN int alloc_with_room(dlvm_ctx *ctx, dlvm_val *v, int32_t dtype, int32_t rank,
                           const int64_t *shape, size_t room);
HIDDEN const char *dtype_name(int32_t d);

/* ---- matrix products (dlvm_aot_rt.c) ------------------------------------------------------- */

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
    int64_t b_vstep;           /* > 0 with b_rows: b's columns are vectors this many floats apart */
    int64_t b_vpr;             /* > 0 with b_vstep: vectors per row, rows b_vstep apart */
} gemm_call;

typedef struct few_rows_call {
    int64_t m, n, k;
    const float *a, *b;
    float *c;
} few_rows_call;

HIDDEN void gemm_task(void *arg, int64_t lo, int64_t hi, int64_t part);
HIDDEN void few_rows(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c);
HIDDEN void few_rows_task(void *arg, int64_t lo, int64_t hi, int64_t part);
HIDDEN int gemm_split(dlvm_ctx *ctx, gemm_call *g, double b_reads);
HIDDEN int sgemm(dlvm_ctx *ctx, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                 float *c);
/* held while a constant operand is packed once (packed_once, packed_weights) */
HIDDEN extern pthread_mutex_t pack_lock;

/* ---- 3x3, stride-1 convolutions by Winograd's F(2x2, 3x3) (dlvm_aot_winograd.c) ----------- */

/* whether n images of c channels to o channels of [ho, wo] outputs by kh x 3 filters (kh 3 or
 * 1) pay for the transforms (DLVM_WINOGRAD=0 or 1 overrides the choice, for measuring it and
 * for tests) */
HIDDEN int winograd_pays(int64_t n, int64_t c, int64_t o, int64_t ho, int64_t wo, int64_t kh);
/* out (allocated, [N, O, Ho, Wo]) = conv2d of x by the 3x3 or 1x3 weights w, stride and
 * dilation 1, pads p, + bias (NULL: none), relu where asked: 0, or WINOGRAD_DECLINED (a
 * non-finite input, weight or result, or no memory for the scratch: the caller runs the direct
 * products) */
#define WINOGRAD_DECLINED (-1)
HIDDEN int conv2d_winograd(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *w, const float *bias,
                           const int64_t *p, int relu, dlvm_rt_packed *pack, dlvm_val *out);

/* ---- vectors of the machine's width ------------------------------------------------------ */

/* The hand-vectorized loops hold their sums in vectors of the CPU's own width: 16 floats with
 * AVX-512, 8 with AVX, 4 otherwise. GCC keeps a wider vector type than the CPU has in memory,
 * not registers (GCC 12 on Zen 3: a splat of 16 floats was 16 scalar stores, the sums of a
 * depthwise convolution's loop were loaded and stored at every tap). Layouts stay 16 floats
 * wide (lanes of 16 channels, chunks of 64): a 16-float step is NV_PER16 vectors. */
#if defined(__AVX512F__)
#define NV_LANES 16
#elif defined(__AVX__)
#define NV_LANES 8
#else
#define NV_LANES 4
#endif
#define NV_PER16 (16 / NV_LANES)
typedef float nv_vec __attribute__((vector_size(NV_LANES * 4)));

static inline nv_vec nv_load(const float *p) {
    nv_vec v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void nv_store(float *p, nv_vec v) { memcpy(p, &v, sizeof v); }

static inline nv_vec nv_splat(float x) {
    nv_vec v;
    for (int i = 0; i < NV_LANES; i++) v[i] = x;
    return v;
}

typedef int32_t nv_ivec __attribute__((vector_size(NV_LANES * 4)));

/* t where t > a or t is NaN, else a: a NaN wins a maximum, as in the scalar paths */
static inline nv_vec nv_max_nan(nv_vec t, nv_vec a) {
    nv_ivec c = (t > a) | (t != t);
    return (nv_vec)(((nv_ivec)t & c) | ((nv_ivec)a & ~c));
}

/* y < 0 -> 0, the rest (NaN too) kept */
static inline nv_vec nv_relu(nv_vec y) { return (nv_vec)((nv_ivec)y & ~(y < nv_splat(0.0f))); }

#if defined(__clang__)
#define NV_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define NV_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, (nv_ivec){__VA_ARGS__})
#endif

/* the even (odd = 0) or odd elements of a then of b: a stride-2 row's phases, NV_LANES from
 * 2 NV_LANES */
static inline nv_vec nv_phase(nv_vec a, nv_vec b, int odd) {
#if NV_LANES == 8 && defined(__AVX2__)
    __m256 picked = odd ? _mm256_shuffle_ps((__m256)a, (__m256)b, 0xDD)
                        : _mm256_shuffle_ps((__m256)a, (__m256)b, 0x88);    /* in 128-bit lanes */
    return (nv_vec)_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(picked), 0xD8));
#elif NV_LANES == 16
    return odd ? NV_SHUFFLE(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31)
               : NV_SHUFFLE(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
#elif NV_LANES == 8
    return odd ? NV_SHUFFLE(a, b, 1, 3, 5, 7, 9, 11, 13, 15) : NV_SHUFFLE(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
#else
    return odd ? NV_SHUFFLE(a, b, 1, 3, 5, 7) : NV_SHUFFLE(a, b, 0, 2, 4, 6);
#endif
}

static inline nv_vec nv_even(nv_vec a, nv_vec b) { return nv_phase(a, b, 0); }

static inline nv_vec nv_odd(nv_vec a, nv_vec b) { return nv_phase(a, b, 1); }

/* a[0] b[0] a[1] b[1] ... from the first (high = 0) or last half of each */
static inline nv_vec nv_zip(nv_vec a, nv_vec b, int high) {
#if NV_LANES == 8 && defined(__AVX__)
    __m256 u = _mm256_unpacklo_ps((__m256)a, (__m256)b), w = _mm256_unpackhi_ps((__m256)a, (__m256)b);
    return (nv_vec)(high ? _mm256_permute2f128_ps(u, w, 0x31) : _mm256_permute2f128_ps(u, w, 0x20));
#elif NV_LANES == 16
    return high ? NV_SHUFFLE(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)
                : NV_SHUFFLE(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
#elif NV_LANES == 8
    return high ? NV_SHUFFLE(a, b, 4, 12, 5, 13, 6, 14, 7, 15)
                : NV_SHUFFLE(a, b, 0, 8, 1, 9, 2, 10, 3, 11);
#else
    return high ? NV_SHUFFLE(a, b, 2, 6, 3, 7) : NV_SHUFFLE(a, b, 0, 4, 1, 5);
#endif
}

/* the first n (0 <= n <= NV_LANES) lanes of v, the others 0 */
static inline nv_vec nv_first(nv_vec v, int64_t n) {
    static const int32_t ones[32] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    nv_ivec keep;
    memcpy(&keep, ones + 16 - n, sizeof keep);
    return (nv_vec)((nv_ivec)v & keep);
}

/* the first n (<= NV_LANES) lanes of v to p */
static inline void nv_store_part(float *p, nv_vec v, int64_t n) {
    if (n >= NV_LANES) {
        nv_store(p, v);
        return;
    }
#ifdef __AVX512F__
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), (__m512)v);
#else
    memcpy(p, &v, (size_t)n * 4);
#endif
}

/* ---- vectors of 16 floats (depthwise convolution, pools, transposes) ----------------------- */

typedef float dw_vec __attribute__((vector_size(64)));

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

#if defined(__AVX2__) && !defined(__AVX512F__)
/* Without AVX-512 a vector of 16 floats is two AVX registers, and the compilers build a
 * two-vector shuffle that crosses them element by element through the stack (GCC 12 on Zen 3:
 * the depthwise convolutions' transposes were 4720 instructions, most of them scalar moves):
 * the transposes below go by 8 x 8 tiles of AVX registers. */
#define DW_HALVES 1
/* (a memcpy into a half stays in a register; a union, a vector subscript or a length-changing
 * shuffle went through the stack element by element) */
static inline dw_vec dw_join(__m256 lo, __m256 hi) {
    dw_vec v;
    memcpy(&v, &lo, 32);
    memcpy((char *)&v + 32, &hi, 32);
    return v;
}

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

#ifdef DW_HALVES
/* r[i][j] <-> r[j][i] for 8 rows of 8 (the usual unpack, shuffle, lane-swap steps) */
static inline void dw_transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}
#endif

/* dst[j][i] = src[i][j] for a 16 x 16 tile: source row i (16 floats) at src[i], result row j at
 * dst[j]; the two must not overlap. Without AVX-512, four 8 x 8 tiles in eight registers each
 * (the 16 vectors of transpose16 are 32 registers there, and spilled). */
static inline void transpose16_mem(const float *const src[16], float *const dst[16]) {
#ifdef DW_HALVES
    for (int bi = 0; bi < 2; bi++)
        for (int bj = 0; bj < 2; bj++) {
            __m256 r[8];
            for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src[8 * bi + i] + 8 * bj);
            dw_transpose8(r);
            for (int j = 0; j < 8; j++) _mm256_storeu_ps(dst[8 * bj + j] + 8 * bi, r[j]);
        }
#else
    dw_vec r[16];
    for (int i = 0; i < 16; i++) memcpy(&r[i], src[i], sizeof r[i]);
    transpose16(r);
    for (int j = 0; j < 16; j++) memcpy(dst[j], &r[j], sizeof r[j]);
#endif
}

#endif
