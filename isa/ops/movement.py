"""Placeholder until the movement rows land."""
OPS = []
