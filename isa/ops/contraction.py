"""Placeholder until the contraction rows land."""
OPS = []
