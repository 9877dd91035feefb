/* Running a batch as tiles of rows, each tile through the whole function (jit/row_split.py
 * proves which functions allow it; the entry points call here).
 *
 * Why: layer by layer over a whole batch, a CNN's activations (19 MB per layer for a MobileNet
 * at batch 32) go to memory and back between every two layers; a tile of one or a few images
 * keeps them in the core's L2, and the pool's threads take whole tiles instead of splitting
 * every op (no hand-off per op). The cost: every tile reads the weights again, so a model whose
 * weights outweigh its activations (ResNet-18's 45 MB) keeps the whole batch together. */
#include "dlvm_aot_rt.h"

#include <stdlib.h>
#include <string.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* a tile's largest activation stays within this: an eighth of a core's L2 on current x86 and
 * Arm server cores, since a layer reads and writes several values of the tile at once (a gated
 * residual block: its input, two branches, their product, the sum) besides the weights. Measured
 * on the zoo's models at batch 32: a WaveNet-style stack (40 KB per image and value) ran 0.66x
 * the untiled time with tiles of 2 images, 0.81x with 8 */
#define ROW_TILE_BYTES (128 * 1024)
/* a tile writes and reads at least this much (a call's fixed costs, microseconds, stay small) */
#define MIN_TILE_TRAFFIC (256 * 1024)
/* weights this small stay in the last-level cache between tiles (every current x86 and Arm
 * server core has 2 MB of it or more), so a tile reads them again from there, not from memory:
 * SqueezeNet's 0.9 MB, Xception's 1.6 MB and an EfficientNetV2's 0.9 MB ran as two half
 * batches at b32 because their weights read per tile outweighed the activations' traffic, and
 * tiles of two images took 0.82-0.90x the time (RegNet 0.85x; a YOLO, a VGG and a Siamese net
 * within 3% either way) */
#define CACHED_WEIGHT_BYTES (2 * 1024 * 1024)

/* the leading size shared by the split arguments, or -1 when they disagree (the untiled call
 * then reports the mismatch as usual) */
static int64_t split_rows(const dlvm_val *args, int n_args, const int8_t *split) {
    int64_t rows = -1;
    for (int i = 0; i < n_args; i++) {
        if (!split[i]) continue;
        if (args[i].rank < 1 || (rows >= 0 && args[i].shape[0] != rows)) return -1;
        rows = args[i].shape[0];
    }
    return rows;
}

HIDDEN int64_t dlvm_rt_row_tiles(const dlvm_val *args, int n_args, const int8_t *split,
                                int64_t row_bytes, int64_t traffic_bytes, int64_t weight_bytes) {
    int64_t rows = split_rows(args, n_args, split);
    if (rows < 2) return 0;
    const char *env = getenv("DLVM_ROW_TILE");     /* rows per tile; 0: never tile */
    if (env && *env) {
        long long forced = atoll(env);
        return forced > 0 && forced < rows ? (rows + forced - 1) / forced : 0;
    }
    int64_t threads = dlvm_rt_threads();
    int64_t share = (rows + threads - 1) / threads;
    int64_t work_tile = traffic_bytes > 0 ? (MIN_TILE_TRAFFIC + traffic_bytes - 1) / traffic_bytes
                                          : INT64_MAX;
    if (work_tile > share) return 0;    /* too little work to split: each op splits itself */
    /* at least one tile per thread: the threads take whole tiles, no hand-off per op */
    int64_t tiles = threads;
    int64_t cache_tile = row_bytes > 0 ? ROW_TILE_BYTES / row_bytes : share;
    if (cache_tile < work_tile) cache_tile = work_tile;
    if (cache_tile < 1) cache_tile = 1;
    if (cache_tile < share) {
        /* smaller tiles, a multiple of the threads so that they get even shares, when the
         * weights read again per tile cost less than the activations kept out of memory */
        int64_t many = (rows + cache_tile - 1) / cache_tile;
        many = (many + threads - 1) / threads * threads;
        if (many > rows) many = rows;
        if ((double)many * (double)weight_bytes <= 0.5 * (double)rows * (double)traffic_bytes) {
            tiles = many;
        } else if (weight_bytes <= CACHED_WEIGHT_BYTES) {
            /* at least two rows a tile there: one image's products were narrower than the
             * GEMM's panels (a YOLO and a Siamese net ran 2-6% slower in tiles of one) */
            int64_t rows_per = cache_tile < 2 ? 2 : cache_tile;
            many = rows / rows_per;             /* rounded down: no tile under rows_per */
            many = many < threads ? threads : many / threads * threads;
            tiles = many > rows ? rows : many;
        }
    }
    if (tiles > rows) tiles = rows;
    return tiles > 1 ? tiles : 0;
}

