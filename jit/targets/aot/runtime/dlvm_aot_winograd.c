/* 3x3 (and 1x3), stride-1 convolutions by Winograd's minimal filtering, F(2x2, 3x3) (Lavin
 * and Gray, "Fast Algorithms for Convolutional Neural Networks", 2015): each 2x2 block of
 * outputs (a tile) is computed from its 4x4 window of the input with 16 multiplies per input
 * channel where the direct sum takes 36, so the products, which are all of a CNN's time,
 * shrink 2.25x.
 *
 *     V = B^T d B   (each 4x4 input window d; adds only)
 *     U = G g G^T   (each 3x3 filter g; once per constant weight, packed for the GEMM)
 *     M[xi] = U[xi] x V[xi]   for each of the 16 positions xi: [O, C] x [C, tiles]
 *     Y = A^T M A   (each tile's 2x2 outputs; adds only), then bias and relu
 *
 * The work is split into units of consecutive tile rows (image-major), each on one thread with
 * its own V and M, sized to stay within the core's L2 with the GEMM's panels. The 16 products
 * per unit are the library's GEMM with the transformed weights prepacked (flag 1) and V read
 * in place (flag 8).
 *
 * A 1x3 filter (a conv1d's, or an Inception-style 1x3) is F(2, 3) along the rows alone: 1x4
 * windows, 4 positions, 2 outputs a tile, 4 multiplies where the direct sum takes 6.
 *
 * Accuracy: the transforms' coefficients are 0, +-1 and +-1/2, so V and the output transform
 * add at most 4 and 9 terms, and U is rounded once from double; the sums differ from the
 * direct ones by a few units in the last place of the terms' magnitudes (specs/tolerances.md).
 * A non-finite input or weight, or a transform that overflows, would turn into NaN where the
 * direct sum gives an infinity or a finite value (inf - inf in the transforms): such a call
 * runs the direct products instead (the inputs are checked as they are read, the outputs as
 * they are stored, the transformed weights once). */
#include "dlvm_aot_internal.h"


/* one call: u is its transformed weights, np GEMM-packed [O_pad, C] matrices one after another */
typedef struct {
    const float *x;
    float *y;
    const float *u;
    const float *bias;
    int64_t c, h, wd, o, o_pad, ho, wo, th, tw, top, left;
    int64_t rows, per_unit;     /* tile rows in all (images x th), tile rows per unit */
    int kh;                     /* 3: 3x3 filters, 2x2 tiles; 1: 1x3 filters, 1x2 tiles (F(2, 3)) */
    int np;                     /* the transform's positions: 16 (4x4 windows) or 4 */
    int relu;
    int failed;                 /* 1: out of memory, 2: a non-finite input or output */
} wg_job;

/* U = G g G^T in double for each (o, c), rounded once, then each position's [O, C] packed for
 * the GEMM's left operand into `dst` (16 x o_pad x c floats). Returns 0 when a weight is not
 * finite (the direct products then serve every call). */
static int transform_weights(const float *w, int64_t o, int64_t c, int64_t o_pad, int kh,
                             float *dst) {
    int np = kh == 3 ? 16 : 4;
    float *u = malloc((size_t)(np * o * c) * 4);
    if (!u) return -1;
    int finite = 1;
    for (int64_t oc = 0; oc < o; oc++)
        for (int64_t ci = 0; ci < c; ci++) {
            const float *g = w + (oc * c + ci) * 3 * kh;
            if (kh == 1) {          /* g G^T of one row of three taps */
                double g0 = g[0], g1 = g[1], g2 = g[2];
                if (!isfinite(g[0]) || !isfinite(g[1]) || !isfinite(g[2])) finite = 0;
                double row[4] = {g0, 0.5 * (g0 + g1 + g2), 0.5 * (g0 - g1 + g2), g2};
                for (int j = 0; j < 4; j++) {
                    u[(j * o + oc) * c + ci] = (float)row[j];
                    if (!isfinite((float)row[j])) finite = 0;
                }
                continue;
            }
            double gg[4][3];            /* G g: rows of the filter combined */
            for (int j = 0; j < 3; j++) {
                double g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
                if (!isfinite(g[j]) || !isfinite(g[3 + j]) || !isfinite(g[6 + j])) finite = 0;
                gg[0][j] = g0;
                gg[1][j] = 0.5 * (g0 + g1 + g2);
                gg[2][j] = 0.5 * (g0 - g1 + g2);
                gg[3][j] = g2;
            }
            for (int i = 0; i < 4; i++) {
                double a0 = gg[i][0], a1 = gg[i][1], a2 = gg[i][2];
                double row[4] = {a0, 0.5 * (a0 + a1 + a2), 0.5 * (a0 - a1 + a2), a2};
                for (int j = 0; j < 4; j++) {
                    u[((i * 4 + j) * o + oc) * c + ci] = (float)row[j];
                    if (!isfinite((float)row[j])) finite = 0;
                }
            }
        }
    if (finite)
        for (int xi = 0; xi < np; xi++)
            dlvm_sgemm_pack_a(o, c, u + xi * o * c, c, 1, dst + xi * o_pad * c);
    free(u);
    return finite;
}

