"""`dlvm import`: import a model from another framework as .dlbc."""
from __future__ import annotations

from .common import UsageError


def register(sub) -> None:
    s = sub.add_parser("import", help="import an ONNX model or a torch.export .pt2 as .dlbc")
    s.add_argument("model", help="the .onnx model, or a .pt2 saved by torch.export.save")
    s.add_argument("-o", "--output", help="the .dlbc to write (default: beside the model, "
                   "model.dlbc)")
    s.set_defaults(fn=run)


def run(a) -> int:
    import os

    if a.output is None:
        a.output = os.path.splitext(a.model)[0] + ".dlbc"
    if a.model.endswith(".pt2"):
        return _run_torch(a)
    from frontends.onnx import import_to_file
    try:
        import_to_file(a.model, a.output)
    except ImportError as e:
        raise UsageError(f"importing ONNX needs the onnx extra (pip install 'dlvm[onnx]'): {e}") \
            from None
    except OSError as e:
        raise UsageError(f"cannot write {a.output}: {e.strerror or e}") from None
    return 0


def _run_torch(a) -> int:
    try:
        from frontends.torch import import_to_file
        import_to_file(a.model, a.output)
    except ImportError as e:
        raise UsageError(f"importing .pt2 needs the torch extra (pip install 'dlvm[torch]'): {e}") \
            from None
    except OSError as e:
        raise UsageError(f"cannot write {a.output}: {e.strerror or e}") from None
    return 0
