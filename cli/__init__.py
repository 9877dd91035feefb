"""The `dlvm` command line. Nothing in the project imports it; it imports everything."""
from .main import build_parser, main

__all__ = ["build_parser", "main"]