/* the packed transformed weights: kept in `pack` for constant weights (NULL: none), else
 * transformed into *scratch for this call. NULL with *bad set: a non-finite weight. */
static const float *winograd_weights(dlvm_rt_packed *pack, const float *w, int64_t o, int64_t c,
                                     int64_t o_pad, int kh, float **scratch, size_t *scratch_bytes,
                                     int *bad) {
    int np = kh == 3 ? 16 : 4;
    *bad = 0;
    if (pack) {
        float *kept = __atomic_load_n(&pack->winograd, __ATOMIC_ACQUIRE);
        if (kept) return kept;
        if (__atomic_load_n(&pack->winograd_bad, __ATOMIC_ACQUIRE)) {
            *bad = 1;
            return NULL;
        }
        pthread_mutex_lock(&pack_lock);
        kept = pack->winograd;
        if (!kept && !pack->winograd_bad) {
            kept = aligned_alloc(64, ((size_t)(np * o_pad * c) * 4 + 63) / 64 * 64);
            int ok = kept ? transform_weights(w, o, c, o_pad, kh, kept) : -1;
            if (ok == 1) {
                __atomic_store_n(&pack->winograd, kept, __ATOMIC_RELEASE);
            } else {
                free(kept);
                kept = NULL;
                if (ok == 0) __atomic_store_n(&pack->winograd_bad, 1, __ATOMIC_RELEASE);
            }
        }
        *bad = pack->winograd_bad;
        pthread_mutex_unlock(&pack_lock);
        return kept;
    }
    *scratch_bytes = ((size_t)(np * o_pad * c) * 4 + 63) / 64 * 64;
    *scratch = buffer_alloc(scratch_bytes);
    if (!*scratch) return NULL;
    int ok = transform_weights(w, o, c, o_pad, kh, *scratch);
    if (ok == 1) return *scratch;
    buffer_free(*scratch, *scratch_bytes);
    *scratch = NULL;
    *bad = ok == 0;
    return NULL;
}

/* the unit's V [16][C][ts] from tile rows [r0, r1): per input channel and tile row, its four
 * input rows copied into zero-bordered scratch rows (`rows`, each `wrow` floats), then NV_LANES tiles
 * per step, the windows' columns taken even / odd from two pairs of vectors. Returns whether
 * every input read was finite. */
static int input_transform(const wg_job *j, int64_t r0, int64_t r1, int64_t ts, float *v,
                           float *rows, int64_t wrow, const float *zeros, int64_t c_lo,
                           int64_t c_hi) {
    int64_t c = j->c, h = j->h, wd = j->wd, tw = j->tw, th = j->th;
    nv_vec check = nv_splat(0.0f), zero = nv_splat(0.0f);
    for (int64_t ci = c_lo; ci < c_hi; ci++)
        for (int64_t r = r0; r < r1; r++) {
            int64_t b = r / th, ty = r % th, col0 = (r - r0) * tw;
            const float *plane = j->x + (b * c + ci) * h * wd;
            const float *src[4];
            int window_rows = j->kh == 3 ? 4 : 1;
            for (int q = 0; q < window_rows; q++) {
                int64_t iy = (j->kh == 3 ? 2 * ty : ty) + q - j->top;
                if (iy < 0 || iy >= h) {
                    src[q] = zeros;
                } else {
                    float *row = rows + q * wrow;
                    memcpy(row + j->left, plane + iy * wd, (size_t)wd * 4);
                    src[q] = row;
                }
            }
            for (int64_t tx = 0; tx < tw; tx += NV_LANES) {
                nv_vec t[4][4];
                for (int q = 0; q < window_rows; q++) {
                    const float *at = src[q] + 2 * tx;
                    nv_vec a = nv_load(at), bb = nv_load(at + NV_LANES);
                    nv_vec a2 = nv_load(at + 2), b2 = nv_load(at + 2 + NV_LANES);
                    check += a * zero + bb * zero + b2 * zero;
                    nv_vec c0 = nv_even(a, bb), c1 = nv_odd(a, bb);
                    nv_vec c2 = nv_even(a2, b2), c3 = nv_odd(a2, b2);
                    t[q][0] = c0 - c2;
                    t[q][1] = c1 + c2;
                    t[q][2] = c2 - c1;
                    t[q][3] = c1 - c3;
                }
                float *dst = v + ci * ts + col0 + tx;
                int64_t xi_stride = c * ts;
                if (j->kh == 1) {           /* V = d B of the one window row */
                    for (int k = 0; k < 4; k++) nv_store(dst + k * xi_stride, t[0][k]);
                    continue;
                }
                for (int k = 0; k < 4; k++) {
                    nv_store(dst + (0 * 4 + k) * xi_stride, t[0][k] - t[2][k]);
                    nv_store(dst + (1 * 4 + k) * xi_stride, t[1][k] + t[2][k]);
                    nv_store(dst + (2 * 4 + k) * xi_stride, t[2][k] - t[1][k]);
                    nv_store(dst + (3 * 4 + k) * xi_stride, t[1][k] - t[3][k]);
                }
            }
        }
    /* 0 * x is 0 for every finite x, NaN for an infinity or NaN */
    for (int i = 0; i < NV_LANES; i++)
        if (check[i] != 0.0f) return 0;
    return 1;
}

