"""The JIT's errors that callers outside it catch (kept apart so that catching them imports
nothing heavy)."""


class NativeUnavailable(Exception):
    """A program cannot be compiled whole into a native library here: it holds instructions the
    library cannot run (the message lists them), or there is no C compiler."""
