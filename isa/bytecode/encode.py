"""Module -> .dlbc bytes.

The encoder walks the module in its own order (constants and functions in module order, blocks and
instructions in program order) and interns every string on first sight, so the same module always
gives the same bytes. Attributes are written by the kind their op's AttrSpec declares, in the op's
attribute order, so the codec never names an op.

A module that cannot be written (an unknown op, an attribute the op does not have, a value of the
wrong kind, a constant whose value does not match its type) raises InvalidError: such a module
would fail the verifier anyway, and the format has no way to carry it.
"""
from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from ..dtypes import DType, dtype_from_numpy
from ..errors import InvalidError, SourceLoc
from ..module import Constant, ConstRef, Function, Imm, Instr, Module, Reg
from ..ops import OPS, AttrKind, AttrSpec
from ..types import TensorType
from . import format as fmt


class _Strings:
    """The string table: each distinct string once, numbered in order of first use."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, s: str) -> int:
        if not isinstance(s, str):
            raise InvalidError(f"bytecode: expected a name or string, got {type(s).__name__}")
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.index)
        return i

    def table(self) -> list[str]:
        return list(self.index)


def encode(module: Module, debug: bool = True) -> bytes:
    """Serialize `module` to .dlbc bytes. With `debug`, source locations and the source file name
    are kept (see specs/bytecode.md); without, they are dropped."""
    s = _Strings()
    body: dict[str, Any] = {fmt.MODULE: s(module.name)}
    constants = [_constant(c, s) for c in module.constants.values()]
    functions = [_function(f, s) for f in module.functions.values()]
    body[fmt.STRINGS] = None    # placeholder that keeps the key order fixed; filled below
    body[fmt.CONSTANTS] = constants
    body[fmt.FUNCTIONS] = functions
    if debug:
        body[fmt.DEBUG] = _debug(module, s)
    body[fmt.STRINGS] = s.table()
    packed = msgpack.packb(body, use_bin_type=True, use_single_float=False, strict_types=True)
    return fmt.pack_header() + packed


# ---- values -------------------------------------------------------------------------------

def _int(v: Any, what: str) -> int | bytes:
    if type(v) is not int:
        raise InvalidError(f"bytecode: {what} must be an int, got {type(v).__name__}")
    return fmt.encode_int(v)


def _type(t: Any, s: _Strings, what: str) -> list:
    if not isinstance(t, TensorType) or not isinstance(t.dtype, DType):
        raise InvalidError(f"bytecode: {what} must be a tensor type, got {type(t).__name__}")
    return [t.dtype.code, [_dim(d, s, what) for d in t.shape]]


def _dim(d: Any, s: _Strings, what: str) -> Any:
    if d is None:
        return None
    if isinstance(d, str):
        return [s(d)]
    if type(d) is int and d >= 0:
        return fmt.encode_int(d)
    raise InvalidError(f"bytecode: {what} has a bad dim {d!r}")


def _array(value: Any, dtype: DType | None, what: str) -> tuple[DType, list[int], bytes | list]:
    """dtype code, shape and little-endian C-order bytes of an array (byte-swapped and made
    contiguous when needed); for str, its elements in C order as a list of strings."""
    if not isinstance(value, np.ndarray):
        raise InvalidError(f"bytecode: {what} must be a numpy array, got {type(value).__name__}")
    own = dtype_from_numpy(value.dtype.newbyteorder("="))
    if own is None or (dtype is not None and own is not dtype):
        want = dtype.text if dtype is not None else "a dlvm dtype"
        raise InvalidError(f"bytecode: {what} holds {value.dtype}, not {want}")
    if own.is_str:
        return own, [int(n) for n in value.shape], _strings(value, what)
    little = np.ascontiguousarray(value, dtype=own.np.newbyteorder("<"))
    return own, [int(n) for n in value.shape], little.tobytes()


def _strings(value: np.ndarray, what: str) -> list[str]:
    """The elements of a str array as plain Python str (msgpack str, UTF-8); never pickle."""
    out = []
    for i, x in enumerate(value.reshape(-1)):
        if not isinstance(x, str):
            raise InvalidError(f"bytecode: {what}: element {i} is a {type(x).__name__}, not a str")
        try:
            x.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidError(f"bytecode: {what}: element {i} holds a lone surrogate, which "
                               f"UTF-8 cannot encode") from None
        out.append(str(x))      # np.str_ and other subclasses: msgpack's strict_types wants str
    return out


def _constant(c: Constant, s: _Strings) -> list:
    what = f"constant @{c.name}"
    t = c.type
    if not isinstance(t, TensorType) or not t.is_static:
        raise InvalidError(f"bytecode: {what} must have a static type, got {t}")
    dtype, shape, raw = _array(c.value, t.dtype, what)
    if tuple(shape) != t.shape:
        raise InvalidError(f"bytecode: {what} holds shape {shape}, not {t}")
    return [s(c.name), dtype.code, shape, raw]


# ---- functions ----------------------------------------------------------------------------

def _function(f: Function, s: _Strings) -> list:
    what = f"function @{f.name}"
    params = [[s(p.name), _type(p.type, s, f"{what}, parameter %{p.name}")] for p in f.params]
    results = [_type(t, s, f"{what}, result {k}") for k, t in enumerate(f.results)]
    blocks = []
    for bi, b in enumerate(f.blocks):
        instrs = [_instr(ins, s, f"{what}, block {bi}, instruction {ii} ({ins.op})")
                  for ii, ins in enumerate(b.instrs)]
        blocks.append([s(b.label), instrs])
    return [s(f.name), params, results, blocks]


def _instr(ins: Instr, s: _Strings, what: str) -> list:
    op = OPS.get(ins.op)
    if op is None:
        raise InvalidError(f"bytecode: {what}: unknown op '{ins.op}'")
    for name in ins.attrs:
        if op.attr(name) is None:
            raise InvalidError(f"bytecode: {what}: {op.name} has no attribute '{name}'")
    attrs: list[Any] = []
    for spec in op.attrs:
        if spec.name in ins.attrs:
            v = ins.attrs[spec.name]
            if v is None and spec.default is not None:
                raise InvalidError(f"bytecode: {what}: attribute '{spec.name}' is None, but "
                                   f"{op.name} gives it no such default")
            attrs.append([None if v is None else _attr(spec, v, s, f"{what}, attribute '{spec.name}'")])
        else:
            attrs.append(None)
    while attrs and attrs[-1] is None:    # trailing absent attributes need no slot
        attrs.pop()
    rtype = None if ins.result_type is None else _type(ins.result_type, s, f"{what}, result type")
    return [op.code, [s(r) for r in ins.results], [_operand(o, s, what) for o in ins.operands],
            attrs, rtype]


def _operand(o: Any, s: _Strings, what: str) -> list:
    if isinstance(o, Reg):
        return [fmt.TAG_REG, s(o.name)]
    if isinstance(o, ConstRef):
        return [fmt.TAG_CONST, s(o.name)]
    if isinstance(o, Imm):
        v = o.value
        if type(v) is bool:
            return [fmt.TAG_BOOL, v]
        if type(v) is int:
            return [fmt.TAG_INT, fmt.encode_int(v)]
        if type(v) is float:
            return [fmt.TAG_FLOAT, v]
        raise InvalidError(f"bytecode: {what}: immediate {v!r} is not a bool, int or float")
    raise InvalidError(f"bytecode: {what}: operand {o!r} is not a register, constant or immediate")


def _attr(spec: AttrSpec, v: Any, s: _Strings, what: str) -> Any:
    """One attribute value, written as its kind says (the decoder mirrors this table)."""
    k = spec.kind
    if k is AttrKind.INT:
        return _int(v, what)
    if k is AttrKind.INTS:
        if not isinstance(v, list):
            raise InvalidError(f"bytecode: {what} must be a list of ints")
        return [_int(x, what) for x in v]
    if k is AttrKind.FLOAT:
        if type(v) not in (float, int):
            raise InvalidError(f"bytecode: {what} must be a number")
        return v if type(v) is float else fmt.encode_int(v)
    if k is AttrKind.BOOL:
        if type(v) is not bool:
            raise InvalidError(f"bytecode: {what} must be a bool")
        return v
    if k is AttrKind.DTYPE:
        if not isinstance(v, DType):
            raise InvalidError(f"bytecode: {what} must be a dtype")
        return v.code
    if k in (AttrKind.STR, AttrKind.LABEL, AttrKind.FUNC):
        return s(v)
    if k is AttrKind.SHAPE:
        if not isinstance(v, list):
            raise InvalidError(f"bytecode: {what} must be a list of dims")
        return [[s(x)] if isinstance(x, str) else _int(x, what) for x in v]
    if k is AttrKind.TYPE:
        return _type(v, s, what)
    if k is AttrKind.TENSOR:
        dtype, shape, raw = _array(v, None, what)
        return [dtype.code, shape, raw]
    raise InvalidError(f"bytecode: {what}: attribute kind {k} has no encoding")


# ---- debug --------------------------------------------------------------------------------

def _debug(module: Module, s: _Strings) -> dict[str, Any]:
    """Locations as [line, col] (or nil); the file of every location is the module's source. A
    module without `source` takes the file of its first location."""
    source = module.source
    if source is None:
        source = next((loc.file for loc in _locs(module) if loc is not None), None)
    return {
        fmt.DEBUG_SOURCE: None if source is None else s(source),
        fmt.DEBUG_CONSTANTS: [_loc(c.loc) for c in module.constants.values()],
        fmt.DEBUG_FUNCTIONS: [[_loc(f.loc), [[_loc(i.loc) for i in b.instrs] for b in f.blocks]]
                              for f in module.functions.values()],
    }


def _locs(module: Module):
    for c in module.constants.values():
        yield c.loc
    for f in module.functions.values():
        yield f.loc
        for b in f.blocks:
            for i in b.instrs:
                yield i.loc


def _loc(loc: SourceLoc | None) -> list[int] | None:
    if loc is None:
        return None
    for v in (loc.line, loc.col):
        if type(v) is not int or not 0 <= v < fmt.MAX_LINE:
            raise InvalidError(f"bytecode: location {loc} has a line or column outside "
                               f"0..{fmt.MAX_LINE - 1}")
    return [loc.line, loc.col]
