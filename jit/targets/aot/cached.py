"""Libraries of whole programs kept in the code cache, for the VM's native tier.

    directory = cached_library(module)     # built on a miss; the same directory on a hit

The key is the program's bytecode with everything that decides the generated code (the lowering's
sources, the library's runtime and generator, the host CPU, the C compiler, the dlvm version), so
a second process running the same program loads the library at once. A library is built in a
temporary directory and renamed into place, so readers never see half of one.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

from isa.module import Module

from .build import MANIFEST, AotError, compile_library, find_cc

NAME = "dlvm_native"      # the symbol prefix of every cached library


@cache
def _generator_fingerprint() -> str:
    h = hashlib.sha256()
    here = Path(__file__).parent
    # the generator, its runtime, and the JIT's own modules it reads (region forming, kernel
    # building, the row split): editing any of them must not load a library built before
    jit = here.parent.parent
    for p in sorted(here.glob("*.py")) + sorted((here / "runtime").iterdir()) + \
            sorted(jit.glob("*.py")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def library_key(module: Module) -> str:
    from isa.bytecode import encode
    from jit.cache import dlvm_version, lowering_fingerprint
    from jit.llvm import target as host
    h = hashlib.sha256()
    t = host.host()
    for part in (encode(module), _generator_fingerprint().encode(), lowering_fingerprint().encode(),
                 f"{t.triple}|{t.cpu}|{t.features}|{find_cc()}|{dlvm_version()}".encode()):
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()[:40]


def cached_library(module: Module, cache_dir: str | os.PathLike | None = None) -> Path:
    """The directory of `module`'s library in the cache, built there if it is not; AotError
    when the program cannot be compiled ahead of time or there is no C compiler."""
    from jit.cache import default_dir
    root = (Path(cache_dir) if cache_dir is not None else default_dir()) / "native"
    final = root / library_key(module)
    if (final / MANIFEST).is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale(root)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".tmp-"))
    try:
        compile_library(module, tmp, name=NAME, vm_fallback=True, archive=False)
        # the sources: only `dlvm aot` keeps them
        shutil.rmtree(tmp / "src", ignore_errors=True)
        try:
            os.replace(tmp, final)
        except OSError:
            if not (final / MANIFEST).is_file():    # not a racing build that won: a real failure
                raise
    except OSError as e:
        raise AotError(f"cannot write the library into the cache {root}: {e}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


STALE_S = 3600.0


def _remove_stale(root: Path) -> None:
    """Builds a process left behind when it exited mid-build (the background compiler's thread
    does not keep a process alive), after an hour."""
    import time
    for d in root.glob(".tmp-*"):
        try:
            if time.time() - d.stat().st_mtime > STALE_S:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass
