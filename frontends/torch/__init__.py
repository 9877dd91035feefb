"""PyTorch frontend: `import_torch(model_or_exported_program, example_args, dynamic_shapes=None)`
-> isa.Module (from torch.export, lowered to core ATen), `load_pt2(path)`, `import_to_file`, and
the `torch.compile` backend `dlvm` (`frontends.torch.backend`).

Importing this package is cheap; torch is loaded on the first call.
"""
from __future__ import annotations

from typing import Any


def import_torch(model: Any, example_args: Any = (), dynamic_shapes: Any = None,
                 name: str | None = None, trainable: Any = False):
    """A torch.nn.Module (exported here) or torch.export.ExportedProgram -> verified isa.Module
    with entry `main`; parameters and buffers are module constants, Dims are named dims.
    `trainable` (True: every parameter, or a list of parameter names) keeps those parameters
    constants the program reads as they are (named like the parameter, `.` as `_`), with
    nothing folded into them at import, so `grad` and training reach all their uses."""
    from .importer import import_torch as _imp
    return _imp(model, example_args, dynamic_shapes, name, trainable)


def import_to_file(pt2_path: Any, out_path: Any):
    """`dlvm import model.pt2`: a saved torch.export program -> bytecode file."""
    from .importer import import_to_file as _imp
    return _imp(pt2_path, out_path)


def load_pt2(path: Any, name: str | None = None):
    """A saved torch.export program (`torch.export.save`) -> isa.Module."""
    from .importer import load_pt2 as _imp
    return _imp(path, name)


__all__ = ["import_torch", "import_to_file", "load_pt2"]