/* Y = A^T M A for the unit's tiles, + bias, relu, into the output (the last tile row and
 * column of an odd size keep one of their two) */
static int output_transform(const wg_job *j, int64_t r0, int64_t r1, int64_t ts, const float *m,
                            int64_t o_lo, int64_t o_hi) {
    int64_t o = j->o, tw = j->tw, th = j->th, ho = j->ho, wo = j->wo;
    nv_vec zero = nv_splat(0.0f), check = zero;
    for (int64_t oc = o_lo; oc < o_hi; oc++) {
        nv_vec bias = nv_splat(j->bias ? j->bias[oc] : 0.0f);
        for (int64_t r = r0; r < r1; r++) {
            int64_t b = r / th, ty = r % th, col0 = (r - r0) * tw;
            float *out = j->y + ((b * o + oc) * ho + (j->kh == 3 ? 2 * ty : ty)) * wo;
            for (int64_t tx = 0; tx < tw; tx += NV_LANES) {
                const float *at = m + oc * ts + col0 + tx;
                int64_t xi_stride = o * ts;
                nv_vec s0[4], s1[4];
                int window_rows = j->kh == 3 ? 4 : 1;
                for (int i = 0; i < window_rows; i++) {
                    nv_vec m0 = nv_load(at + (i * 4 + 0) * xi_stride);
                    nv_vec m1 = nv_load(at + (i * 4 + 1) * xi_stride);
                    nv_vec m2 = nv_load(at + (i * 4 + 2) * xi_stride);
                    nv_vec m3 = nv_load(at + (i * 4 + 3) * xi_stride);
                    s0[i] = m0 + m1 + m2;
                    s1[i] = m1 - m2 - m3;
                }
                nv_vec y[2][2];
                int out_rows = j->kh == 3 ? 2 : 1;
                if (j->kh == 3) {
                    y[0][0] = s0[0] + s0[1] + s0[2] + bias;
                    y[0][1] = s1[0] + s1[1] + s1[2] + bias;
                    y[1][0] = s0[1] - s0[2] - s0[3] + bias;
                    y[1][1] = s1[1] - s1[2] - s1[3] + bias;
                } else {                    /* Y = M A of the one row */
                    y[0][0] = s0[0] + bias;
                    y[0][1] = s1[0] + bias;
                }
                {                   /* 0 * y: NaN for an overflow (the direct sums may be finite) */
                    int64_t live = tw - tx < NV_LANES ? tw - tx : NV_LANES;
                    for (int q = 0; q < out_rows; q++)
                        for (int k = 0; k < 2; k++)
                            check += live == NV_LANES ? y[q][k] * zero : nv_first(y[q][k] * zero, live);
                }
                if (j->relu)        /* y < 0 -> 0; NaN (never < 0) stays NaN */
                    for (int q = 0; q < out_rows; q++)
                        for (int k = 0; k < 2; k++) y[q][k] = nv_relu(y[q][k]);
                int64_t cols = wo - 2 * tx;         /* outputs left in the row from 2 tx */
                for (int q = 0; q < out_rows && (j->kh == 3 ? 2 * ty : ty) + q < ho; q++) {
                    nv_vec lo = nv_zip(y[q][0], y[q][1], 0), hi = nv_zip(y[q][0], y[q][1], 1);
                    float *row = out + q * wo + 2 * tx;
                    nv_store_part(row, lo, cols);
                    if (cols > NV_LANES) nv_store_part(row + NV_LANES, hi, cols - NV_LANES);
                }
            }
        }
    }
    for (int i = 0; i < NV_LANES; i++)
        if (check[i] != 0.0f) return 0;
    return 1;
}

