"""Batch inference over shards (`dlvm batch`, dlvmrt.distributed): in-process and on Ray.

The Ray tests start a local instance (`ray.init(num_cpus=2)`) and skip cleanly without the ray
extra; their results must equal the in-process ones bit for bit.
"""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

import dlvmrt
from cli import main as cli_main
from dlvmrt.distributed import ShardError, expand_inputs, is_complete, run_batch

MLP = Path(__file__).resolve().parents[1] / "examples" / "mlp.dlasm"

# Slow enough per shard (a few tenths of a second) that a worker can be killed in the middle of one.
SLOW = """module slow
func @main(%x: f32[N, 8]) -> f32[N, 8] {
entry:
  %w = const 0.125 : f32[8, 8]
  %i = const 0 : i64[]
  jmp head
head:
  %c = lt %i, 150000
  br %c, body, done
body:
  %x = matmul %x, %w
  %x = tanh %x
  %i = add %i, 1
  jmp head
done:
  ret %x
}
"""


def make_shards(folder: Path, count: int, features: int = 4, name: str = "x", seed: int = 0):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(count):
        np.savez(folder / f"part-{i:02d}.npz",
                 **{name: rng.standard_normal((40 + i, features)).astype(np.float32)})
    return sorted(folder.glob("*.npz"))


def expected(program, shard: Path) -> list[np.ndarray]:
    vm = dlvmrt.VM(program, jit="off")
    with np.load(shard) as z:
        return list(vm.run("main", **{k: z[k] for k in z.files}))


def assert_outputs(program, shards, out: Path) -> None:
    for shard in shards:
        with np.load(out / f"{shard.stem}.npz") as z:
            want = expected(program, shard)
            assert sorted(z.files) == [f"out{i}" for i in range(len(want))]
            for i, w in enumerate(want):
                np.testing.assert_array_equal(z[f"out{i}"], w)
    assert not list(out.glob(".tmp-*")), "a temporary output was left behind"


# -- in-process --------------------------------------------------------------------------------

def test_in_process_writes_one_output_per_shard(tmp_path):
    shards = make_shards(tmp_path / "in", 4)
    report = run_batch(MLP, [str(tmp_path / "in")], tmp_path / "out", jit="off")
    assert report.count("written") == 4 and not report.failed
    assert report.samples == sum(40 + i for i in range(4))
    assert_outputs(MLP, shards, tmp_path / "out")


def test_batch_size_splits_calls_but_not_results(tmp_path):
    shards = make_shards(tmp_path / "in", 2)
    run_batch(MLP, [str(s) for s in shards], tmp_path / "whole", jit="off")
    run_batch(MLP, [str(s) for s in shards], tmp_path / "split", jit="off", batch_size=7)
    for s in shards:
        a, b = np.load(tmp_path / "whole" / s.name), np.load(tmp_path / "split" / s.name)
        np.testing.assert_allclose(a["out0"], b["out0"], rtol=1e-6, atol=1e-7)


def test_rerun_skips_complete_shards_and_cleans_temporaries(tmp_path):
    shards = make_shards(tmp_path / "in", 3)
    out = tmp_path / "out"
    run_batch(MLP, [str(tmp_path / "in")], out, jit="off")
    (out / shards[1].name).unlink()                           # lost: must be redone
    (out / shards[2].name).write_bytes(b"PK\x03\x04 truncated")  # not a complete npz: redone
    (out / ".tmp-part-00-123-abcd.npz").write_bytes(b"half")  # a killed writer's leftover
    before = (out / shards[0].name).stat().st_mtime_ns
    report = run_batch(MLP, [str(tmp_path / "in")], out, jit="off")
    assert [r.status for r in report.results] == ["skipped", "written", "written"]
    assert (out / shards[0].name).stat().st_mtime_ns == before
    assert_outputs(MLP, shards, out)