typedef struct {
    dlvm_rt_entry_fn fn;
    dlvm_val *args;
    int n_args, n_res;
    const int8_t *split;
    int64_t rows, tiles;
    dlvm_val *res;                 /* the whole batch's results (allocated before the tiles) */
    int64_t max_steps;
    int failed;                    /* atomic: a tile failed, the others stop (the whole batch
                                    * then runs again for the call's error) */
} row_job;

static void fail_job(row_job *j) { __atomic_store_n(&j->failed, 1, __ATOMIC_RELEASE); }

/* tile t: its rows of the split arguments, through the function, copied into the results */
static void run_tile(row_job *j, int64_t t) {
    int64_t lo = j->rows * t / j->tiles, hi = j->rows * (t + 1) / j->tiles;   /* sizes differ by <= 1 */
    dlvm_val args[j->n_args > 0 ? j->n_args : 1], res[j->n_res > 0 ? j->n_res : 1];
    memset(res, 0, sizeof res);
    for (int i = 0; i < j->n_args; i++) {
        args[i] = j->args[i];
        args[i].buf = NULL;                      /* borrowed: the caller's input */
        if (!j->split[i]) continue;
        int64_t row = dlvm_rt_numel(&args[i]) / (args[i].shape[0] ? args[i].shape[0] : 1);
        args[i].data = (char *)args[i].data + lo * row * (int64_t)dlvm_rt_itemsize(args[i].dtype);
        args[i].shape[0] = hi - lo;
    }
    dlvm_rt_status status = {0, {0}};
    dlvm_ctx ctx = {&status, 0, j->max_steps, NULL};
    if (j->fn(&ctx, args, res)) {
        fail_job(j);
    } else {
        for (int r = 0; r < j->n_res; r++) {
            const dlvm_val *whole = &j->res[r], *part = &res[r];
            int same = part->dtype == whole->dtype && part->rank == whole->rank &&
                       part->rank >= 1 && part->shape[0] == hi - lo;
            for (int d = 1; same && d < part->rank; d++) same = part->shape[d] == whole->shape[d];
            if (!same) {
                dlvm_rt_fail(&ctx, DLVM_RT_ERR_GUARD, "a tile of rows %lld-%lld gave result %d a "
                             "shape the whole batch's does not have (a bug in dlvm's row split)",
                             (long long)lo, (long long)hi - 1, r);
                fail_job(j);
                break;
            }
            size_t bytes = (size_t)dlvm_rt_numel(part) * dlvm_rt_itemsize(part->dtype);
            if (bytes) memcpy((char *)whole->data + (size_t)lo * (bytes / (size_t)(hi - lo)),
                              part->data, bytes);
        }
    }
    /* released on this thread: the buffers go back to the cache they came from */
    for (int r = 0; r < j->n_res; r++) dlvm_rt_release(&res[r]);
}

static void tiles_task(void *arg, int64_t lo, int64_t hi, int64_t part) {
    (void)part;
    row_job *j = arg;
    for (int64_t t = lo; t < hi && !__atomic_load_n(&j->failed, __ATOMIC_ACQUIRE); t++)
        run_tile(j, t);
}

HIDDEN int dlvm_rt_run_rows(dlvm_ctx *ctx, dlvm_rt_entry_fn fn, dlvm_val *args, int n_args,
                            const int8_t *split, dlvm_val *res, int n_res, const int32_t *dtypes,
                            const int32_t *ranks, const int64_t *shapes, int64_t tiles) {
    int64_t rows = split_rows(args, n_args, split);
    if (tiles < 2 || rows < tiles) return fn(ctx, args, res);
    for (int r = 0; r < n_res; r++)     /* a result's size past its rows must be static here */
        for (int d = 1; d < ranks[r]; d++)
            if (shapes[r * DLVM_MAX_RANK + d] < 0) return fn(ctx, args, res);
    for (int r = 0; r < n_res; r++) {
        int64_t shape[DLVM_MAX_RANK];
        memcpy(shape, shapes + r * DLVM_MAX_RANK, sizeof shape);
        shape[0] = rows;
        if (dlvm_rt_alloc(ctx, &res[r], dtypes[r], ranks[r], shape)) {
            for (int q = 0; q < r; q++) dlvm_rt_release(&res[q]);
            return ctx->status->code;
        }
    }
    row_job j = {fn, args, n_args, n_res, split, rows, tiles, res, ctx->steps, 0};
    dlvm_rt_parallel(tiles_task, &j, tiles, tiles);
    if (j.failed) {
        /* the whole batch again: its error is the call's (the tiles' first failure need not be
         * the instruction the whole batch traps at first: an out-of-range index in the last row
         * before a division by zero in the first) */
        for (int r = 0; r < n_res; r++) dlvm_rt_release(&res[r]);
        return fn(ctx, args, res);
    }
    return 0;
}
