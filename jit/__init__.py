"""jit package."""