/* the floats of a unit's V (or M, with o for c): 16 positions of rows `ts` long; tiles end up
 * to 15 columns before a row's end (whole-vector stores of the last step) */
static int64_t unit_stride(const wg_job *j) { return (j->per_unit * j->tw + 15 + 15) / 16 * 16; }

static void winograd_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    wg_job *j = arg;
    int64_t ts = unit_stride(j), c = j->c, o = j->o;
    int64_t wrow = 2 * j->tw + 2 + 32;      /* a window row's vectors read up to 2 tw + 33 */
    size_t v_bytes = (size_t)(j->np * c * ts + 16) * 4, m_bytes = (size_t)(j->np * o * ts + 16) * 4;
    size_t rows_bytes = (size_t)(5 * wrow) * 4, tbl_bytes = (size_t)c * 8;
    float *v = buffer_alloc(&v_bytes), *m = buffer_alloc(&m_bytes);
    float *rows = buffer_alloc(&rows_bytes);
    int64_t *tbl = buffer_alloc(&tbl_bytes);
    if (v && m && rows && tbl) {
        memset(rows, 0, (size_t)(5 * wrow) * 4);  /* borders stay zero; the fifth row: all zeros */
        for (int64_t k = 0; k < c; k++) tbl[k] = k * ts;
        for (int64_t unit = lo; unit < hi; unit++) {
            int64_t r0 = unit * j->per_unit;
            int64_t r1 = r0 + j->per_unit < j->rows ? r0 + j->per_unit : j->rows;
            if (!input_transform(j, r0, r1, ts, v, rows, wrow, rows + 4 * wrow, 0, c)) {
                __atomic_store_n(&j->failed, 2, __ATOMIC_RELAXED);
                break;
            }
            int64_t tiles = (r1 - r0) * j->tw;
            for (int xi = 0; xi < j->np; xi++) {
                gemm_call g = {o, tiles, c, NULL, v + xi * c * ts, m + xi * o * ts, 1, 0, 0, NULL,
                               j->u + xi * j->o_pad * c, j->o_pad, NULL, 0, tbl, ts, 0};
                gemm_task(&g, 0, (o + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR, 0);
                if (g.failed) {
                    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
                    goto done;
                }
            }
            if (!output_transform(j, r0, r1, ts, m, 0, o)) {
                __atomic_store_n(&j->failed, 2, __ATOMIC_RELAXED);
                break;
            }
        }
    } else {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    }
done:
    if (v) buffer_free(v, v_bytes);
    if (m) buffer_free(m, m_bytes);
    if (rows) buffer_free(rows, rows_bytes);
    if (tbl) buffer_free(tbl, tbl_bytes);
}

/* Few tiles (a 14x14 map at batch 1): units of whole tile rows would give each thread a
 * product of under 48 columns, where the register tile is one or two vectors wide and its
 * broadcasts, not its multiplies, bound it. Then all the tiles form one unit whose three steps
 * are split across the pool in turn: input channels, the 16 products, output channels. */
typedef struct {
    wg_job *j;
    float *v, *m;
    int64_t ts, wrow;
    const int64_t *tbl;
} wg_phases;

