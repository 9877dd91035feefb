"""The module optimizer: module -> module passes run before tier-up, and `dlvm opt PROG`.

    from jit.passes import optimize, plan_memory
    smaller = optimize(module)                       # the default pipeline, to a fixed point
    only = optimize(module, ["fold", "dce"])         # chosen passes, once each, in that order

Every pass rewrites a private copy in place and reports whether it changed anything; `optimize`
never mutates its input and returns a verified module that computes exactly what the input
computes, traps included (specs/passes.md says why each pass is safe).

Default pipeline, repeated until nothing changes (at most MAX_ROUNDS rounds):
  widen     - f16 instructions as f32 ones between casts (they compute in f32 and round once)
  composites - write out composites a kernel cannot take whole (batch_norm's per-channel parts)
  simplify  - algebraic identities first, so folding and CSE see the simpler forms
  fold      - constant folding/propagation (turns known branches into jumps)
  cse       - reuse earlier identical computations (leaves movs)
  copyprop  - read through movs, so the copies become unused
  dce       - drop unreachable blocks, unused trap-free instructions, unused constants
  hoist     - `const` instructions to the top of their block (they split fused regions)
  cluster   - views (slices ...) up to the run boundary before them (they split fused regions)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from isa.errors import InternalError, InvalidError
from isa.module import Module
from isa.verify import verify_module

from .cluster import cluster_views
from .common import copy_module
from .composites import expand_composites
from .constfold import fold_constants
from .copyprop import propagate_copies
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .hoist import hoist_constants
from .memplan import MemoryPlan, PlannedValue, plan_memory
from .simplify import simplify
from .widen import widen_f16

Pass = Callable[[Module], bool]

# name -> (pass, one-line description)
PASSES: dict[str, tuple[Pass, str]] = {
    "widen": (widen_f16, "f16 instructions as f32 ones between casts (computed in f32, rounded once)"),
    "composites": (expand_composites, "batch_norm as per-channel vectors and elementwise ops"),
    "simplify": (simplify, "algebraic identities (x*1, neg(neg x), transpose of transpose, ...)"),
    "fold": (fold_constants, "evaluate instructions on known constants; known br -> jmp"),
    "cse": (eliminate_common_subexpressions, "reuse an earlier identical computation"),
    "copyprop": (propagate_copies, "read the source of a mov instead of its copy"),
    "dce": (eliminate_dead_code, "remove unreachable blocks and unused, trap-free instructions"),
    "hoist": (hoist_constants, "move single-definition consts to the top of their block"),
    "cluster": (cluster_views, "move views that split an elementwise run up to a run boundary"),
}
DEFAULT_PIPELINE: tuple[str, ...] = ("widen", "composites", "simplify", "fold", "cse", "copyprop",
                                     "dce", "hoist", "cluster")
MAX_ROUNDS = 8
# the passes that read the verifier's types (they take the pipeline's, when it has them)
TYPED = frozenset({"widen", "composites", "simplify", "fold", "dce"})


def optimize(module: Module, passes: list[str] | None = None) -> Module:
    """A new, verified module computing what `module` computes, optimized.

    `passes` None runs DEFAULT_PIPELINE until a round changes nothing; a list runs those passes
    once each, in order. Raises ValueError for an unknown pass name, InvalidError when `module`
    itself is not valid, InternalError when a pass breaks the module (a bug in the pass).
    """
    return optimize_verified(module, passes)[0]


def optimize_verified(module: Module, passes: list[str] | None = None) -> tuple[Module, Any]:
    """`optimize`, and the verifier's result for the module it returns (what a Program keeps).

    The module is verified after each round of passes, not after each pass: verifying was
    three quarters of the pipeline's time (0.3 s of a model's first call). A round whose result
    does not verify is replayed pass by pass from its start to name the pass that broke it."""
    unknown = [p for p in (passes or []) if p not in PASSES]
    if unknown:
        raise ValueError(f"unknown pass{'es' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                         f"known: {', '.join(PASSES)}")
    # the verifier's types of `out` as it stands (None once a pass changed it): the passes that
    # read types take them from here, so a pass that changed nothing costs no verification
    checked = verify_module(module)
    out = copy_module(module)
    rounds = [list(passes)] if passes is not None else [list(DEFAULT_PIPELINE)] * MAX_ROUNDS
    ran: list[str] = []             # every pass run so far, to replay on a failure
    for names in rounds:
        changed = False
        for name in names:
            if name in TYPED and checked is None:
                checked = _verified(out, module, ran)
            did = PASSES[name][0](out, checked) if name in TYPED else PASSES[name][0](out)
            ran.append(name)
            if did:
                changed, checked = True, None
        if checked is None:
            checked = _verified(out, module, ran)
        if not changed:
            break
    return out, checked


def _verified(module: Module, source: Module, ran: list[str]) -> Any:
    try:
        return verify_module(module)
    except InvalidError:
        _name_the_pass(source, ran)
        raise


def _name_the_pass(source: Module, ran: list[str]) -> None:
    """Replay the passes that ran on a copy of the pipeline's input, verifying after each (the
    passes are deterministic): raises InternalError naming the first pass whose output does not
    verify."""
    module = copy_module(source)
    for name in ran:
        PASSES[name][0](module)
        try:
            verify_module(module)
        except InvalidError as e:
            raise InternalError(f"optimizer pass '{name}' produced an invalid module: "
                                f"{e.message}", context=e.context) from e
    raise InternalError("the optimizer produced an invalid module, but no single pass did when "
                        "replayed")


def describe() -> str:
    """Help text: the passes and the default order."""
    width = max(len(n) for n in PASSES)
    lines = ["passes (default order: " + " -> ".join(DEFAULT_PIPELINE) + ", repeated until "
             "nothing changes):"]
    lines += [f"  {name:<{width}}  {doc}" for name, (_, doc) in PASSES.items()]
    lines.append("plan_memory(module, function) lists which results can share a buffer.")
    return "\n".join(lines)


__all__ = ["optimize", "optimize_verified", "describe", "PASSES", "DEFAULT_PIPELINE",
           "MemoryPlan", "PlannedValue", "plan_memory"]
