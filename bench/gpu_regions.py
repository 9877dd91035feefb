"""Regions placed on an NVIDIA GPU against the CPU JIT and the interpreter, on one machine.

    python bench/gpu_regions.py [--budget 0.5] [--sizes 1,256,16384]

Each program runs in three VMs, interleaved call by call: the interpreter (`jit="off"`), the CPU
JIT (`jit="always", device="cpu"`), the GPU (`jit="always"`, the GPU requested: every region it
supports runs there), and the
cost model's choice (`device="auto"`: the scheduler places each region; "best / auto" near 1
means it chose well). Inputs and results live on
the host, so the GPU column counts the transfers a user's call pays. Each result is checked
against the interpreter's first (specs/cuda.md's tolerances). Prints where the regions went
(the scheduler's counts) and a table of medians with ratios. Needs a CUDA driver; without one it
says so and exits 0.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import assembler  # noqa: E402
import dlvmrt  # noqa: E402
from bench._timing import fmt_time, interleaved_medians, table  # noqa: E402
from dlvmrt import devices  # noqa: E402

PROGRAMS = {
    "mlp 512-1024-512 gelu": ("""module mlp
func @main(%x: f32[N, 512], %w1: f32[512, 1024], %b1: f32[1024], %w2: f32[1024, 512]) -> f32[N, 512] {
  %h = matmul %x, %w1
  %h = add %h, %b1
  %h = gelu %h
  %y = matmul %h, %w2
  ret %y
}
""", lambda n, rng: [rng.standard_normal((n, 512)), rng.standard_normal((512, 1024)) / 22.6,
                     rng.standard_normal(1024), rng.standard_normal((1024, 512)) / 32.0]),
    "softmax + layer_norm rows of 1024": ("""module rows
func @main(%x: f32[N, 1024], %g: f32[1024]) -> f32[N, 1024] {
  %s = softmax %x {axis = -1}
  %n = layer_norm %s {axis = -1, epsilon = 1e-5}
  %y = mul %n, %g
  ret %y
}
""", lambda n, rng: [rng.standard_normal((n, 1024)), rng.standard_normal(1024)]),
    "elementwise chain (8 ops)": ("""module chain
func @main(%x: f32[N, 4096], %y: f32[N, 4096]) -> f32[N, 4096] {
  %a = mul %x, %y
  %b = tanh %a
  %c = add %b, %x
  %d = exp %c
  %e = sigmoid %d
  %f = sub %e, %y
  %g = relu %f
  %h = sqrt %g
  ret %h
}
""", lambda n, rng: [rng.standard_normal((n, 4096)), rng.standard_normal((n, 4096))]),
}


def _placement(stats) -> str:
    """Where the GPU VM's regions went so far (counts per device) and its fallbacks."""
    placed = ", ".join(f"{k} {v}" for k, v in sorted(stats.placed.items()))
    return f"{placed}; fallbacks {stats.fallbacks}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per competitor per row")
    ap.add_argument("--sizes", default="1,256,16384", help="values of N")
    ap.add_argument("--simulated", action="store_true",
                    help="place on the simulated device (checks this script without a GPU)")
    args = ap.parse_args()
    if args.simulated:
        dev = devices.sim_device()
    else:
        ok, why = devices.accelerator_available()
        if not ok:
            print(f"no GPU here ({why}); nothing to measure")
            return 0
        dev = devices.open_device("cuda:0")
    print(f"device: {dev.name}")
    rows, bad = [], 0
    for name, (text, make) in PROGRAMS.items():
        module = assembler.assemble(text)
        vms = {"interpreter": dlvmrt.VM(module, jit="off"),
               "cpu jit": dlvmrt.VM(module, jit="always", device="cpu"),
               "gpu": dlvmrt.VM(module, jit="always", device=dev),
               "auto": dlvmrt.VM(module, jit="always", device="auto", gpus=[dev])}
        for n in (int(s) for s in args.sizes.split(",")):
            rng = np.random.default_rng(0)
            xs = [a.astype(np.float32) for a in make(n, rng)]
            want = vms["interpreter"].run("main", *xs)[0]
            for label in ("cpu jit", "gpu", "auto"):
                got = vms[label].run("main", *xs)[0]
                err = float(np.max(np.abs(got - want) / (np.abs(want) + 1e-3)))
                if not np.allclose(got, want, rtol=1e-4, atol=1e-4):
                    bad += 1
                    print(f"MISMATCH {name} N={n} {label}: max relative difference {err:.2e}")
            t = interleaved_medians({k: (lambda v=v, xs=xs: v.run("main", *xs)) for k, v in vms.items()},
                                    budget_s=args.budget)
            rows.append([name, n, fmt_time(t["interpreter"]), fmt_time(t["cpu jit"]),
                         fmt_time(t["gpu"]), f"{t['cpu jit'] / t['gpu']:.2f}", fmt_time(t["auto"]),
                         f"{min(t['cpu jit'], t['gpu']) / t['auto']:.2f}",
                         _placement(vms["auto"].scheduler.stats)])
    print(table("GPU vs CPU JIT (ratio = cpu jit / gpu: > 1, the GPU is faster) and auto placement",
                ["program", "N", "interpreter", "cpu jit", "gpu", "ratio", "auto",
                 "best / auto", "auto placed"], rows))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
