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
#ifdef __AVX512F__
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

#endif
