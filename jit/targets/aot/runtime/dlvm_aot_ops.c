/* dlvm AOT runtime: movement, reductions, top-k, concat, gathers, resize, grid_sample and
 * scatters. */
#include "dlvm_aot_internal.h"

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
                const float *from[16];
                float *to[16];
                for (int i = 0; i < 16; i++) from[i] = s + (b + i) * step, to[i] = d + i * inner + b;
                transpose16_mem(from, to);
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
/* n items of `fill` (item bytes each) at dst */
static void fill_items(unsigned char *dst, const unsigned char *fill, size_t item, int64_t n,
                       int zero) {
    if (n <= 0) return;
    if (zero || item == 1) {
        memset(dst, zero ? 0 : fill[0], (size_t)n * item);
        return;
    }
    switch (item) {
    case 2: { uint16_t v; memcpy(&v, fill, 2); for (int64_t i = 0; i < n; i++) memcpy(dst + 2 * i, &v, 2); break; }
    case 4: { uint32_t v; memcpy(&v, fill, 4); for (int64_t i = 0; i < n; i++) memcpy(dst + 4 * i, &v, 4); break; }
    default: { uint64_t v; memcpy(&v, fill, 8); for (int64_t i = 0; i < n; i++) memcpy(dst + 8 * i, &v, 8); break; }
    }
}

typedef struct {
    const unsigned char *x;
    unsigned char *y;
    size_t item;
    unsigned char fill[8];
    int rank;                       /* the axes up to the last padded one (rows: its extent) */
    int64_t in[DLVM_MAX_RANK], out[DLVM_MAX_RANK], begin[DLVM_MAX_RANK], src[DLVM_MAX_RANK];
    int64_t rows;
    int zero;                       /* the fill is all zero bytes */
} pad_job;

/* output rows [lo, hi): the fill where they lie outside the input, else its row's span */
static void pad_rows_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    const pad_job *j = arg;
    int last = j->rank - 1;
    size_t item = j->item;
    int64_t row = j->out[last], b = j->begin[last];
    int64_t first = b > 0 ? b : 0, end = j->in[last] + b < row ? j->in[last] + b : row;
    int64_t idx[DLVM_MAX_RANK] = {0}, rest = lo;
    for (int d = last - 1; d >= 0; d--) {          /* the index of row lo */
        idx[d] = rest % j->out[d];
        rest /= j->out[d];
    }
    for (int64_t r = lo; r < hi; r++) {
        unsigned char *yr = j->y + (size_t)(r * row) * item;
        int64_t off = 0, inside = end > first;
        for (int d = 0; d < last; d++) {
            int64_t i = idx[d] - j->begin[d];
            if (i < 0 || i >= j->in[d]) inside = 0;
            off += i * j->src[d];
        }
        if (!inside) {
            fill_items(yr, j->fill, item, row, j->zero);
        } else {
            fill_items(yr, j->fill, item, first, j->zero);
            memcpy(yr + (size_t)first * item, j->x + (size_t)(off + first - b) * item,
                   (size_t)(end - first) * item);
            fill_items(yr + (size_t)end * item, j->fill, item, row - end, j->zero);
        }
        for (int d = last - 1; d >= 0; d--) {
            if (++idx[d] < j->out[d]) break;
            idx[d] = 0;
        }
    }
}

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
    if (rank == 0) {
        if (total) memcpy(tmp.data, x->data, item);
        dlvm_rt_release(out);
        *out = tmp;
        return 0;
    }
    /* trailing axes without pads join the last padded one into longer rows: a channel pad of
     * NCHW copies whole planes (a libc call per element and per row of 64 was 1.8x onnxruntime's
     * time for a BlazeFace block) */
    pad_job j;
    memset(&j, 0, sizeof j);
    j.x = x->data;
    j.y = tmp.data;
    j.item = item;
    memcpy(j.fill, fill, sizeof fill);
    int last = rank - 1;
    while (last > 0 && begins[last] == 0 && ends[last] == 0) last--;
    int64_t inner = 1;
    for (int d = last + 1; d < rank; d++) inner *= x->shape[d];
    j.rank = last + 1;
    for (int d = 0; d <= last; d++) {
        j.in[d] = x->shape[d];
        j.out[d] = shape[d];
        j.begin[d] = begins[d];
    }
    j.in[last] *= inner;
    j.out[last] *= inner;
    j.begin[last] *= inner;
    contiguous_strides(j.rank, j.in, j.src);
    j.zero = 1;
    for (size_t b = 0; b < item; b++) j.zero &= fill[b] == 0;
    int64_t row = j.out[last];
    j.rows = row ? total / row : 0;
    /* large pads split their rows across the pool (a batch's worth at batch 32) */
    int64_t parts = (int64_t)((size_t)total * item >> 20) + 1;
    if (j.rows > 0) dlvm_rt_parallel(pad_rows_task, &j, j.rows, parts);
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

