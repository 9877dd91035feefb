"""Mutated bytecode never crashes the loader: `decode` and then `verify_module` raise only dlvm's
own errors (MalformedError, ResourceExhausted, InvalidError), and finish quickly.

Two mutators: byte-level (bit flips, truncation, spliced random bytes, zeroed runs, msgpack marker
bytes) tests the msgpack layer and the header; structure-level (replace a random field of the
decoded msgpack tree with a random value, then re-pack) reaches the section decoder and the
verifier with files that are valid msgpack. Every loop is seeded, and hypothesis is derandomized,
so a failure reproduces.
"""
from __future__ import annotations

import copy
import random
import struct
import time
from typing import Any

import msgpack
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isa import DlvmError, DType, SourceLoc, verify_module
from isa.builder import ModuleBuilder
from isa.bytecode import MAGIC, VERSION, decode, encode
from isa.module import Module, Reg

SLOW_S = 2.0     # one decode + verify of a mutated file must take less than this


# ---- the corpus ------------------------------------------------------------------------------

def _mlp() -> Module:
    mb = ModuleBuilder("mlp")
    w = mb.constant("w", np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    b = mb.constant("b", np.array([0.5, -0.5, 1.0], np.float32))
    f = mb.function("main", [("x", "f32[N, 4]")], ["f32[N, 3]"])
    h = f.add(f.matmul(f.arg("x"), w), b)
    f.ret(f.softmax(f.relu(h, result_type="f32[N, 3]"), axis=-1))
    return mb.finish()


def _loop() -> Module:
    mb = ModuleBuilder("loop")
    f = mb.function("main", [("n", "i64[]")], ["i64[]"])
    f.const(0, "i64[]", into="i")
    f.jmp("head")
    f.label("head")
    f.br(f.lt(Reg("i"), f.arg("n")), "body", "done")
    f.label("body")
    f.add(Reg("i"), 1, into="i")
    f.jmp("head")
    f.label("done")
    f.ret(Reg("i"))
    return mb.finish()


def _calls() -> Module:
    mb = ModuleBuilder("calls")
    g = mb.function("affine", [("x", "f32[N, 3]"), ("s", "f32[]")], ["f32[N, 3]", "f32[]"])
    y = g.add(g.mul(g.arg("x"), g.arg("s")), 1.5)
    g.ret(y, g.reduce_max(y, axes=[0, 1], keepdims=False))
    f = mb.function("main", [("x", "f32[N, 3]")], ["f32[N, 3]"])
    y, m = f.call("affine", f.arg("x"), f.const(2.0, "f32[]"), n_results=2)
    f.assert_(f.gt(m, -1e30), "finite")
    f.ret(f.select(f.isnan(y), 0.0, y))
    return mb.finish()


def _shapes() -> Module:
    mb = ModuleBuilder("shapes")
    k = mb.constant("k", np.ones((2, 1, 3, 3), np.float32))
    mb.constant("mask", np.array([True, False, True]))
    mb.constant("idx", np.array([2, 0], np.int64))
    f = mb.function("main", [("x", "f32[1, 1, 6, 6]")], ["f32[2, 9]"])
    y = f.conv2d(f.arg("x"), k, strides=[1, 1], pads=[0, 0, 0, 0])
    y = f.maxpool2d(y, kernel=[2, 2], strides=[1, 1])
    y = f.reshape(y, shape=[2, -1])
    y = f.cast(f.cast(y, to="f64"), to="f32")
    y = f.transpose(f.transpose(y, perm=[1, 0]), perm=[1, 0])
    f.ret(y)
    return mb.finish()


def _with_locs(m: Module) -> Module:
    m.source = "fuzz.dlasm"
    for k, c in enumerate(m.constants.values()):
        c.loc = SourceLoc("fuzz.dlasm", k + 1, 1)
    for fi, f in enumerate(m.functions.values()):
        f.loc = SourceLoc("fuzz.dlasm", 100 * fi, 1)
        for b in f.blocks:
            for ii, ins in enumerate(b.instrs):
                ins.loc = SourceLoc("fuzz.dlasm", 100 * fi + ii + 1, 3)
    return m


CORPUS: list[bytes] = [encode(_with_locs(make())) for make in (_mlp, _loop, _calls, _shapes)] + \
    [encode(make(), debug=False) for make in (_mlp, _calls)]
BODIES: list[Any] = [msgpack.unpackb(data[8:], raw=False) for data in CORPUS]

# msgpack markers that change how the following bytes are read: nil, false, true, the
# never-used 0xc1, bin/ext/float/uint64/str/array/map headers, fixarray and fixmap
MARKERS = (0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc6, 0xc7, 0xcb, 0xcf, 0xd9, 0xdc, 0xdd, 0xde, 0xdf,
           0x90, 0x9f, 0x80, 0x8f, 0x00, 0x7f, 0xff)


def check(data: bytes) -> None:
    """The property: decode then verify raise only DlvmError, and quickly."""
    start = time.perf_counter()
    try:
        verify_module(decode(data))
    except DlvmError:
        pass
    elapsed = time.perf_counter() - start
    assert elapsed < SLOW_S, f"decode + verify took {elapsed:.2f} s"


# ---- byte-level mutation ---------------------------------------------------------------------

def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    d = bytearray(data)
    kind = rng.randrange(5)
    if kind == 0:                                   # bit flips
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(d))
            d[i] ^= 1 << rng.randrange(8)
    elif kind == 1:                                 # truncation
        del d[rng.randrange(len(d)):]
    elif kind == 2:                                 # spliced random bytes
        i = rng.randrange(len(d) + 1)
        d[i:i] = rng.randbytes(rng.randint(1, 12))
    elif kind == 3:                                 # a zeroed run
        i = rng.randrange(len(d))
        n = rng.randint(1, 16)
        d[i:i + n] = bytes(len(d[i:i + n]))
    else:                                           # a msgpack marker byte in the body
        d[rng.randrange(8, len(d))] = rng.choice(MARKERS)
    return bytes(d)