static void phase_input_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    wg_phases *ph = arg;
    size_t bytes = (size_t)(5 * ph->wrow) * 4;
    float *rows = buffer_alloc(&bytes);
    if (!rows) {
        __atomic_store_n(&ph->j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    memset(rows, 0, (size_t)(5 * ph->wrow) * 4);
    if (!input_transform(ph->j, 0, ph->j->rows, ph->ts, ph->v, rows, ph->wrow,
                         rows + 4 * ph->wrow, lo, hi))
        __atomic_store_n(&ph->j->failed, 2, __ATOMIC_RELAXED);
    buffer_free(rows, bytes);
}

static void phase_product_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    wg_phases *ph = arg;
    const wg_job *j = ph->j;
    int64_t c = j->c, o = j->o, ts = ph->ts;
    for (int64_t xi = lo; xi < hi; xi++) {
        gemm_call g = {o, j->rows * j->tw, c, NULL, ph->v + xi * c * ts, ph->m + xi * o * ts, 1, 0,
                       0, NULL, j->u + xi * j->o_pad * c, j->o_pad, NULL, 0, ph->tbl, ts, 0};
        gemm_task(&g, 0, (o + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR, 0);
        if (g.failed) __atomic_store_n(&ph->j->failed, 1, __ATOMIC_RELAXED);
    }
}

static void phase_output_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    wg_phases *ph = arg;
    if (!output_transform(ph->j, 0, ph->j->rows, ph->ts, ph->m, lo, hi))
        __atomic_store_n(&ph->j->failed, 2, __ATOMIC_RELAXED);
}

/* at most this many tiles in one phased unit: its V and M stay within a few MB (a 7x7 map at
 * batch 32 in units of 44 tiles: phased, its 512 tiles' V and M took 36 MB of memory traffic,
 * 1.5x the units' time) */
#define PHASED_TILES 256

static void winograd_phases(wg_job *j, int threads) {
    j->per_unit = j->rows;
    int64_t ts = unit_stride(j), c = j->c, o = j->o, wrow = 2 * j->tw + 2 + 32;
    size_t v_bytes = (size_t)(j->np * c * ts + 16) * 4, m_bytes = (size_t)(j->np * o * ts + 16) * 4;
    size_t tbl_bytes = (size_t)c * 8;
    float *v = buffer_alloc(&v_bytes), *m = buffer_alloc(&m_bytes);
    int64_t *tbl = buffer_alloc(&tbl_bytes);
    if (v && m && tbl) {
        for (int64_t k = 0; k < c; k++) tbl[k] = k * ts;
        wg_phases ph = {j, v, m, ts, wrow, tbl};
        dlvm_rt_parallel(phase_input_task, &ph, c, threads);
        if (!j->failed) dlvm_rt_parallel(phase_product_task, &ph, j->np, threads);
        if (!j->failed) dlvm_rt_parallel(phase_output_task, &ph, o, threads);
    } else {
        j->failed = 1;
    }
    if (v) buffer_free(v, v_bytes);
    if (m) buffer_free(m, m_bytes);
    if (tbl) buffer_free(tbl, tbl_bytes);
}

/* Tiles per unit: the unit's V and M (16 x (C + O) floats a tile) within about 1.5 MB, at
 * least 32 tiles (the products' columns) and at most 512. */
static int64_t unit_tiles(int64_t c, int64_t o, int np) {
    int64_t t = (3 * 512 * 1024) / (4 * np * (c + o));
    return t < 32 ? 32 : t > 512 ? 512 : t;
}

/* tile rows per unit: about unit_tiles each, and at least one unit per thread */
static int64_t rows_per_unit(int64_t rows, int64_t tw, int64_t c, int64_t o, int np, int threads) {
    int64_t want = (rows * tw + unit_tiles(c, o, np) - 1) / unit_tiles(c, o, np);
    if (want < threads) want = threads;
    want = (want + threads - 1) / threads * threads;    /* whole rounds of the pool */
    int64_t per = (rows + want - 1) / want;
    return per < 1 ? 1 : per;
}