/* A reduction's result shape (keepdims or not: its rank returned), the output stride of each of
 * x's axes (0 for a reduced one), the elements summed into each result and the results */
static int reduced_shape(const dlvm_val *x, uint32_t mask, int keepdims, int64_t *shape,
                         int64_t *ostride, int64_t *count, int64_t *n_out) {
    int r = 0;
    *count = 1;
    *n_out = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        int red = (mask >> d) & 1;
        ostride[d] = red ? 0 : *n_out;
        if (red) *count *= x->shape[d];
        else *n_out *= x->shape[d];
    }
    for (int d = 0; d < x->rank; d++)
        if (!((mask >> d) & 1)) shape[r++] = x->shape[d];
        else if (keepdims) shape[r++] = 1;
    return r;
}

/* the next index of x in memory order, and the output offset `o` that follows it */
static inline int64_t next_output(int rank, const int64_t *xshape, const int64_t *ostride,
                                  int64_t *idx, int64_t o) {
    for (int d = rank - 1; d >= 0; d--) {
        o += ostride[d];
        if (++idx[d] < xshape[d]) break;
        o -= ostride[d] * idx[d];
        idx[d] = 0;
    }
    return o;
}

static int reduce_integers(dlvm_ctx *ctx, const dlvm_val *x, uint32_t mask, int kind,
                           int keepdims, dlvm_val *out);

/* A reduction over any axes (the region kernels fold only trailing ones): kind 0 sum, 1 mean,
 * 2 max, 3 min, 4 prod; `mask` has bit d set for a reduced axis. Floats: sums accumulate in
 * double; i32 / i64 but for a mean: reduce_integers. An empty max / min is left to the VM (a
 * guard), which traps as the op defines. */
HIDDEN int dlvm_rt_reduce(dlvm_ctx *ctx, const dlvm_val *x, uint32_t mask, int kind, int keepdims,
                          dlvm_val *out) {
    if ((x->dtype == DT_I32 || x->dtype == DT_I64) && kind != 1)
        return reduce_integers(ctx, x, mask, kind, keepdims, out);
    if (x->dtype != DT_F32 && x->dtype != DT_F64)
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "a reduction of %s over these axes is not "
                            "compiled ahead of time", dtype_name(x->dtype));
    int rank = x->rank;
    int64_t shape[DLVM_MAX_RANK], ostride[DLVM_MAX_RANK], count, n_out;
    int r = reduced_shape(x, mask, keepdims, shape, ostride, &count, &n_out);
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
        o = next_output(rank, x->shape, ostride, idx, o);
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

/* i32 / i64 sums, products, maxima and minima over any axes, exact: sums and products wrap in
 * the operand's width as the reference's (NumPy's with the operand's dtype), computed modulo
 * 2^64 and truncated; the i64 length of a run-time-sized gather's rows summed over a leading
 * axis ran on the VM. One pass in memory order, each element added to its output's slot. */
static int reduce_integers(dlvm_ctx *ctx, const dlvm_val *x, uint32_t mask, int kind,
                           int keepdims, dlvm_val *out) {
    int rank = x->rank, i32 = x->dtype == DT_I32;
    int64_t shape[DLVM_MAX_RANK], ostride[DLVM_MAX_RANK], count, n_out;
    int r = reduced_shape(x, mask, keepdims, shape, ostride, &count, &n_out);
    if (count == 0 && (kind == 2 || kind == 3))
        return dlvm_rt_fail(ctx, DLVM_RT_ERR_GUARD, "a maximum or minimum over an empty axis");
    size_t bytes = (size_t)(n_out ? n_out : 1) * sizeof(uint64_t);
    uint64_t *acc = buffer_alloc(&bytes);
    if (!acc) return dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (reduction)");
    uint64_t init = kind == 4 ? 1u : kind == 2 ? (uint64_t)INT64_MIN
                  : kind == 3 ? (uint64_t)INT64_MAX : 0u;
    for (int64_t i = 0; i < n_out; i++) acc[i] = init;
    int64_t total = dlvm_rt_numel(x), idx[DLVM_MAX_RANK] = {0}, o = 0;
    for (int64_t i = 0; i < total; i++) {
        int64_t v = i32 ? ((const int32_t *)x->data)[i] : ((const int64_t *)x->data)[i];
        uint64_t *a = &acc[o];
        switch (kind) {
        case 2: if (v > (int64_t)*a) *a = (uint64_t)v; break;
        case 3: if (v < (int64_t)*a) *a = (uint64_t)v; break;
        case 4: *a *= (uint64_t)v; break;
        default: *a += (uint64_t)v;
        }
        o = next_output(rank, x->shape, ostride, idx, o);
    }
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, r, shape)) {
        buffer_free(acc, bytes);
        return 1;
    }
    for (int64_t i = 0; i < n_out; i++) {
        if (i32) ((int32_t *)tmp.data)[i] = (int32_t)(uint32_t)acc[i];
        else ((int64_t *)tmp.data)[i] = (int64_t)acc[i];
    }
    buffer_free(acc, bytes);
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

