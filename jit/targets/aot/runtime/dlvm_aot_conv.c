/* dlvm AOT runtime: convolution (1-D, 2-D, 3-D; grouped, depthwise) and pooling, NCHW. */
#include "dlvm_aot_internal.h"

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

static inline dw_vec dw_splat(float v) {
#ifdef DW_HALVES
    return dw_join(_mm256_set1_ps(v), _mm256_set1_ps(v));   /* (a list of 16: 16 stores) */
#else
    return (dw_vec){v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v};
#endif
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
 * source may be a caller's array), else a vector at a time from two whole loads; the scalar
 * strided copy was a fifth of EfficientNet's depthwise convolutions. */
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
#else
    /* two whole vectors and one shuffle while they end before src[2n - 2] */
    for (; c + NV_LANES < n; c += NV_LANES)
        nv_store(dst + c, nv_even(nv_load(src + 2 * c), nv_load(src + 2 * c + NV_LANES)));
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
            nv_vec a[DW_CHUNK / NV_LANES];
#pragma GCC unroll 16
            for (int k = 0; k < DW_CHUNK / NV_LANES; k++) a[k] = nv_splat(b0);
            for (int64_t t = 0; t < taps; t++) {
                const float *src = buf + off[t] + q0;
                nv_vec wv = nv_splat(wt[t]);
#pragma GCC unroll 16
                for (int k = 0; k < DW_CHUNK / NV_LANES; k++) a[k] += wv * nv_load(src + k * NV_LANES);
            }
#pragma GCC unroll 16
            for (int k = 0; k < DW_CHUNK / NV_LANES; k++) nv_store(acc + q0 + k * NV_LANES, a[k]);
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
    int phased;                 /* strided, read in place: each padded plane copied as its
                                 * stride x stride phases (phase_task), b_rows into them */
} conv_images;

/* y = max(y, 0) with NaN kept (the ISA's relu) */
static void relu_in_place(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = y[i] < 0.0f ? 0.0f : y[i];
}

/* out [m, n] = a [m, k] x b (or the patches of an image, with geometry) on this thread, then
 * + bias per row (NULL: none), then relu where asked */
