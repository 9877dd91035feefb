"""Shards on disk: which files are input shards, how one is read, and how its outputs are written.

An input shard holds a batch of samples for one entry function: the leading axis of every array
is the sample axis. `.npz` files name their arrays after the entry's parameters (as `dlvm run
--inputs` reads them), a `.npy` file is the one array of a one-parameter entry, and a `.parquet`
file has one column per parameter (one row per sample; list cells are stacked into arrays).

Each input shard NAME.ext gets one output shard DIR/NAME.npz with the entry's results as `out0`,
`out1`, ... (as `dlvm run --out` writes them). Outputs are written to a temporary name in DIR and
renamed into place, so a file under its final name is always complete: a job killed at any moment
leaves no half-written shard, and a rerun skips the shards that are already there.
"""
from __future__ import annotations

import glob
import os
import uuid
import zipfile
from pathlib import Path

import numpy as np

SHARD_SUFFIXES = (".npz", ".npy", ".parquet")
TEMP_PREFIX = ".tmp-"


class ShardError(Exception):
    """A shard that cannot be read, or whose arrays do not fit the entry function."""


def expand_inputs(items: list[str]) -> list[Path]:
    """Input shards from files, directories (every shard file in them, sorted) and glob patterns."""
    found: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix in SHARD_SUFFIXES and p.is_file())
        elif path.is_file():
            if path.suffix not in SHARD_SUFFIXES:
                raise ShardError(f"{item}: not a shard (expected {', '.join(SHARD_SUFFIXES)})")
            found.append(path)
        else:
            matches = sorted(Path(m) for m in glob.glob(item) if Path(m).suffix in SHARD_SUFFIXES)
            if not matches:
                raise ShardError(f"{item}: no such file, directory or matching shards")
            found += matches
    unique = list(dict.fromkeys(p.resolve() for p in found))
    by_name: dict[str, Path] = {}
    for p in unique:
        other = by_name.setdefault(p.stem, p)
        if other != p:
            raise ShardError(f"{other} and {p} would both write {p.stem}.npz: rename one")
    return unique


def output_path(out_dir: Path, shard: Path) -> Path:
    return out_dir / f"{shard.stem}.npz"


def read_shard(path: Path, params: list[tuple[str, np.dtype]]) -> dict[str, np.ndarray]:
    """The arrays of one shard, by parameter name; every one has the same number of samples."""
    names = [n for n, _ in params]
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        elif path.suffix == ".npy":
            if len(names) != 1:
                raise ShardError(f"{path}: a .npy shard holds one array, but the entry takes "
                                 f"{len(names)} ({', '.join(names)}): use .npz")
            arrays = {names[0]: np.load(path, allow_pickle=False)}
        else:
            arrays = _read_parquet(path, params)
    except ShardError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ShardError(f"{path}: cannot read: {e}") from None
    missing = [n for n in names if n not in arrays]
    extra = sorted(set(arrays) - set(names))
    if missing or extra:
        raise ShardError(f"{path}: " + "; ".join(filter(None, [
            "missing " + ", ".join(missing) if missing else "",
            "no parameter named " + ", ".join(extra) if extra else ""]))
            + " (parameters: " + ", ".join(names) + ")")
    counts = {n: (a.shape[0] if a.ndim else None) for n, a in arrays.items()}
    if None in counts.values() or len(set(counts.values())) > 1:
        raise ShardError(f"{path}: every array needs the same leading (sample) axis, got "
                         + ", ".join(f"{n}: {a.shape}" for n, a in arrays.items()))
    return {n: arrays[n] for n in names}


def _read_parquet(path: Path, params: list[tuple[str, np.dtype]]) -> dict[str, np.ndarray]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ShardError(f"{path}: reading Parquet needs pyarrow (pip install 'dlvm[ray]')") \
            from None
    table = pq.read_table(path)
    arrays = {}
    for name in table.column_names:
        column = table.column(name)
        dtype = dict(params).get(name)
        try:
            values = column.to_numpy()
        except Exception:   # noqa: BLE001 - nested lists: stack them row by row
            values = None
        if values is None or values.dtype == object:
            values = np.stack([np.asarray(v) for v in column.to_pylist()]) if len(column) else \
                np.zeros((0,))
        # Parquet lists come back as Python floats and ints: the entry's dtype is the truth
        arrays[name] = values.astype(dtype, copy=False) if dtype is not None else values
    return arrays


def write_outputs(path: Path, outputs: list[np.ndarray]) -> None:
    """Write `out0`, `out1`, ... to `path` atomically: a temporary file in the same directory,
    flushed to disk, then renamed over `path`."""
    temp = path.with_name(f"{TEMP_PREFIX}{path.stem}-{os.getpid()}-{uuid.uuid4().hex[:8]}.npz")
    try:
        with open(temp, "wb") as f:
            np.savez(f, **{f"out{i}": o for i, o in enumerate(outputs)})
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    finally:
        if temp.exists():
            temp.unlink()


def is_complete(path: Path, n_outputs: int) -> bool:
    """Whether `path` is a finished output shard of an entry with `n_outputs` results."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return set(z.files) == {f"out{i}" for i in range(n_outputs)}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        return False


def remove_stale_temporaries(out_dir: Path) -> int:
    """Temporaries a killed writer left behind (never a finished shard): removed on the next run."""
    stale = list(out_dir.glob(f"{TEMP_PREFIX}*.npz"))
    for p in stale:
        p.unlink(missing_ok=True)
    return len(stale)
