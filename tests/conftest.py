"""Test-wide settings.

The JIT leaves regions over tiny tensors to the interpreter when a kernel call would cost more
than it saves (jit/targets/cpu/runner.py: worth_a_kernel). The JIT's tests check kernels on
tiny inputs, so the suite compiles regardless (DLVM_JIT_SMALL=compile); the policy itself is
tested with it unset (tests/test_jit_small.py).

The VM's native tier (the whole program as one library, dlvmrt/native_tier.py) builds a library
per program with the C compiler: it is off for the suite (DLVM_NATIVE=off) and tested on its own
(tests/test_native_tier.py, which asks for it by argument)."""
import os

os.environ.setdefault("DLVM_JIT_SMALL", "compile")
os.environ.setdefault("DLVM_NATIVE", "off")
