"""The public C header of a library: the ABI, documented for people who have only this file."""
from __future__ import annotations

from isa.dtypes import DType
from isa.module import Module
from isa.types import TensorType

from .cnames import ident

_ABI = """\
/* {name}.h: the dlvm program `{module}` compiled ahead of time by `dlvm aot`.
 *
 * Link with lib{name}.so (or lib{name}.a plus -lm -lpthread). The library needs only the C
 * library, libm and pthreads. Its kernels were compiled for this CPU: {cpu}.
 *
 * Calling an entry function
 *   int32_t {name}_FUNC(const dlvm_tensor *inputs, dlvm_tensor *outputs, dlvm_status *status);
 *   - inputs: one dlvm_tensor per parameter, in order. Data is C-contiguous (row-major), of the
 *     parameter's dtype; the library only reads it, during the call.
 *   - outputs: room for one dlvm_tensor per result; on success each gets a new buffer the
 *     CALLER OWNS and frees with {name}_free(outputs[i].data). On failure nothing is allocated.
 *   - status (may be NULL): the code again, and a message naming the function, block and
 *     instruction that failed.
 *   - the return value: DLVM_OK (0) or an error code:
 *       DLVM_ERR_ARGUMENT  an input's dtype, rank or shape does not fit the parameter's type
 *                          (a named dim such as N must have one size across all inputs)
 *       DLVM_ERR_TRAP      the program trapped (an index out of range, an integer division by
 *                          zero, a failed assert, shapes that do not fit at run time)
 *       DLVM_ERR_RESOURCE  out of memory, calls nested too deep, or more blocks run than
 *                          {name}_set_max_steps allows
 *       DLVM_ERR_GUARD     the inputs need code the library does not hold (a broadcast the
 *                          types did not show, an op on an empty axis)
 *     The library never aborts the process.
 *   Named dims (N in f32[N, 4]) are sizes given at run time; literal dims are checked.
 *
 * Threads: entry functions may be called from many threads at once. Large kernels are split
 * across a pool of worker threads inside the library ({name}_set_threads; default: the
 * DLVM_THREADS environment variable, at most the CPUs the process may run on, else their
 * number); a call made while another
 * thread's call uses the pool runs on its own thread. A function whose rows of its leading
 * (batch) dim are computed independently may run a batch as tiles of rows, each through the
 * whole function on one thread (DLVM_ROW_TILE: rows per tile, 0: never; by default chosen from
 * the values' and weights' sizes).
 */
#ifndef {guard}
#define {guard}

#include <stdint.h>

#ifdef __cplusplus
extern "C" {{
#endif

#ifndef DLVM_TENSOR_ABI
#define DLVM_TENSOR_ABI 1
#define DLVM_MAX_RANK 8

enum dlvm_dtype {{
{dtypes}
}};

enum dlvm_code {{
    DLVM_OK = 0,
    DLVM_ERR_ARGUMENT = 1,
    DLVM_ERR_TRAP = 2,
    DLVM_ERR_RESOURCE = 3,
    DLVM_ERR_GUARD = 4
}};

typedef struct dlvm_tensor {{
    void *data;                       /* row-major elements of `dtype` */
    int64_t shape[DLVM_MAX_RANK];     /* the first `rank` entries are used */
    int32_t rank;
    int32_t dtype;                    /* an enum dlvm_dtype */
}} dlvm_tensor;

typedef struct dlvm_status {{
    int32_t code;                     /* an enum dlvm_code */
    char message[480];                /* empty on success */
}} dlvm_status;
#endif

#ifndef DLVM_API
#define DLVM_API __attribute__((visibility("default")))
#endif

/* Free an output buffer. */
DLVM_API void {name}_free(void *data);
/* Threads the kernels may use (0: the default); the current count. */
DLVM_API void {name}_set_threads(int threads);
DLVM_API int {name}_get_threads(void);
/* The blocks one call may run (0, the default: no limit); beyond it the call returns
 * DLVM_ERR_RESOURCE. A program that may loop for ever can be bounded this way. */
DLVM_API void {name}_set_max_steps(int64_t steps);
/* Counts since the library was loaded: out[0] the calls into the system allocator (values,
 * their headers and scratch the buffer cache could not serve, and results copied out), out[1]
 * the results handed to callers. In a steady state out[0] grows by out[1]'s growth: the
 * compiled code itself allocates nothing. */
DLVM_API void {name}_allocation_counts(int64_t out[2]);
/* Parallel jobs run on the calling thread alone since the library was loaded because the pool's
 * workers kept losing their cores (the machine busier than the thread count allows). */
DLVM_API int64_t {name}_pool_solo_jobs(void);

{functions}
#ifdef __cplusplus
}}
#endif
#endif
"""


def type_text(t: TensorType) -> str:
    return str(t)


def public_header(module: Module, name: str, cpu: str) -> str:
    dtypes = ",\n".join(f"    DLVM_{d.name} = {d.code}" for d in DType)
    functions = []
    for f in module.functions.values():
        params = "\n".join(f" *   inputs[{i}]  %{p.name}: {type_text(p.type)}"
                           for i, p in enumerate(f.params)) or " *   (no inputs)"
        results = "\n".join(f" *   outputs[{i}] {type_text(t)}"
                            for i, t in enumerate(f.results)) or " *   (no outputs)"
        functions.append(f"/* @{f.name}\n{params}\n{results}\n */\n"
                         f"DLVM_API int32_t {name}_{ident(f.name)}(const dlvm_tensor *inputs, "
                         f"dlvm_tensor *outputs, dlvm_status *status);\n")
    return _ABI.format(name=name, module=module.name, cpu=cpu, guard=f"DLVM_{name.upper()}_H",
                       dtypes=dtypes, functions="\n".join(functions))