def test_no_resume_recomputes(tmp_path):
    make_shards(tmp_path / "in", 2)
    run_batch(MLP, [str(tmp_path / "in")], tmp_path / "out", jit="off")
    report = run_batch(MLP, [str(tmp_path / "in")], tmp_path / "out", jit="off", resume=False)
    assert report.count("written") == 2


def test_npy_and_parquet_shards(tmp_path):
    x = np.random.default_rng(3).standard_normal((12, 4)).astype(np.float32)
    np.save(tmp_path / "a.npy", x)
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    pq.write_table(pa.table({"x": [row.tolist() for row in x]}), tmp_path / "b.parquet")
    report = run_batch(MLP, [str(tmp_path / "a.npy"), str(tmp_path / "b.parquet")],
                       tmp_path / "out", jit="off")
    assert report.count("written") == 2
    (want,) = dlvmrt.VM(MLP, jit="off").run("main", x)
    for name in ("a", "b"):
        np.testing.assert_array_equal(np.load(tmp_path / "out" / f"{name}.npz")["out0"], want)


def test_a_bad_shard_fails_alone(tmp_path):
    shards = make_shards(tmp_path / "in", 2)
    np.savez(tmp_path / "in" / "part-bad.npz", y=np.zeros((3, 4), np.float32))
    np.savez(tmp_path / "in" / "part-shape.npz", x=np.zeros((3, 5), np.float32))
    report = run_batch(MLP, [str(tmp_path / "in")], tmp_path / "out", jit="off")
    failed = {r.shard: r.error for r in report.failed}
    assert set(failed) == {"part-bad.npz", "part-shape.npz"}
    assert "missing x" in failed["part-bad.npz"]
    assert "must be f32[N, 4], got f32[3, 5]" in failed["part-shape.npz"]   # the VM's trap
    assert_outputs(MLP, shards, tmp_path / "out")
    assert not (tmp_path / "out" / "part-bad.npz").exists()


def test_inputs_are_checked(tmp_path):
    with pytest.raises(ShardError, match="no such file"):
        expand_inputs([str(tmp_path / "nothing-*.npz")])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    np.savez(tmp_path / "a" / "s.npz", x=np.zeros((1, 4)))
    np.savez(tmp_path / "b" / "s.npz", x=np.zeros((1, 4)))
    with pytest.raises(ShardError, match="would both write s.npz"):
        expand_inputs([str(tmp_path / "a"), str(tmp_path / "b")])


