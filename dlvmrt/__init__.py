"""dlvmrt package."""
