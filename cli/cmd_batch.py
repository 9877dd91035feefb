"""`dlvm batch`: run a program over input shards, one output shard each, in-process or on Ray."""
from __future__ import annotations

import sys

from .common import UsageError


def register(sub) -> None:
    s = sub.add_parser(
        "batch", help="run a program over .npz/.npy/.parquet shards (in-process or on Ray)",
        description="Runs the entry function over every input shard (the leading axis of every "
        "array is the sample axis) and writes DIR/NAME.npz with out0, out1, ... for input NAME.*. "
        "Outputs are written atomically; shards whose outputs are complete are skipped, so a "
        "rerun resumes.")
    s.add_argument("prog", help="the .dlasm or .dlbc program")
    s.add_argument("--inputs", nargs="+", required=True, metavar="PATH",
                   help="input shards: files, directories or glob patterns")
    s.add_argument("--out", required=True, metavar="DIR", help="where output shards go")
    s.add_argument("--entry", default="main", help="the function to run (default: main)")
    s.add_argument("--ray", metavar="auto|ADDRESS", default=None,
                   help="run on Ray: 'auto' joins this machine's cluster or starts a local one; "
                   "else a cluster address (default: in-process)")
    s.add_argument("--actors", type=int, default=2, help="Ray actors, one VM each (default 2)")
    s.add_argument("--batch-size", type=int, default=None, metavar="N",
                   help="samples per call (default: a whole shard per call)")
    s.add_argument("--jit", choices=["off", "auto", "always"], default=None,
                   help="the VM's JIT mode (default: the VM's)")
    s.add_argument("--no-resume", action="store_true",
                   help="recompute shards whose outputs already exist")
    s.add_argument("-q", "--quiet", action="store_true", help="no per-shard progress lines")
    s.set_defaults(fn=run)


def run(a) -> int:
    from dlvmrt.distributed import RayUnavailable, ShardError, print_progress, run_batch
    if a.actors < 1:
        raise UsageError(f"--actors must be at least 1, got {a.actors}")
    if a.batch_size is not None and a.batch_size < 1:
        raise UsageError(f"--batch-size must be at least 1, got {a.batch_size}")
    try:
        report = run_batch(a.prog, a.inputs, a.out, entry=a.entry, jit=a.jit,
                           batch_size=a.batch_size, ray=a.ray, actors=a.actors,
                           resume=not a.no_resume, progress=None if a.quiet else print_progress)
    except (ShardError, RayUnavailable) as e:
        raise UsageError(str(e)) from None
    print(report.summary(), file=sys.stderr)
    for r in report.failed:
        print(f"dlvm batch: error: {r.shard}: {r.error}", file=sys.stderr)
    return 1 if report.failed else 0