static int gemm_here(int64_t m, int64_t n, int64_t k, const float *a, const float *a_packed,
                     int64_t a_padded, int64_t a_row0, const float *b, const int64_t *geometry,
                     const int64_t *b_rows, int64_t b_vstep, int64_t b_vpr, const float *bias,
                     int relu, float *c, int64_t ldc) {
    if (!geometry && !b_rows && !a_packed && m < DLVM_GEMM_MIN_ROWS) {
        few_rows(m, n, k, a, b, c);
        if (bias)
            for (int64_t i = 0; i < m; i++)
                for (int64_t q = 0; q < n; q++) c[i * n + q] += bias[i];
        if (relu) relu_in_place(c, m * n);
        return 0;
    }
    gemm_call g = {m, n, k, a, b, c, 1, 0, 0, geometry, a_packed, a_padded, bias, relu, b_rows, ldc,
                   a_row0, b_vstep, b_vpr};
    gemm_task(&g, 0, (m + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR, 0);
    return g.failed;
}

/* one image's product: out [O, px] = w x (the image, or its patches with geometry, or read in
 * place with b_rows, by vectors where b_vstep > 0: b_vpr of them a row, rows b_vstep apart) +
 * bias, on this thread or split across the pool */
static int conv_product(conv_images *j, int64_t px, int64_t kk, const float *b,
                        const int64_t *geometry, const int64_t *b_rows, int64_t b_vstep,
                        int64_t b_vpr, float *yb) {
    if (!j->split)
        return gemm_here(j->o, px, kk, j->w, j->w_packed, j->w_padded, j->w_row0, b, geometry,
                         b_rows, b_vstep, b_vpr, j->bias, j->relu, yb, 0);
    if (!geometry && !b_rows && !j->w_packed && j->o < DLVM_GEMM_MIN_ROWS) {
        int rc = sgemm(j->ctx, j->o, px, kk, j->w, b, yb);
        if (!rc && j->bias)
            for (int64_t i = 0; i < j->o; i++)
                for (int64_t q = 0; q < px; q++) yb[i * px + q] += j->bias[i];
        if (!rc && j->relu) relu_in_place(yb, j->o * px);
        return rc;
    }
    gemm_call g = {j->o, px, kk, j->w, b, yb, 1, 0, 0, geometry, j->w_packed, j->w_padded, j->bias,
                   j->relu, b_rows, 0, j->w_row0, b_vstep, b_vpr};
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
#elif defined(__AVX2__)
    /* rows of up to 32 floats; the last vector's lanes past a plane's last row land in border
     * rows (this plane's bottom, the next one's top: zeros), so there must be enough of them */
    int nv = wp <= 32 && left >= 0 && right >= 0 && (wp + 7) / 8 * 8 - wp <= (top + bottom) * wp ?
             (int)((wp + 7) / 8) : 0;
    __m256i in_mask[4];
    for (int v = 0; v < 4; v++) {
        int32_t lanes[8];
        for (int l = 0; l < 8; l++) {
            int64_t at = 8 * v + l;
            lanes[l] = at >= left && at < left + wd ? -1 : 0;
        }
        in_mask[v] = _mm256_loadu_si256((const __m256i *)lanes);
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
#elif defined(__AVX2__)
        if (nv) {
            /* as above with AVX2's masked loads; its masked stores are microcoded on AMD (5-7
             * ns), so each row is stored as whole vectors: the last one's lanes past the row
             * hold zeros and run into the next row, written after it, or into border rows
             * (nv's condition), whose zeros they are */
            for (int64_t i = 0; i < h; i++) {
                uintptr_t from = (uintptr_t)(rows + i * wd) - (uintptr_t)left * 4;
                float *to = plane + (i + top) * wp;
                for (int v = 0; v < nv; v++) {
                    const float *at = (const float *)(from + 32 * (uintptr_t)v);
                    _mm256_storeu_ps(to + 8 * v, _mm256_maskload_ps(at, in_mask[v]));
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

/* A strided convolution read in place: plane ci of the padded images copied as its sh x sw
 * phases, phase (a, b) holding padded[y * sh + a][x * sw + b] for y < hph, x < wph (zeros past
 * the padded plane). Tap (c, p, q) of output (i, j) is then element (i + p / sh, j + q / sw) of
 * phase (p % sh, q % sw): a stride-1 read, which the GEMM multiplies in place (flag 8) like a
 * stride-1 convolution's padded image, where packing the patches took a loop trip per element
 * at strides above 2 (the Nature DQN's 8x8 / 4 convolution: 40% of its time). */
typedef struct {
    const float *x;
    float *phases;
    int64_t h, wd, hp, wp, sh, sw, hph, wph;
    const int64_t *p;
    int64_t c, x_image;
} phase_job;

static void phase_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const phase_job *j = arg;
    int64_t sh = j->sh, sw = j->sw, hph = j->hph, wph = j->wph, top = j->p[0], left = j->p[1];
    for (int64_t ci = lo; ci < hi; ci++) {      /* image ci / c, channel ci % c */
        const float *img = j->x + ci / j->c * j->x_image + ci % j->c * j->h * j->wd;
        float *out = j->phases + ci * sh * sw * hph * wph;
        for (int64_t a = 0; a < sh; a++)
            for (int64_t b = 0; b < sw; b++) {
                /* the phase's columns that fall in the image: x * sw + b - left in [0, wd) */
                int64_t x0 = left - b > 0 ? (left - b + sw - 1) / sw : 0;
                int64_t x1 = left + j->wd - b > 0 ? (left + j->wd - b + sw - 1) / sw : 0;
                if (x1 > wph) x1 = wph;
                if (x0 > x1) x0 = x1;
                for (int64_t y = 0; y < hph; y++, out += wph) {
                    int64_t iy = y * sh + a - top;
                    if (iy < 0 || iy >= j->h) {
                        zero_f32(out, wph);
                        continue;
                    }
                    const float *row = img + iy * j->wd + b - left;
                    zero_f32(out, x0);
                    if (sw == 1)
                        copy_f32(out + x0, row + x0, x1 - x0);
                    else if (sw == 2)
                        take_even(out + x0, row + 2 * x0, x1 - x0);
                    else    /* (AVX2's gather was slower: 15.6% of the DQN against 11.8%) */
                        for (int64_t x = x0; x < x1; x++) out[x] = row[x * sw];
                    zero_f32(out + x1, wph - x1);
                }
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
                      j->b_rows, 0, 0, j->bias, j->relu, r->yb + y * j->wo, j->ho * j->wo)) {
            __atomic_store_n(&r->failed, 1, __ATOMIC_RELAXED);
            return;
        }
}

/* the products' columns: images of few output pixels are multiplied `group` at a time (their
 * pixels side by side), up to this many columns, so that the register tiles fill */
#define CONV_GROUP_COLUMNS (4 * DLVM_GEMM_NR)

/* Output rows multiplied one by one, in place: rows of whole vectors, at least 16 columns.
 * With AVX2 a row of 8 was one vector, half the register tile (16 columns): a 64-channel 3x3
 * convolution of 8x8 maps at batch 32 ran in 1.3x the time of the patches packed image by
 * image (1.63x onnxruntime's time, against 1.25x). */
static int conv_rows_whole(int64_t wo) { return wo % DLVM_GEMM_VW == 0 && wo >= 16; }

static void conv_images_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    conv_images *j = arg;
    const int64_t *s = j->s, *p = j->p, *d = j->d;
    int64_t c = j->c, h = j->h, wd = j->wd, o = j->o;
    int64_t kk = c * j->kh * j->kw, px = j->ho * j->wo;
    int64_t hp = h + p[0] + p[2], wp = wd + p[1] + p[3], plane = c * hp * wp;
    /* a strided convolution read in place multiplies its phases (phase_task): rows of wph */
    int64_t hph = (hp + s[0] - 1) / s[0], wph = (wp + s[1] - 1) / s[1], rw = wp;
    if (j->phased) {
        plane = c * s[0] * s[1] * hph * wph;
        rw = wph;
    }
    int64_t group = j->group < hi - lo ? j->group : hi - lo;
    size_t padded_bytes = ((size_t)(group * plane + DLVM_GEMM_SLACK + 16) * 4 + 63) / 64 * 64;
    /* read in place, the product runs over the padded width: output rows [Ho, Wp], of which
     * the first Wo columns are kept (wide_n columns: the last row's padding is not computed) */
    int wide = j->b_rows && !j->pointwise && rw != j->wo;
    /* output rows of whole vectors: one product per output row, straight into the output (no
     * padding columns computed, nothing copied out): 0.80-0.93x the time of the padded width
     * at 16 to 64 pixels a row. Rows of 14 or 28 (vectors and a tail) were slower. */
    int by_rows = wide && conv_rows_whole(j->wo);
    /* output rows of whole vectors as one product over the image, each vector of a tile read
     * from its output row's padded row (the GEMM's columns by vectors, flag 8 with sbn): rows of
     * one vector (8x8 maps with AVX2), and with AVX2's tiles of two vectors any whole-vector
     * rows, whose row-by-row products of 24 or 56 columns left a one-vector tile per row.
     * Measured with AVX2; AVX-512's 16-wide rows keep the row-by-row form measured there */
    int by_vectors = wide && j->wo % DLVM_GEMM_VW == 0 &&
                     (DLVM_GEMM_NR == 2 * DLVM_GEMM_VW || (j->wo == DLVM_GEMM_VW && !by_rows));
    if (by_vectors) by_rows = 0;
    if (by_rows || by_vectors) wide = 0;
    int64_t wide_n = (j->ho - 1) * rw + j->wo;
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
            rc = conv_product(j, px, kk, j->x + b * j->x_image, NULL, j->b_rows, 0, 0, yb);
        } else {
            const float *src = j->x + b * j->x_image;
            if (j->phased) {
                src = padded;
                phase_job ph = {j->x + b * j->x_image, padded, h, wd, hp, wp, s[0], s[1], hph, wph,
                                p, c, j->x_image};
                if (j->split && (size_t)(g * plane) * 4 >= PARALLEL_COPY_BYTES)
                    dlvm_rt_parallel(phase_task, &ph, g * c, dlvm_rt_threads());
                else
                    phase_task(&ph, 0, g * c, 0);
            } else if (!j->pointwise) {
                src = padded;
                pad_job pj = {j->x + b * j->x_image, padded, h, wd, hp, wp, p, j->split, c,
                              j->x_image};
                if (j->split && (size_t)(g * plane) * 4 >= PARALLEL_COPY_BYTES)
                    dlvm_rt_parallel(pad_task, &pj, g * c, dlvm_rt_threads());
                else
                    pad_task(&pj, 0, g * c, 0);
            }
            if (by_rows) {          /* in place, output row by output row */
                conv_rows rows = {j, src, yb, kk, rw, 0};
                if (j->split)       /* one image: its rows split across the pool */
                    dlvm_rt_parallel(conv_rows_task, &rows, j->ho, dlvm_rt_threads());
                else
                    conv_rows_task(&rows, 0, j->ho, 0);
                rc = rows.failed;
            } else if (j->b_rows) { /* in place: one image, on the padded width where it has one */
                rc = conv_product(j, wide ? wide_n : px, kk, src, NULL, j->b_rows,
                                  by_vectors ? rw : 0, j->wo / DLVM_GEMM_VW, wide ? staging : yb);
                if (!rc && wide) {
                    kept_job kj = {staging, yb, j->ho, j->wo, rw, wide_n};
                    if (j->split && (size_t)(o * px) * 4 >= PARALLEL_COPY_BYTES)
                        dlvm_rt_parallel(kept_task, &kj, o * j->ho, dlvm_rt_threads());
                    else
                        kept_task(&kj, 0, o * j->ho, 0);
                }
            } else
                rc = conv_product(j, g * px, kk, src, geometry, NULL, 0, 0, g > 1 ? staging : yb);
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


/* 16 [h, w] planes (NULL: a lane of `fill`) into the lanes of an image of rows `wp` pixels wide,
 * pixel (i, j) at (i + p0, j + p1): 16 pixels of the 16 planes per transpose, whole vectors
 * where a chunk is whole (a copy of n floats went through the stack and cost more than the
 * pooling), the pixel's place stepped, not divided */
static void planes_to_lanes(const float *const *src, int64_t h, int64_t w, float *in,
                            int64_t wp, int64_t p0, int64_t p1, dw_vec fill) {
    float fills[16];        /* the rows of a missing plane */
    memcpy(fills, &fill, sizeof fills);
    for (int64_t q0 = 0; q0 < h * w; q0 += 16) {
        int64_t n = h * w - q0 < 16 ? h * w - q0 : 16;
        if (n == 16) {
            const float *s[16];
            float *d[16];
            for (int l = 0; l < 16; l++) s[l] = src[l] ? src[l] + q0 : fills;
            int64_t i = q0 / w, j = q0 % w;
            for (int k = 0; k < 16; k++) {
                d[k] = in + ((i + p0) * wp + j + p1) * 16;
                if (++j == w) j = 0, i++;
            }
            transpose16_mem(s, d);
            continue;
        }
        float part[16][16], unused[16];     /* the last chunk: n < 16 pixels */
        const float *s[16];
        float *d[16];
        for (int l = 0; l < 16; l++) {
            if (src[l]) {
                memcpy(part[l], src[l] + q0, (size_t)n * 4);
                memset(part[l] + n, 0, (size_t)(16 - n) * 4);
                s[l] = part[l];
            } else {
                s[l] = fills;
            }
        }
        for (int64_t k = 0, i = q0 / w, j = q0 % w; k < 16; k++) {
            d[k] = k < n ? in + ((i + p0) * wp + j + p1) * 16 : unused;
            if (++j == w) j = 0, i++;
        }
        transpose16_mem(s, d);
    }
}

/* the first `lanes` lanes of `pixels` vectors back into planes dst[0 .. lanes) */
static void lanes_to_planes(const float *res, int64_t pixels, float *const *dst, int64_t lanes) {
    float unused[16];       /* where the lanes past `lanes` go */
    for (int64_t q0 = 0; q0 < pixels; q0 += 16) {
        int64_t n = pixels - q0 < 16 ? pixels - q0 : 16;
        if (n == 16) {
            const float *s[16];
            float *d[16];
            for (int k = 0; k < 16; k++) s[k] = res + (q0 + k) * 16;
            for (int l = 0; l < 16; l++) d[l] = l < lanes ? dst[l] + q0 : unused;
            transpose16_mem(s, d);
            continue;
        }
        static const float zeros[16];       /* the last chunk: n < 16 pixels */
        float part[16][16];
        const float *s[16];
        float *d[16];
        for (int k = 0; k < 16; k++) s[k] = k < n ? res + (q0 + k) * 16 : zeros;
        for (int l = 0; l < 16; l++) d[l] = part[l];
        transpose16_mem(s, d);
        for (int64_t l = 0; l < lanes; l++) memcpy(dst[l] + q0, part[l], (size_t)n * 4);
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
        /* (the 16 lanes as NV_PER16 vectors of the machine's width) */
        for (int64_t i = 0; i < ho; i++) {
            int64_t j = 0;
            for (; j + 4 <= wo; j += 4) {       /* four pixels: four independent sums */
                nv_vec a[4][NV_PER16];
#pragma GCC unroll 4
                for (int e = 0; e < NV_PER16; e++)
                    a[0][e] = a[1][e] = a[2][e] = a[3][e] = nv_load(bias + e * NV_LANES);
                for (int64_t u = 0; u < kh; u++) {
                    const float *r = in + ((i * s0 + u * d0) * wp + j * s1) * 16;
                    for (int64_t v = 0; v < kw; v++) {
                        const float *q = r + v * d1 * 16, *wq = wt + (u * kw + v) * 16;
#pragma GCC unroll 4
                        for (int e = 0; e < NV_PER16; e++) {
                            nv_vec wv = nv_load(wq + e * NV_LANES);
#pragma GCC unroll 4
                            for (int px = 0; px < 4; px++)
                                a[px][e] += wv * nv_load(q + px * s1 * 16 + e * NV_LANES);
                        }
                    }
                }
                float *dst = res + (i * wo + j) * 16;
#pragma GCC unroll 4
                for (int px = 0; px < 4; px++)
#pragma GCC unroll 4
                    for (int e = 0; e < NV_PER16; e++) nv_store(dst + px * 16 + e * NV_LANES, a[px][e]);
            }
            for (; j < wo; j++) {
                nv_vec a[NV_PER16];
#pragma GCC unroll 4
                for (int e = 0; e < NV_PER16; e++) a[e] = nv_load(bias + e * NV_LANES);
                for (int64_t u = 0; u < kh; u++)
                    for (int64_t v = 0; v < kw; v++) {
                        const float *wq = wt + (u * kw + v) * 16;
                        const float *xq = in + ((i * s0 + u * d0) * wp + j * s1 + v * d1) * 16;
#pragma GCC unroll 4
                        for (int e = 0; e < NV_PER16; e++)
                            a[e] += nv_load(wq + e * NV_LANES) * nv_load(xq + e * NV_LANES);
                    }
#pragma GCC unroll 4
                for (int e = 0; e < NV_PER16; e++) nv_store(res + (i * wo + j) * 16 + e * NV_LANES, a[e]);
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
     * place pays even at 128 channels or 3 input channels (bench/conv_in_place.py); rows of
     * one vector, the image's rows side by side in the register tile */
    return conv_rows_whole(wo) || wo == DLVM_GEMM_VW || (kk >= 64 && (wp - wo) * o <= 4 * wo);
}

/* A strided convolution read in place from its phases (phase_task). Above stride 2 the
 * packing copies element by element: the Nature DQN's 8x8 / 4 convolution at batch 32, 2
 * threads, 1.67-1.77x onnxruntime's time packed, 1.24-1.32x from its phases. At stride 2 the
 * packing takes the even lanes of two loads, and the phases paid only with 4 taps or more per
 * phase (7x7 / 2 stem 0.85-0.91x against 0.96-0.98x, 5x5 1.14-1.23x against 1.28-1.29x, 4x4
 * even); 3x3 ones ran 1.17-1.37x against 1.04-1.18x. */
static int conv_phases_pay(int64_t kh, int64_t kw, const int64_t *s, int64_t ho, int64_t wo,
                           int64_t wph) {
    const char *env = getenv("DLVM_CONV_IN_PLACE");
    if (env && *env) return env[0] != '0';
    if (!(s[0] > 2 || s[1] > 2 || kh * kw >= 4 * s[0] * s[1])) return 0;
    /* rows of whole vectors are read without waste; others over the phase width, which must
     * waste little: a DCGAN's 4x4 / 2 convolution to a 4x4 map at batch 1 computed 19
     * columns for 16 on the phase width, 24 with its tiles, where the packed patches fill
     * one tile (1.33-1.37x onnxruntime's time for the model) */
    return wo % DLVM_GEMM_VW == 0 || ((wph - wo) * 8 <= wph && ho * wo >= 4 * DLVM_GEMM_NR);
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
    if (cg * kh * kw == 0 && (x->dtype == DT_F32 || x->dtype == DT_F64)) {
        /* no input channels: each output is the bias alone (the products never wrote it) */
        int64_t total = dlvm_rt_numel(out), plane = ho * wo;
        for (int64_t i = 0; i < total; i++) {
            if (x->dtype == DT_F32) {
                float v = bd ? ((const float *)bd)[i / plane % o] : 0.0f;
                ((float *)out->data)[i] = relu && v < 0.0f ? 0.0f : v;
            } else {
                double v = bd ? ((const double *)bd)[i / plane % o] : 0.0;
                ((double *)out->data)[i] = relu && v < 0.0 ? 0.0 : v;
            }
        }
        return 0;
    }
    if (x->dtype == DT_F32 && groups == 1 && (kh == 3 || kh == 1) && kw == 3 && s[0] == 1 &&
        s[1] == 1 && d[0] == 1 && d[1] == 1 && n * o * ho * wo > 0 &&
        winograd_pays(n, c, o, ho, wo, kh)) {
        int rc = conv2d_winograd(ctx, x, w, bd, p, relu, pack, out);
        if (rc != WINOGRAD_DECLINED) return rc;
    }
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
        int strided = s[0] > 1 || s[1] > 1;
        int64_t hph = (hp + s[0] - 1) / s[0], wph = (wp + s[1] - 1) / s[1];
        /* (every phase holds taps: a 1x1 stride-2 convolution would copy four phases for one) */
        job.phased = strided && !pointwise && d[0] == 1 && d[1] == 1 && kh >= s[0] && kw >= s[1] &&
                     conv_phases_pay(kh, kw, s, ho, wo, wph);
        if (job.w_packed && job.group == 1 && (job.phased || (!strided &&
            conv_reads_in_place(o, kk, wo, pointwise ? wo : wp, pointwise))) &&
            (b_rows = buffer_alloc(&rows_bytes)) != NULL) {
            for (int64_t k = 0; k < kk; k++) {
                int64_t ci = k / (kh * kw), ky = k / kw % kh, kx = k % kw;
                if (job.phased)     /* phase (ky % sh, kx % sw), from (ky / sh, kx / sw) */
                    b_rows[k] = ((ci * s[0] + ky % s[0]) * s[1] + kx % s[1]) * hph * wph +
                                ky / s[0] * wph + kx / s[1];
                else
                    b_rows[k] = pointwise ? k * px : (ci * hp + ky * d[0]) * wp + kx * d[1];
            }
            job.b_rows = b_rows;
        }
        if (!job.b_rows) job.phased = 0;
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
            int64_t parts = dlvm_rt_parts_for((double)j->og * n * j->kk, DLVM_GEMM_PARALLEL_MACS / 128);
            if (parts < 2) parts = 2;       /* (j->split: the caller found it worth splitting) */
            dlvm_rt_parallel(few_rows_task, &f, n, parts < n / 128 ? parts : n / 128);
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
    for (; 2 * t + 2 * NV_LANES <= w; t += NV_LANES) {
        nv_vec a = nv_load(x + 2 * t), b = nv_load(x + 2 * t + NV_LANES);
        nv_store(even + t, nv_even(a, b));
        nv_store(odd + t, nv_odd(a, b));
    }
    for (; 2 * t < w; t++) {
        even[t] = x[2 * t];
        if (2 * t + 1 < w) odd[t] = x[2 * t + 1];
    }
}

/* A 2x2 window with stride 2 and no padding, every window whole (most CNNs' pooling): both
 * rows and both columns in one pass, a vector of outputs per step with the column pairs split
 * by vector shuffles; the general path's padded row, fills and separate passes cost more than
 * the pooling on the small planes of a CNN's batch. A NaN wins a maximum, as in the general
 * path. */
/* NV_LANES windows from 2 NV_LANES columns of two rows: the column pairs split by vector
 * shuffles */
static inline nv_vec pool2x2_step(nv_vec a0, nv_vec a1, nv_vec b0, nv_vec b1, int is_max) {
    nv_vec e0 = nv_even(a0, a1), o0 = nv_odd(a0, a1);
    nv_vec e1 = nv_even(b0, b1), o1 = nv_odd(b0, b1);
    if (!is_max) return ((e0 + e1) + (o0 + o1)) * 0.25f;
    /* t wins over b where t > b or t is NaN: as (t > b || t != t) ? t : b */
    return nv_max_nan(nv_max_nan(o1, o0), nv_max_nan(e1, e0));
}

static void pool2x2_plane(const float *x, int64_t w, float *y, int64_t ho, int64_t wo, int is_max) {
    for (int64_t i = 0; i < ho; i++) {
        const float *r0 = x + 2 * i * w, *r1 = r0 + w;
        float *yr = y + i * wo;
        int64_t j = 0;
        for (; j + NV_LANES <= wo; j += NV_LANES)
            nv_store(yr + j, pool2x2_step(nv_load(r0 + 2 * j), nv_load(r0 + 2 * j + NV_LANES),
                                          nv_load(r1 + 2 * j), nv_load(r1 + 2 * j + NV_LANES),
                                          is_max));
        if (j < wo) {
            /* the last (or only: a 24x24 plane's 12) windows as one more vector step over
             * masked loads (zeroed copies without AVX-512): the scalar loop's compares were
             * data-dependent branches, mispredicted half the time, and a small CNN's pooling
             * took 28% of its profile */
            int64_t n = wo - j;
#ifdef __AVX512F__
            __mmask16 lo = (__mmask16)(n >= 8 ? 0xFFFF : (1u << (2 * n)) - 1);
            __mmask16 hi = (__mmask16)(n > 8 ? (1u << (2 * (n - 8))) - 1 : 0);
            nv_vec r = pool2x2_step((nv_vec)_mm512_maskz_loadu_ps(lo, r0 + 2 * j),
                                    (nv_vec)_mm512_maskz_loadu_ps(hi, r0 + 2 * j + 16),
                                    (nv_vec)_mm512_maskz_loadu_ps(lo, r1 + 2 * j),
                                    (nv_vec)_mm512_maskz_loadu_ps(hi, r1 + 2 * j + 16), is_max);
            _mm512_mask_storeu_ps(yr + j, (__mmask16)((1u << n) - 1), (__m512)r);
#else
            float t0[2 * NV_LANES] = {0}, t1[2 * NV_LANES] = {0};
            memcpy(t0, r0 + 2 * j, 8 * (size_t)n);
            memcpy(t1, r1 + 2 * j, 8 * (size_t)n);
            nv_vec r = pool2x2_step(nv_load(t0), nv_load(t0 + NV_LANES), nv_load(t1),
                                    nv_load(t1 + NV_LANES), is_max);
            memcpy(yr + j, &r, 4 * (size_t)n);
#endif
            j = wo;
        }
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
                nv_vec a[NV_PER16];
#pragma GCC unroll 4
                for (int e = 0; e < NV_PER16; e++) a[e] = nv_splat(fill);
                for (int64_t u = 0; u < k0; u++) {
                    const float *row = in + ((i * s0 + u * d0) * wp + j * s1) * 16;
                    for (int64_t v = 0; v < k1; v++)
#pragma GCC unroll 4
                        for (int e = 0; e < NV_PER16; e++) {
                            nv_vec t = nv_load(row + v * d1 * 16 + e * NV_LANES);
                            a[e] = is_max ? nv_max_nan(t, a[e]) : a[e] + t;
                        }
                }
                nv_vec sc = nv_splat(is_max ? 1.0f : scale[i * wo + j]);
#pragma GCC unroll 4
                for (int e = 0; e < NV_PER16; e++)
                    nv_store(res + (i * wo + j) * 16 + e * NV_LANES, is_max ? a[e] : a[e] * sc);
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

