"""Placeholder until the nn rows land."""
OPS = []
