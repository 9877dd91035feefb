"""A random-program generator for differential testing of the JIT against the interpreter
(tests/test_fuzz_jit.py): `generate(seed)` gives a program's text and inputs, `run_both` runs it
in both tiers and says whether they agree."""
