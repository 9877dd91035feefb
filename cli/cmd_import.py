"""`dlvm import`: import a model from another framework as .dlbc."""
from __future__ import annotations

from .common import UsageError


def register(sub) -> None:
    s = sub.add_parser("import", help="import an ONNX model as .dlbc")
    s.add_argument("model", help="the .onnx model")
    s.add_argument("-o", "--output", help="the .dlbc to write (default: beside the model, "
                   "model.dlbc)")
    s.set_defaults(fn=run)


def run(a) -> int:
    import os

    from frontends.onnx import import_to_file
    if a.output is None:
        a.output = os.path.splitext(a.model)[0] + ".dlbc"
    try:
        import_to_file(a.model, a.output)
    except ImportError as e:
        raise UsageError(f"importing ONNX needs the onnx extra (pip install 'dlvm[onnx]'): {e}") \
            from None
    except OSError as e:
        raise UsageError(f"cannot write {a.output}: {e.strerror or e}") from None
    return 0