#if defined(__AVX2__) && !defined(__AVX512F__)
#define RESAMPLE_WINDOWS
#endif

static void resample_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    resample_job *j = arg;
    int64_t n0 = j->n0, o0 = j->o0, n1 = j->n1, o1 = j->o1, k0 = j->k0, k1 = j->k1;
#ifdef GATHER_BY_SHUFFLE
    /* rows of at most 32 columns sit in two vector registers: each tap's 16 columns are one
     * two-source permute (as gather_by_shuffle), times that tap's weights */
    int64_t nv = (o1 + 15) / 16;
    int shuffle = n1 <= 32;
#endif
#ifdef RESAMPLE_WINDOWS
    /* every 8 output columns take their taps from one window of 16 input columns (an
     * upsampling's, or a downsampling's by under 2x): two loads and, per tap, two permutes and
     * a blend (no gather instruction: Zen 3's ran at the scalar loop's one element a cycle) */
    int64_t nw = (o1 + 7) / 8;
    int windows = 1;
    for (int64_t v = 0; v < nw && windows; v++) {
        int64_t lo_at = n1, hi_at = 0;
        for (int64_t k = 0; k < k1; k++)
            for (int64_t c = v * 8; c < o1 && c < v * 8 + 8; c++) {
                int64_t at = j->i1[k * o1 + c];
                lo_at = at < lo_at ? at : lo_at;
                hi_at = at > hi_at ? at : hi_at;
            }
        windows = hi_at - lo_at < 16;
    }
    size_t bytes = (size_t)(n1 + 16) * 4 + (windows ? (size_t)(nw + 2 * k1 * nw * 8) * 4 : 0) + 64;
#elif defined(GATHER_BY_SHUFFLE)
    size_t bytes = (size_t)(n1 + 16) * 4 + (shuffle ? (size_t)(2 * k1 * nv) * 64 : 0) + 64;
#else
    size_t bytes = (size_t)(n1 + 16) * 4 + 64;
