"""The CPU target: kernels compiled by LLVM for the host, with the JIT's own GEMM, convolution
and max pool, the native and Python worker pools and the BLAS thread control."""