def test_cli_batch(tmp_path, capsys):
    shards = make_shards(tmp_path / "in", 3)
    code = cli_main(["batch", str(MLP), "--inputs", str(tmp_path / "in"), "--out",
                     str(tmp_path / "out"), "--jit", "off"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "[3/3]" in err and "3 written" in err
    assert_outputs(MLP, shards, tmp_path / "out")
    code = cli_main(["batch", str(MLP), "--inputs", str(tmp_path / "in"), "--out",
                     str(tmp_path / "out")])
    assert code == 0 and "3 skipped" in capsys.readouterr().err
    np.savez(tmp_path / "in" / "zz.npz", x=np.zeros((2, 9), np.float32))
    code = cli_main(["batch", str(MLP), "--inputs", str(tmp_path / "in"), "--out",
                     str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == 1 and "zz.npz" in err and "Traceback" not in err
    code = cli_main(["batch", str(MLP), "--inputs", str(tmp_path / "none"), "--out",
                     str(tmp_path / "out")])
    assert code == 2 and "no such file" in capsys.readouterr().err


# -- on Ray ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    from dlvmrt.distributed.ray_backend import _quiet_ray_data
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    _quiet_ray_data(ray)
    yield ray
    ray.shutdown()


@pytest.mark.ray
def test_ray_batch_equals_in_process(ray_local, tmp_path):
    shards = make_shards(tmp_path / "in", 6)      # 6 shards, 255 samples
    mine = run_batch(MLP, [str(tmp_path / "in")], tmp_path / "local", jit="off")
    theirs = run_batch(MLP, [str(tmp_path / "in")], tmp_path / "ray", jit="off", ray="auto",
                       actors=2)
    assert theirs.count("written") == 6 and mine.samples == theirs.samples
    assert {r.worker for r in theirs.results} - {os.getpid()}, "nothing ran on a Ray worker"
    for s in shards:
        a, b = np.load(tmp_path / "local" / s.name), np.load(tmp_path / "ray" / s.name)
        np.testing.assert_array_equal(a["out0"], b["out0"])


@pytest.mark.ray
def test_ray_predictor_on_a_dataset(ray_local):
    from dlvmrt.distributed import predict
    x = np.random.default_rng(5).standard_normal((300, 4)).astype(np.float32)
    ds = ray_local.data.from_items([{"id": i, "x": row} for i, row in enumerate(x)])
    rows = predict(ds, MLP, actors=2, batch_size=64, jit="off", keep=["id"]).take_all()
    got = np.stack([r["out0"] for r in sorted(rows, key=lambda r: r["id"])])
    (want,) = dlvmrt.VM(MLP, jit="off").run("main", x)
    np.testing.assert_array_equal(got, want)


@pytest.mark.ray
@pytest.mark.slow       # 33 s: CI's time
def test_a_killed_worker_loses_and_duplicates_nothing(ray_local, tmp_path):
    prog = tmp_path / "slow.dlasm"
    prog.write_text(SLOW)
    shards = make_shards(tmp_path / "in", 8, features=8)
    killed: list[int] = []
    lock = threading.Lock()

    def kill_the_first_worker(result, done, total):
        with lock:
            if not killed and result.worker and result.worker != os.getpid():
                killed.append(result.worker)
                os.kill(result.worker, signal.SIGKILL)   # mid-run: it has shards still to do

    report = run_batch(prog, [str(tmp_path / "in")], tmp_path / "out", jit="off", ray="auto",
                       actors=2, progress=kill_the_first_worker)
    assert killed, "no worker was killed"
    names = [r.shard for r in report.results]
    assert sorted(names) == sorted(s.name for s in shards), "a shard was lost or reported twice"
    assert report.count("written") == 8
    assert_outputs(prog, shards, tmp_path / "out")
    assert all(is_complete(tmp_path / "out" / s.name, 1) for s in shards)


@pytest.mark.ray
@pytest.mark.parametrize("opt", ["sgd", pytest.param("adam", marks=pytest.mark.slow)])  # CI's time
def test_data_parallel_training_equals_one_process(ray_local, opt):
    pytest.importorskip("torch")
    import sys as _sys
    _sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    train_digits = pytest.importorskip("train_digits")
    from dlvmrt.distributed.train import DataParallelTrainer
    from dlvmrt.training import Trainer
    from isa.training import SGD, Adam
    module = train_digits.mlp(0, sizes=(16, 32, 4))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 16)).astype(np.float32)
    y = rng.integers(0, 4, 256)
    optimizer = SGD(momentum=0.9) if opt == "sgd" else Adam()
    dp = DataParallelTrainer(module, workers=2, optimizer=optimizer, lr=1e-2, jit="off",
                             cpus_per_worker=0.5)
    single = Trainer(module, optimizer=optimizer, lr=1e-2, jit="off")
    try:
        for s in range(4):            # K = 4 steps on global batches of 64
            b = slice(s * 64, (s + 1) * 64)
            np.testing.assert_allclose(dp.step(x[b], y[b]), single.step(x[b], y[b]), rtol=1e-5)
        if opt == "sgd":    # Adam divides by sqrt(v): where a gradient is ~0 it scales the
            for a, b in zip(dp.weights, single.weights):   # summation order's noise up
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        with pytest.raises(ValueError, match="does not split evenly"):
            dp.step(x[:63], y[:63])
    finally:
        dp.shutdown()