#endif
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
#ifdef RESAMPLE_WINDOWS
    /* per window: its first column (within the row: a window ending past it starts earlier,
     * its taps' offsets still under 16), then each tap's offsets and weights, 8 columns each */
    int32_t *base = NULL, *offs = NULL;
    float *wts8 = NULL;
    if (windows) {
        base = (int32_t *)(tmp + n1 + 16);
        offs = base + nw;
        wts8 = (float *)(offs + k1 * nw * 8);
        for (int64_t v = 0; v < nw; v++) {
            int64_t lo_at = n1;
            for (int64_t k = 0; k < k1; k++)
                for (int64_t c = v * 8; c < o1 && c < v * 8 + 8; c++)
                    lo_at = j->i1[k * o1 + c] < lo_at ? j->i1[k * o1 + c] : lo_at;
            if (n1 < 16) lo_at = 0;
            else if (lo_at > n1 - 16) lo_at = n1 - 16;
            base[v] = (int32_t)lo_at;
            for (int64_t k = 0; k < k1; k++)
                for (int64_t l = 0; l < 8; l++) {
                    int64_t c = v * 8 + l;
                    offs[(k * nw + v) * 8 + l] = c < o1 ? (int32_t)(j->i1[k * o1 + c] - lo_at) : 0;
                    wts8[(k * nw + v) * 8 + l] = c < o1 ? j->w1[k * o1 + c] : 0.0f;
                }
        }
    }
    /* a row under 16 columns: its two registers loaded once, masked (no read past it) */
    static const int32_t lanes_on[24] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         -1, -1};
    int64_t on_lo = n1 < 8 ? n1 : 8, on_hi = n1 < 8 ? 0 : n1 < 16 ? n1 - 8 : 8;
    __m256i row_lo = _mm256_loadu_si256((const __m256i *)(lanes_on + 16 - on_lo));
    __m256i row_hi = _mm256_loadu_si256((const __m256i *)(lanes_on + 16 - on_hi));
    __m256i last = _mm256_loadu_si256((const __m256i *)(lanes_on + 16 - (o1 - (nw - 1) * 8)));
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
#ifdef RESAMPLE_WINDOWS
        if (windows) {
            __m256 lo = _mm256_setzero_ps(), hi = lo;
            if (n1 < 16) {
                lo = _mm256_maskload_ps(src, row_lo);
                hi = _mm256_maskload_ps(src + 8, row_hi);
            }
            for (int64_t v = 0; v < nw; v++) {
                if (n1 >= 16) {
                    lo = _mm256_loadu_ps(src + base[v]);
                    hi = _mm256_loadu_ps(src + base[v] + 8);
                }
                __m256 acc = _mm256_setzero_ps();
                for (int64_t k = 0; k < k1; k++) {
                    __m256i at = _mm256_loadu_si256((const __m256i *)(offs + (k * nw + v) * 8));
                    /* offsets 8-15 (bit 3, shifted to the sign) from the second register */
                    __m256 t = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, at),
                                                _mm256_permutevar8x32_ps(hi, at),
                                                _mm256_castsi256_ps(_mm256_slli_epi32(at, 28)));
                    if (ones) {
                        acc = t;
                        break;
                    }
                    __m256 w = _mm256_loadu_ps(wts8 + (k * nw + v) * 8);
                    acc = k ? _mm256_add_ps(acc, _mm256_mul_ps(t, w)) : _mm256_mul_ps(t, w);
                }
                if (v + 1 < nw) _mm256_storeu_ps(yr + v * 8, acc);
                else _mm256_maskstore_ps(yr + v * 8, last, acc);
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
    if (n == 0) return 0;
    /* row by row of the indices' last axis: the leading coordinates (and their share of the
     * offset) change once a row, the inner loop reads indices of one dtype. The walk with a
     * coordinate update per element was a third of a DeBERTa's time at batch 32 (four gathers
     * of relative positions, [32, 4, 32, 32] each). */
    int last = rank - 1;
    int64_t width = rank ? idx->shape[last] : 1, rows = n / width;
    int64_t step = rank ? xs[axis] : 0;     /* along the axis: the index's share */
    const int64_t *i64 = idx->dtype == DT_I32 ? NULL : (const int64_t *)idx->data;
    const int32_t *i32 = idx->dtype == DT_I32 ? (const int32_t *)idx->data : NULL;
    for (int64_t row = 0; row < rows; row++) {
        int64_t base = 0;
        for (int d = 0; d < last; d++)
            if (d != axis) base += pos[d] * xs[d];
        int64_t k0 = row * width;
        for (int64_t k = 0; k < width; k++) {
            int64_t j = i64 ? i64[k0 + k] : i32[k0 + k];
            if (j < -size || j >= size)
                return dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "%s index %lld is out of range for "
                                    "axis %lld of size %lld", op, (long long)j, (long long)axis,
                                    (long long)size);
            if (j < 0) j += size;
            /* the last coordinate is k unless the axis is the last one (stride 1 either way) */
            offsets[k0 + k] = base + j * step + (axis == last ? 0 : k);
        }
        for (int d = last - 1; d >= 0; d--) {      /* the next row, row-major */
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

/* the checked offsets of an elementwise index tensor (NULL with ctx's status set), from this
 * thread's buffer cache (*bytes: what to give back with buffer_free): a megabyte of offsets
 * malloc'd and freed every call was mapped afresh each time */
static int64_t *checked_offsets(dlvm_ctx *ctx, const char *op, const dlvm_val *x,
                                const dlvm_val *idx, int64_t axis, size_t *bytes) {
    if (check_elementwise_index(ctx, op, x, idx, axis)) return NULL;
    int64_t n = dlvm_rt_numel(idx);
    *bytes = (size_t)(n ? n : 1) * sizeof(int64_t);
    int64_t *offsets = buffer_alloc(bytes);
    if (!offsets) {
        dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "out of memory (%s)", op);
        return NULL;
    }
    if (element_offsets(ctx, op, x, idx, axis, offsets)) {
        buffer_free(offsets, *bytes);
        return NULL;
    }
    return offsets;
}

HIDDEN int dlvm_rt_gather_elements(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx,
                                   int64_t axis, dlvm_val *out) {
    if (axis < 0) axis += x->rank;
    int64_t n = dlvm_rt_numel(idx);
    size_t offsets_bytes = 0;
    int64_t *offsets = checked_offsets(ctx, "gather_elements", x, idx, axis, &offsets_bytes);
    if (!offsets) return 1;
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, idx->rank, idx->shape)) {
        buffer_free(offsets, offsets_bytes);
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
    buffer_free(offsets, offsets_bytes);
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
    size_t offsets_bytes = 0;
    int64_t *offsets = checked_offsets(ctx, "scatter_elements", x, idx, axis, &offsets_bytes);
    if (!offsets) return 1;
    dlvm_val tmp = {0};
    if (dlvm_rt_alloc(ctx, &tmp, x->dtype, x->rank, x->shape)) {
        buffer_free(offsets, offsets_bytes);
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
    buffer_free(offsets, offsets_bytes);
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

