/* dlvm AOT runtime: what generated programs use inside the library (not part of the public ABI).
 *
 * Values are tensors with a shape and a reference-counted buffer: registers that `mov` a value
 * share its buffer; constants point into the library's read-only data (no buffer, never freed).
 * Every operation reports failure through the context's status and returns nonzero; the
 * generated code then releases what it holds and returns the status code to the caller.
 */
#ifndef DLVM_AOT_RT_H
#define DLVM_AOT_RT_H

#include <stddef.h>
#include <stdint.h>

#define DLVM_MAX_RANK 8

/* error codes: the same as the public header's */
enum { DLVM_RT_OK = 0, DLVM_RT_ERR_ARGUMENT = 1, DLVM_RT_ERR_TRAP = 2, DLVM_RT_ERR_RESOURCE = 3,
       DLVM_RT_ERR_GUARD = 4 };

/* element types: codes are dlvm's bytecode dtype codes (isa/dtypes.py) */
enum { DT_BOOL = 0, DT_I8 = 1, DT_I16 = 2, DT_I32 = 3, DT_I64 = 4, DT_U8 = 5, DT_F16 = 6,
       DT_F32 = 7, DT_F64 = 8, DT_U16 = 9, DT_U32 = 10, DT_U64 = 11 };

typedef struct dlvm_rt_buf {
    int64_t refs;
    void *data;
    size_t bytes;              /* the allocation's size (a buffer-cache class) */
    size_t used;               /* bytes from data's start that values reach (concat appends after) */
} dlvm_rt_buf;

typedef struct dlvm_val {
    dlvm_rt_buf *buf;          /* NULL: not owned (a constant, or a caller's input) */
    void *data;
    int64_t shape[DLVM_MAX_RANK];
    int32_t rank;
    int32_t dtype;
} dlvm_val;

typedef struct dlvm_rt_status {
    int32_t code;
    char message[480];
} dlvm_rt_status;

typedef struct dlvm_ctx {
    dlvm_rt_status *status;
    int depth;
    int64_t steps;             /* blocks this call may still run (dlvm_rt_max_steps) */
    const char *where;         /* "@func block b instr i: op" of the running instruction */
} dlvm_ctx;

/* a compiled region kernel and what the runtime needs to call it (see region.c's comment) */
typedef int32_t (*dlvm_kernel_fn)(int64_t start, int64_t stop, const int64_t *dims, void *scratch, ...);

typedef struct dlvm_rt_kernel {
    const char *name;
    void *fn;                  /* the kernel: i32 (i64 start, i64 stop, i64* dims, void* scratch, in..., out...) */
    int32_t n_in, n_out, n_nodes;
    int32_t domain_rank;       /* n: rank of the broadcast domain before merging */
    int32_t inner;             /* m: trailing domain axes every reduction folds */
    int32_t n_axes;            /* compiled (merged) axes */
    int32_t outer;             /* of which outer */
    const int32_t *axis_groups;   /* n_axes x (1 + DLVM_MAX_RANK): count, then domain axes */
    const uint8_t *patterns;      /* (n_in + n_out) x n_axes: varies along the axis */
    const int32_t *nodes;         /* n_nodes x 4: kind, a0, a1, a2 (see NODE_*) */
    const int32_t *out_nodes;     /* n_out */
    const int32_t *out_dtypes;    /* n_out */
    int32_t slots;                /* scratch rows (of f64) per chunk */
    double work_per_element;      /* for the thread split */
} dlvm_rt_kernel;

/* NODE_ROW: an elementwise node over keepdims=false reductions' values (one per row) */
enum { NODE_LOAD = 0, NODE_CONST = 1, NODE_REDUCE_KEEP = 2, NODE_REDUCE_DROP = 3, NODE_OTHER = 4,
       NODE_ROW = 5 };

/* values */
int dlvm_rt_alloc(dlvm_ctx *ctx, dlvm_val *v, int32_t dtype, int32_t rank, const int64_t *shape);
void dlvm_rt_release(dlvm_val *v);
void dlvm_rt_allocation_counts(int64_t *out);
int64_t dlvm_rt_pool_solo_jobs(void);
void dlvm_rt_note_result(void);
void *dlvm_rt_take_buffer(dlvm_val *v);
void dlvm_rt_assign(dlvm_val *dst, const dlvm_val *src);
void dlvm_rt_const(dlvm_val *v, const void *data, int32_t dtype, int32_t rank, const int64_t *shape);
int64_t dlvm_rt_numel(const dlvm_val *v);
size_t dlvm_rt_itemsize(int32_t dtype);
int dlvm_rt_fail(dlvm_ctx *ctx, int32_t code, const char *fmt, ...);
int dlvm_rt_fill(dlvm_ctx *ctx, dlvm_val *v, int32_t dtype, int32_t rank, const int64_t *shape,
                 double value, int64_t ivalue);
