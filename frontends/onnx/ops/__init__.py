"""ONNX op handlers, one file per op group; importing this package registers them all."""
from . import (  # noqa: F401
    control,
    detection,
    elementwise,
    indexing,
    inverse_trig,
    ml,
    movement,
    nn,
    quant,
    reduce,
    resize,
    rnn,
    scan,
    shape,
    signal,
    training,
)
