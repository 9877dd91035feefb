"""Code-generation targets, one folder each."""