def test_seeded_byte_mutations():
    rng = random.Random(20240601)
    for _ in range(2000):
        check(mutate_bytes(rng.choice(CORPUS), rng))


# ---- structure-level mutation ----------------------------------------------------------------

def _random_value(rng: random.Random) -> Any:
    return rng.choice([
        None, True, False, 0, 1, -1, 2, 3, 7, 64, 96, 114, 255, -100, 1 << 62, -(1 << 63),
        (1 << 64) - 1, b"", b"\x00" * 9, b"\xff" * 16, b"\x01\x02", 0.5, float("nan"),
        float("-inf"), -0.0, "", "x", "main", [], [0], [1, 2], [[0]], [None], [0, [1]], {},
        {"source": 0}, rng.randrange(-3, 200),
    ])


def _similar_value(old: Any, rng: random.Random) -> Any:
    """A value of the same msgpack type as `old`, so that the file still decodes far enough to
    reach the verifier (an index one off, a flipped bool, a shortened list or bin)."""
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        v = rng.choice([old + 1, old - 1, 0, -1, -old, rng.randrange(0, 128), (1 << 64) - 1, 1 << 70])
        # too wide for msgpack: the format's wide-int form (signed little-endian bytes)
        return v if -(1 << 63) <= v < (1 << 64) else v.to_bytes(16, "little", signed=True)
    if isinstance(old, float):
        return rng.choice([-old, 0.0, float("nan"), 1e300])
    if isinstance(old, bytes):
        return old[:rng.randrange(len(old) + 1)] + rng.randbytes(rng.randrange(3))
    if isinstance(old, list) and old:
        out = list(old)
        rng.shuffle(out)
        return out[:rng.randrange(len(out) + 1)]
    return _random_value(rng)


def _fields(tree: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) of the tree, so that a mutation can replace or delete that field."""
    out = []
    stack = [tree]
    while stack:
        v = stack.pop()
        items = enumerate(v) if isinstance(v, list) else v.items() if isinstance(v, dict) else ()
        for k, x in items:
            out.append((v, k))
            stack.append(x)
    return out


def mutate_structure(body: Any, rng: random.Random) -> bytes:
    tree = copy.deepcopy(body)
    for _ in range(rng.randint(1, 3)):
        container, key = rng.choice(_fields(tree))
        r = rng.random()
        if r < 0.4:
            container[key] = _similar_value(container[key], rng)
        elif r < 0.7:
            container[key] = _random_value(rng)
        elif r < 0.85 and isinstance(container, list):
            del container[key]
        else:                                       # duplicate a sibling: repeated names, extra slots
            if isinstance(container, list):
                container.insert(key, copy.deepcopy(container[key]))
            else:
                container[key] = copy.deepcopy(container[key])
    return MAGIC + struct.pack("<HH", *VERSION) + msgpack.packb(tree, use_bin_type=True)


def test_seeded_structure_mutations():
    rng = random.Random(7)
    for _ in range(2000):
        check(mutate_structure(rng.choice(BODIES), rng))


# ---- hypothesis: shrinking byte edits --------------------------------------------------------

_edit = st.tuples(st.sampled_from(["flip", "cut", "splice", "zero", "set"]),
                  st.integers(0, 1 << 16), st.binary(min_size=1, max_size=8))


def apply_edits(data: bytes, edits: list[tuple[str, int, bytes]]) -> bytes:
    d = bytearray(data)
    for kind, pos, payload in edits:
        i = pos % (len(d) + 1)
        if kind == "flip" and i < len(d):
            d[i] ^= payload[0] or 1
        elif kind == "cut":
            del d[i:i + len(payload) * 4]
        elif kind == "splice":
            d[i:i] = payload
        elif kind == "zero":
            d[i:i + len(payload)] = bytes(len(d[i:i + len(payload)]))
        elif kind == "set" and i < len(d):
            d[i] = MARKERS[payload[0] % len(MARKERS)]
    return bytes(d)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(CORPUS))), st.lists(_edit, min_size=1, max_size=6))
def test_hypothesis_byte_edits(which, edits):
    check(apply_edits(CORPUS[which], edits))


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(BODIES))), st.integers(0, 1 << 32))
def test_hypothesis_structure_edits(which, seed):
    check(mutate_structure(BODIES[which], random.Random(seed)))


def test_corpus_is_valid():
    """The mutations start from files that decode and verify, so they test the edge, not junk."""
    for data in CORPUS:
        verify_module(decode(data))
    assert DType.F32.code in {c[1] for body in BODIES for c in body["constants"]}
