"""The code cache: compiled object code in memory and on disk.

Key: SHA-256 of the kernel IR text, the variant spec, the lowering's source code, the host
target (triple, CPU name, features), the llvmlite version and the dlvm version, so that any
change to what would be generated selects a different entry. Entries are written atomically
(temporary file, then os.replace), and carry a checksum: a truncated or corrupt file is ignored
and rebuilt, never loaded.

The directory is, in order: the `cache_dir` given to Jit, $DLVM_CACHE_DIR, or the user cache dir
($XDG_CACHE_HOME or ~/.cache)/dlvm/jit.
"""
from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from functools import cache
from pathlib import Path

_MAGIC = b"DLVMOBJ1"


@cache
def lowering_fingerprint() -> str:
    """Hash of the sources that decide what a kernel compiles to (the LLVM backend), so that
    editing the lowering can never load stale code, without anyone remembering to bump a number."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    # the shared LLVM emission and the CPU target (its compiler and native kernels)
    for p in sorted((here / "llvm").glob("*.py")) + sorted((here / "targets" / "cpu").glob("*.py")):
        h.update(p.relative_to(here).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def dlvm_version() -> str:
    try:
        from importlib.metadata import version
        return version("dlvm")
    except Exception:      # not installed: the source tree's version is unknown
        return "unknown"


def default_dir() -> Path:
    env = os.environ.get("DLVM_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dlvm" / "jit"


def cache_key(kernel_text: str, spec_text: str, target_key: str) -> str:
    h = hashlib.sha256()
    for part in (kernel_text, spec_text, lowering_fingerprint(), target_key, dlvm_version()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class DiskCache:
    def __init__(self, directory: str | os.PathLike | None):
        self.dir = Path(directory) if directory is not None else default_dir()
        self.hits = 0
        self.misses = 0
        self.corrupt = 0

    def path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.o"

    def get(self, key: str) -> tuple[bytes, int] | None:
        """(object code, scratch slots) of `key`, or None when absent or corrupt."""
        p = self.path(key)
        try:
            data = p.read_bytes()
        except OSError:
            self.misses += 1
            return None
        head = len(_MAGIC) + 32 + 4
        if len(data) < head or data[:len(_MAGIC)] != _MAGIC:
            self.corrupt += 1
            return None
        digest = data[len(_MAGIC):len(_MAGIC) + 32]
        (slots,) = struct.unpack("<I", data[head - 4:head])
        payload = data[head:]
        if hashlib.sha256(payload).digest() != digest:
            self.corrupt += 1
            return None
        self.hits += 1
        return payload, slots

    def put(self, key: str, obj: bytes, slots: int) -> None:
        p = self.path(key)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            blob = _MAGIC + hashlib.sha256(obj).digest() + struct.pack("<I", slots) + obj
            fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-", suffix=".o")
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            try:
                os.replace(tmp, p)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError:
            pass      # a read-only or full cache dir only costs recompiling next time
