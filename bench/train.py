"""One training step at batch 64 (forward, loss, gradient, Adam update) on the digits models of
examples/train_digits.py: dlvm (the generated train_step, interpreted and with the tiered JIT)
against PyTorch eager and torch.compile, with the same thread count, timed in turn.

    .venv/bin/python bench/train.py [--threads 2] [--models mlp,cnn]
"""
# ruff: noqa: B023  (each lambda is timed within the loop iteration that defines it)
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import train_digits  # noqa: E402

from bench._timing import fmt_time, interleaved_medians, table  # noqa: E402
from dlvmrt.training import Trainer  # noqa: E402
from isa.training import Adam  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--models", default="mlp,cnn")
    p.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    a = p.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    rows = []
    for name in a.models.split(","):
        module = train_digits.MODELS[name][0](0)
        x, y, _, _ = train_digits.digits(0)
        if name == "mlp":
            x = x.reshape(len(x), -1)
        xb, yb = x[:64], y[:64]
        fns = {}
        for jit in ("off", "auto"):
            tr = Trainer(module, optimizer=Adam(), lr=1e-3, jit=jit)
            for _ in range(20):
                tr.step(xb, yb)
            if hasattr(tr.vm, "wait_compiled"):
                tr.vm.wait_compiled()
            fns[f"dlvm {jit}"] = (lambda tr=tr: tr.step(xb, yb))
        tx, ty = torch.tensor(xb), torch.tensor(yb)

        def torch_step(net, opt, fwd):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(fwd(tx), ty)
            loss.backward()
            opt.step()
            return loss

        net = train_digits.pytorch_model(name, module)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        fns["torch eager"] = (lambda net=net, opt=opt: torch_step(net, opt, net))
        if not a.no_compile:
            cnet = train_digits.pytorch_model(name, module)
            copt = torch.optim.Adam(cnet.parameters(), lr=1e-3)
            compiled = torch.compile(cnet)
            fns["torch.compile"] = (lambda n=cnet, o=copt, c=compiled: torch_step(n, o, c))
        times = interleaved_medians(fns, budget_s=1.0)
        base = times["torch eager"]
        for k, t in times.items():
            rows.append([name, k, fmt_time(t), f"{t / base:.2f}x"])
    print(table(f"training step, batch 64, {a.threads} threads", ["model", "runner", "time",
                                                                    "vs torch eager"], rows))


if __name__ == "__main__":
    main()