int dlvm_rt_iota(dlvm_ctx *ctx, dlvm_val *v, int32_t dtype, int32_t rank, const int64_t *shape,
                 int32_t axis);
int dlvm_rt_truth(const dlvm_val *v);

/* entry: bind named dims and check a caller's tensor against its declared type */
int dlvm_rt_bind(dlvm_ctx *ctx, const char *param, const void *data, const int64_t *shape,
                 int32_t rank, int32_t dtype, int32_t want_dtype, int32_t want_rank,
                 const int64_t *want, const int32_t *named, int64_t *dims, dlvm_val *out);
int dlvm_rt_check_result(dlvm_ctx *ctx, int index, const dlvm_val *v, int32_t want_dtype,
                         int32_t want_rank, const int64_t *want, const int32_t *named,
                         int64_t *dims);

/* compiled regions and heads */
int dlvm_rt_region(dlvm_ctx *ctx, const dlvm_rt_kernel *k, dlvm_val *const *ins, dlvm_val *outs);
int dlvm_rt_region_any(dlvm_ctx *ctx, const dlvm_rt_kernel *const *variants, int n,
                       dlvm_val *const *ins, dlvm_val *outs);
int dlvm_rt_matmul(dlvm_ctx *ctx, const dlvm_val *a, const dlvm_val *b, dlvm_val *out);

/* A constant right operand, packed once for the GEMM kernel on first use (as the JIT prepacks
 * weights): `packed` is published (atomically) after `padded` is set. */
typedef struct dlvm_rt_packed {
    float *packed;
    int64_t padded;
    float *winograd;        /* a 3x3 convolution's weights transformed (dlvm_aot_winograd.c) */
    int winograd_bad;       /* 1: a weight is not finite, the direct products serve */
} dlvm_rt_packed;
int dlvm_rt_matmul_const(dlvm_ctx *ctx, const dlvm_val *a, const dlvm_val *b, dlvm_rt_packed *pack,
                         dlvm_val *out);
/* conv2d, then relu (NaN kept) as the products store when `relu`; `pack` (NULL: none) keeps
 * constant weights packed for the GEMM from the first call on */
int dlvm_rt_conv2d_packed(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *w, const dlvm_val *bias,
                          const int64_t *strides, const int64_t *pads, const int64_t *dilations,
                          int64_t groups, int relu, dlvm_rt_packed *pack, dlvm_val *out);
/* conv3d (NCDHW, f32); `pack` as for conv2d (used when groups is 1) */
int dlvm_rt_conv3d(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *w, const dlvm_val *bias,
                   const int64_t *strides, const int64_t *pads, const int64_t *dilations,
                   int64_t groups, dlvm_rt_packed *pack, dlvm_val *out);
int dlvm_rt_maxpool2d(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *kernel,
                      const int64_t *strides, const int64_t *pads, const int64_t *dilations,
                      int ceil_mode, dlvm_val *out);
int dlvm_rt_pool3d(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *kernel,
                   const int64_t *strides, const int64_t *pads, const int64_t *dilations,
                   int ceil_mode, int is_max, int count_include_pad, dlvm_val *out);
int dlvm_rt_avgpool2d(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *kernel,
                      const int64_t *strides, const int64_t *pads, const int64_t *dilations,
                      int ceil_mode, int count_include_pad, dlvm_val *out);

/* movement */
int dlvm_rt_shape_of(dlvm_ctx *ctx, const dlvm_val *x, dlvm_val *out);
int dlvm_rt_reshape(dlvm_ctx *ctx, const dlvm_val *x, int32_t rank, const int64_t *shape, dlvm_val *out);
int dlvm_rt_transpose(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *perm, dlvm_val *out);
int dlvm_rt_broadcast_to(dlvm_ctx *ctx, const dlvm_val *x, int32_t rank, const int64_t *shape, dlvm_val *out);
int dlvm_rt_reshape_dyn(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *shape, int copy_zero,
                        dlvm_val *out);
int dlvm_rt_broadcast_dyn(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *shape, dlvm_val *out);
int dlvm_rt_fill_dyn(dlvm_ctx *ctx, const dlvm_val *shape, const dlvm_val *value, dlvm_val *out);
/* instructions run by the VM that loaded the library (dlvm_aot_rt.c: vm_fn) */
typedef int32_t (*dlvm_rt_vm_fn)(int32_t index, const dlvm_val *const *ins, int32_t n_in,
                                 dlvm_val *outs, int32_t n_out, char *message, int32_t size);
void dlvm_rt_set_vm(dlvm_rt_vm_fn fn);
int dlvm_rt_vm_instruction(dlvm_ctx *ctx, int32_t index, const dlvm_val *const *ins, int32_t n_in,
                           dlvm_val *outs, int32_t n_out);