HIDDEN int winograd_pays(int64_t n, int64_t c, int64_t o, int64_t ho, int64_t wo, int64_t kh) {
    const char *env = getenv("DLVM_WINOGRAD");
    if (env && *env) return env[0] != '0';
    int64_t tw = (wo + 1) / 2, tiles = n * (kh == 3 ? (ho + 1) / 2 : ho) * tw;
    /* products of few columns read all of U, 16/9 of the weights, for few multiplies each,
     * with a register tile one or two vectors wide: at least 32 tiles, or 16 (a 7x7 map at
     * batch 1) with 128 channels or more (ResNet-18's last stage at batch 1: 0.76-0.91x the
     * direct time on 1 and 2 threads) */
    if (tiles < 16 || (tiles < 32 && c * o < 128 * 128)) return 0;
    /* 1x3 filters (a conv1d's): 4 multiplies per 2 outputs instead of 6, which pays only with
     * wide products (bench/README.md: 0.72-0.89x the direct time at 128 and 256 channels,
     * 0.94-1.2x at 40 to 64) */
    if (kh == 1 && !(c >= 128 && o >= 128 && tw >= 16)) return 0;
    /* units are whole tile rows: rows so wide that one unit holds over 4 units' worth of tiles
     * (a conv1d over 4096 samples at batch 1) would size V and M past the caches, and fewer
     * units than threads beyond what the phased form takes would leave threads idle */
    int64_t th = kh == 3 ? (ho + 1) / 2 : ho, rows = n * th;
    int np = kh == 3 ? 16 : 4, threads = dlvm_rt_threads();
    int64_t per = rows_per_unit(rows, tw, c, o, np, threads);
    if (per * tw > 4 * unit_tiles(c, o, np)) return 0;
    if (threads > 1 && (rows + per - 1) / per < threads && tiles > PHASED_TILES) return 0;
    if (kh == 1) return 1;
    /* The transforms cost per tile (C + O) vector steps over a tile row's 16 lanes, of which
     * tw are used; the products C x O multiply-adds. Measured against the direct products
     * (bench/README.md, one library call, 1 and 2 threads): 32 to 128 channels from 32x32
     * 0.54-0.9x the time; at 16x16, batch 1, 2 threads 0.67-0.93x from 64 x 64 channels but
     * 1.22-1.28x at 32 x 32 and 32 x 64 (probe17's DarkNet); at 8x8 and 12x12 maps 1.07-2.2x
     * below 128 x 128 channels (0.82-0.95x at 128); 16 and 24 channels 1.1-2.1x on small maps,
     * 0.65-0.93x from 48x48. */
#if NV_LANES < 16
    /* Without AVX-512 the direct products' register tiles are half as wide (16 columns, two
     * AVX vectors) and their packing costs more; Winograd's products keep their width. On Zen 3
     * (bench/README.md, 1 and 2 threads, batch 1 and 32) Winograd took 0.68-0.95x the direct
     * time from 64 x 64 channels at 8x8 and 12x12 maps, and at 32 channels from rows of 8 tiles
     * (0.73-0.95x at 16x16 and 24x24); 32 x 32 and 32 x 64 channels on 8x8 to 12x12 maps went
     * either way (0.78-1.14x). Maps narrower than 8 (tile rows of 2 or 3 of the transforms'
     * 16 lanes) are left to the direct products: 64 x 64 channels at 4x4, batch 32, took 1.7x
     * onnxruntime's time against 1.0x direct; 128 x 128 1.17x against 1.11x. */
    if (c >= 32 && o >= 32)
        return tw >= 8 || (tw >= 4 && c * o >= 64 * 64);
#else
    if (c >= 32 && o >= 32)
        return tw >= 16 || (tw >= 8 && c * o >= 64 * 64) || c * o >= 128 * 128;
#endif
    return c >= 16 && o >= 16 && tw >= 24;
}

HIDDEN int conv2d_winograd(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *w, const float *bias,
                           const int64_t *p, int relu, dlvm_rt_packed *pack, dlvm_val *out) {
    (void)ctx;              /* every failure declines: the direct products report their own */
    int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3];
    int64_t o = w->shape[0], ho = out->shape[2], wo = out->shape[3];
    int64_t o_pad = (o + DLVM_GEMM_MR - 1) / DLVM_GEMM_MR * DLVM_GEMM_MR;
    int kh = (int)w->shape[2], np = kh == 3 ? 16 : 4;
    float *scratch = NULL;
    size_t scratch_bytes = 0;
    int bad = 0;
    const float *u = winograd_weights(pack, w->data, o, c, o_pad, kh, &scratch, &scratch_bytes,
                                      &bad);
    if (!u)                 /* a non-finite weight, or no memory: the direct products try */
        return WINOGRAD_DECLINED;
    int64_t th = kh == 3 ? (ho + 1) / 2 : ho, tw = (wo + 1) / 2;
    int threads = dlvm_rt_threads();
    wg_job j = {x->data, out->data, u, bias, c, h, wd, o, o_pad, ho, wo, th, tw, p[0], p[1],
                n * th, rows_per_unit(n * th, tw, c, o, np, threads), kh, np, relu, 0};
    if (threads > 1 && j.per_unit * tw < 48 && j.rows * tw <= PHASED_TILES) {
        winograd_phases(&j, threads);
    } else {
        int64_t units = (j.rows + j.per_unit - 1) / j.per_unit;
        dlvm_rt_parallel(winograd_task, &j, units, threads);
    }
    if (scratch) buffer_free(scratch, scratch_bytes);
    /* a non-finite value (2) or no memory for the scratch (1): the direct products run the
     * call (they need less memory, and report it if there is none) */
    return j.failed ? WINOGRAD_DECLINED : 0;
}
