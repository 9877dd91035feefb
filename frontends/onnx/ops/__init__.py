"""ONNX op handlers, one file per op group; importing this package registers them all."""
from . import control, elementwise, indexing, movement, nn, quant, reduce, resize, shape  # noqa: F401