int dlvm_rt_vm_result(dlvm_val *v, int32_t dtype, int32_t rank, const int64_t *shape);
int dlvm_rt_pad(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *begins, const int64_t *ends,
                double value, dlvm_val *out);
int dlvm_rt_reduce(dlvm_ctx *ctx, const dlvm_val *x, uint32_t mask, int kind, int keepdims,
                   dlvm_val *out);
int dlvm_rt_argext(dlvm_ctx *ctx, const dlvm_val *x, int64_t axis, int keepdims, int sign,
                   dlvm_val *out);
int dlvm_rt_cumulative(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *axis, int product,
                       int exclusive, int reverse, dlvm_val *out);
int dlvm_rt_topk(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *k, int64_t axis, int largest,
                 dlvm_val *values, dlvm_val *indices);
int dlvm_rt_range(dlvm_ctx *ctx, const dlvm_val *start, const dlvm_val *limit, const dlvm_val *delta,
                  dlvm_val *out);
int dlvm_rt_gather_nd(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx, int64_t batch_dims,
                      dlvm_val *out);
int dlvm_rt_concat(dlvm_ctx *ctx, dlvm_val *const *xs, int n, int64_t axis, dlvm_val *out);
int dlvm_rt_slice(dlvm_ctx *ctx, const dlvm_val *x, const int64_t *starts, const int64_t *stops,
                  const int64_t *steps, dlvm_val *out);
int dlvm_rt_gather(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx, int64_t axis, dlvm_val *out);
/* x resampled along its last `nd` (1 or 2) axes by tap tables [k][o] of indices (int64) and
 * f32 weights that the program compiler computed (isa/ops/resize.py); nd = 1 passes n0 = o0 =
 * 1 and a table of one tap */
int dlvm_rt_resample(dlvm_ctx *ctx, const dlvm_val *x, int nd, int64_t n0, int64_t o0,
                     int64_t k0, const void *i0, const void *w0, int64_t n1, int64_t o1,
                     int64_t k1, const void *i1, const void *w1, dlvm_val *out);
/* grid_sample (isa/ops/sampling.py) of an f32 / f64 image (N, C, D1..Dk), k = 1..3, at an f32 /
 * f64 grid (N, O1..Ok, k); mode and padding index isa/ops/sampling.py's MODES (linear,
 * nearest, cubic) and PADDINGS (zeros, border, reflection) */
int dlvm_rt_grid_sample(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *grid, int mode,
                        int padding, int align_corners, dlvm_val *out);
int dlvm_rt_gather_elements(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx, int64_t axis,
                            dlvm_val *out);
int dlvm_rt_scatter_elements(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx,
                             const dlvm_val *upd, int64_t axis, int reduction, dlvm_val *out);
int dlvm_rt_scatter_nd(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *idx,
                       const dlvm_val *upd, int reduction, dlvm_val *out);
int dlvm_rt_slice_dyn(dlvm_ctx *ctx, const dlvm_val *x, const dlvm_val *starts,
                      const dlvm_val *ends, const dlvm_val *axes, const dlvm_val *steps,
                      dlvm_val *out);

/* threads */
void dlvm_rt_set_threads(int n);
/* an entry point's call begins / ends (the pool's workers spin only during calls) */
void dlvm_rt_call_begin(void);
void dlvm_rt_call_end(void);
/* the blocks one call may run before it fails with DLVM_RT_ERR_RESOURCE (0: no limit) */
void dlvm_rt_set_max_steps(int64_t n);
int64_t dlvm_rt_max_steps(void);
int dlvm_rt_threads(void);
/* runs rows [lo, hi) as part `part` (< the `parts` asked for: its own scratch) */
typedef void (*dlvm_rt_task)(void *arg, int64_t lo, int64_t hi, int64_t part);
void dlvm_rt_parallel(dlvm_rt_task task, void *arg, int64_t n, int64_t parts);
/* the parts a job of `work` units is worth: the pool's threads, but at least `min_part` units
 * each (and at least one part) */
int64_t dlvm_rt_parts_for(double work, double min_part);

/* a batch as tiles of rows, each through the whole function (dlvm_aot_rows.c): how many tiles
 * pay for this call (0: run the batch whole), then the tiled run */
typedef int32_t (*dlvm_rt_entry_fn)(dlvm_ctx *ctx, dlvm_val *args, dlvm_val *results);
int64_t dlvm_rt_row_tiles(const dlvm_val *args, int n_args, const int8_t *split, int64_t row_bytes,
                         int64_t traffic_bytes, int64_t weight_bytes);
int dlvm_rt_run_rows(dlvm_ctx *ctx, dlvm_rt_entry_fn fn, dlvm_val *args, int n_args,
                     const int8_t *split, dlvm_val *res, int n_res, const int32_t *dtypes,
                     const int32_t *ranks, const int64_t *shapes, int64_t tiles);

#endif
