""".dlbc bytes -> Module, for untrusted input.

Order of checks: total size, header (magic, version), msgpack parse under the Limits (msgpack
itself refuses over-long strings, bins, arrays and maps before allocating them, and ext types),
nesting depth, then every section field by field. Each field's type, range, index and enum value is
checked before the object that holds it is built, so the Module returned is structurally sound:
op codes exist, attributes have the kind their AttrSpec declares, names are valid, constant bytes
match their shapes. Whether the program makes sense (types, labels, callees) is the verifier's
job, which the loader runs next.
"""
from __future__ import annotations

from typing import Any

import msgpack

from ..errors import MalformedError, SourceLoc
from ..module import Block, Constant, ConstRef, Function, Imm, Instr, Module, Operand, Param, Reg
from ..ops import BY_CODE, AttrKind, AttrSpec
from ..types import TensorType
from . import format as fmt
from .format import MAX_LINE
from .limits import DEFAULT_LIMITS, Limits
from .reader import Reader, exhausted, malformed, type_name

_MAX_MAP_LEN = 64    # the format's maps have a handful of keys; newer minors may add a few


def decode(data: bytes, limits: Limits | None = None) -> Module:
    """Decode .dlbc bytes into a Module. Raises MalformedError naming the first mismatch, or
    ResourceExhausted when the file exceeds `limits` (DEFAULT_LIMITS when None). Does not verify."""
    lim = limits or DEFAULT_LIMITS
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise MalformedError(f"bytecode: expected bytes, got {type(data).__name__}")
    size = memoryview(data).nbytes
    if size > lim.max_total_bytes:
        raise exhausted("", f"the file has {size} bytes, more than the limit max_total_bytes "
                            f"= {lim.max_total_bytes}")
    data = bytes(data)    # no copy when it already is bytes
    _, minor = fmt.check_header(data)
    body = _unpack(memoryview(data)[fmt.HEADER.size:], lim)    # a view: no copy of a large file
    _check_depth(body, lim.max_depth)
    return _ModuleDecoder(Reader(lim), minor).module(body)


def _reject_ext(code: int, data: bytes) -> Any:
    raise MalformedError(f"bytecode: msgpack ext type {code} is not part of the format")


def _unpack(body: memoryview, lim: Limits) -> Any:
    if not body:
        raise MalformedError("bytecode: no sections after the header")
    u = msgpack.Unpacker(None, max_buffer_size=max(len(body), 1), raw=False, strict_map_key=True,
                         use_list=True, ext_hook=_reject_ext, max_ext_len=0,
                         max_str_len=lim.max_string_len,
                         max_bin_len=min(lim.max_constant_bytes, lim.max_total_bytes),
                         max_array_len=lim.max_array_len, max_map_len=_MAX_MAP_LEN)
    try:
        u.feed(body)
        obj = u.unpack()
        end = u.tell()
    except MalformedError:
        raise
    except msgpack.OutOfData:
        raise MalformedError("bytecode: the sections are truncated (msgpack data ends early)") from None
    except msgpack.StackError:
        raise exhausted("", "msgpack data nested too deeply") from None
    except ValueError as e:    # msgpack's over-limit and format errors, bad UTF-8
        if "max_ext_len" in str(e):
            raise MalformedError("bytecode: msgpack ext types are not part of the format") from None
        if "exceeds max" in str(e):
            raise exhausted("", f"msgpack: {e}") from None
        raise MalformedError(f"bytecode: the sections are not valid msgpack ({e})") from None
    except Exception as e:     # any other msgpack failure is a malformed file, never a crash
        raise MalformedError(f"bytecode: the sections are not valid msgpack "
                             f"({type(e).__name__}: {e})") from None
    if end != len(body):
        raise MalformedError(f"bytecode: {len(body) - end} bytes of trailing data after the sections")
    return obj


def _check_depth(obj: Any, max_depth: int) -> None:
    """Refuse containers nested deeper than `max_depth` (an explicit stack, no recursion)."""
    stack = [(obj, 1)]
    while stack:
        v, d = stack.pop()
        if d > max_depth:
            raise exhausted("", f"msgpack data nested {d} deep, more than the limit max_depth = "
                                f"{max_depth}")
        items = v if isinstance(v, list) else v.values() if isinstance(v, dict) else ()
        for x in items:
            if isinstance(x, (list, dict)):
                stack.append((x, d + 1))


class _ModuleDecoder:
    def __init__(self, reader: Reader, minor: int):
        self.r = reader
        self.lim = reader.limits
        self.minor = minor

    # -- sections ---------------------------------------------------------------------------

    def sections(self, body: Any, keys: tuple[str, ...], required: tuple[str, ...],
                 where: str) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise malformed(where, f"expected a map of sections, got {type_name(body)}")
        for k in body:
            if not isinstance(k, str):
                raise malformed(where, f"a section key is a {type_name(k)}, not a string")
            # a newer minor version may add sections this loader does not know; skip them
            if k not in keys and self.minor <= fmt.VERSION[1]:
                raise malformed(where, f"unknown section '{k}' (known: {', '.join(keys)})")
        for k in required:
            if k not in body:
                raise malformed(where, f"the section '{k}' is missing")
        return body

    def module(self, body: Any) -> Module:
        r = self.r
        sec = self.sections(body, fmt.SECTIONS, fmt.REQUIRED_SECTIONS, "")
        strings = r.array(sec[fmt.STRINGS], "strings", "the string table", self.lim.max_strings,
                          "max_strings")
        for i, s in enumerate(strings):
            if not isinstance(s, str):
                raise malformed("strings", f"entry {i} is a {type_name(s)}, not a string")
        r.strings = strings
        m = Module(r.name(sec[fmt.MODULE], "module", "the module name"))
        consts = r.array(sec[fmt.CONSTANTS], "constants", "the constant section",
                         self.lim.max_constants, "max_constants")
        for ci, c in enumerate(consts):
            const = self.constant(c, ci)
            if const.name in m.constants:
                raise malformed(f"constant {ci}", f"@{const.name} is defined twice")
            m.constants[const.name] = const
        funcs = r.array(sec[fmt.FUNCTIONS], "functions", "the function section",
                        self.lim.max_functions, "max_functions")
        for fi, f in enumerate(funcs):
            func = self.function(f, fi)
            if func.name in m.functions:
                raise malformed(f"function {fi}", f"@{func.name} is defined twice")
            m.functions[func.name] = func
        if sec.get(fmt.DEBUG) is not None:
            self.debug(sec[fmt.DEBUG], m)
        return m

    def constant(self, c: Any, ci: int) -> Constant:
        r = self.r
        where = f"constant {ci}"
        name_i, code, dims, raw = r.fixed(c, 4, where, "a constant")
        name = r.name(name_i, where, "the constant name")
        where = f"constant {ci} (@{name})"
        value = r.ndarray(code, dims, raw, where, "the constant")
        return Constant(name, TensorType(r.dtype(code, where, "the constant"), value.shape), value)

    # -- functions ---------------------------------------------------------------------------

    def function(self, f: Any, fi: int) -> Function:
        r, lim = self.r, self.lim
        where = f"function {fi}"
        name_i, params, results, blocks = r.fixed(f, 4, where, "a function")
        name = r.name(name_i, where, "the function name")
        where = f"function {fi} (@{name})"
        func = Function(name)
        for pi, p in enumerate(r.array(params, where, "the parameters", lim.max_params,
                                       "max_params")):
            pname, ptype = r.fixed(p, 2, where, f"parameter {pi}")
            func.params.append(Param(r.name(pname, where, f"the name of parameter {pi}"),
                                     r.type(ptype, where, f"the type of parameter {pi}")))
        for k, t in enumerate(r.array(results, where, "the result types", lim.max_params,
                                      "max_params")):
            func.results.append(r.type(t, where, f"result type {k}"))
        n_instrs = 0
        for bi, b in enumerate(r.array(blocks, where, "the blocks", lim.max_blocks, "max_blocks")):
            label_i, instrs = r.fixed(b, 2, f"{where}, block {bi}", "a block")
            block = Block(r.name(label_i, f"{where}, block {bi}", "the label"))
            instrs = r.array(instrs, f"{where}, block {bi}", "the instructions", lim.max_instrs,
                             "max_instrs")
            n_instrs += len(instrs)
            if n_instrs > lim.max_instrs:
                raise exhausted(where, f"more than max_instrs = {lim.max_instrs} instructions")
            for ii, ins in enumerate(instrs):
                block.instrs.append(self.instr(ins, f"{where}, block {bi}, instruction {ii}"))
            func.blocks.append(block)
        return func

    def instr(self, ins: Any, where: str) -> Instr:
        r, lim = self.r, self.lim
        code, results, operands, attrs, rtype = r.fixed(ins, 5, where, "an instruction")
        if isinstance(code, bool) or not isinstance(code, int) or code not in BY_CODE:
            raise malformed(where, f"unknown opcode {code!r}")
        op = BY_CODE[code]
        where = f"{where} ({op.name})"
        out = Instr(op.name)
        for k, res in enumerate(r.array(results, where, "the results", lim.max_results,
                                        "max_results")):
            out.results.append(r.name(res, where, f"result {k}"))
        for k, o in enumerate(r.array(operands, where, "the operands", lim.max_operands,
                                      "max_operands")):
            out.operands.append(self.operand(o, where, k))
        slots = r.array(attrs, where, "the attributes", lim.max_attrs, "max_attrs")
        if len(slots) > len(op.attrs):
            raise malformed(where, f"{len(slots)} attribute slots, but {op.name} has "
                                   f"{len(op.attrs)} attributes")
        for spec, slot in zip(op.attrs, slots):
            if slot is None:
                continue    # absent: the op's default applies
            (v,) = r.fixed(slot, 1, where, f"attribute '{spec.name}'")
            if v is None and spec.default is not None:
                # None is a value only where it is the default (`axes` absent = all axes); the
                # type rules of other attributes do not expect it
                raise malformed(where, f"attribute '{spec.name}' is nil, but {op.name} gives it no "
                                       f"such default")
            out.attrs[spec.name] = None if v is None else \
                self.attr(spec, v, where, f"attribute '{spec.name}'")
        if rtype is not None:
            out.result_type = r.type(rtype, where, "the result type")
        return out

    def operand(self, o: Any, where: str, k: int) -> Operand:
        r = self.r
        what = f"operand {k}"
        tag, payload = r.fixed(o, 2, where, what)
        if isinstance(tag, bool) or not isinstance(tag, int) or tag not in fmt.OPERAND_TAGS:
            known = ", ".join(f"{t} {n}" for t, n in fmt.OPERAND_TAGS.items())
            raise malformed(where, f"{what} has an unknown tag {tag!r} (known: {known})")
        if tag == fmt.TAG_REG:
            return Reg(r.name(payload, where, what))
        if tag == fmt.TAG_CONST:
            return ConstRef(r.name(payload, where, what))
        if tag == fmt.TAG_BOOL:
            return Imm(r.bool(payload, where, what))
        if tag == fmt.TAG_INT:
            return Imm(r.int(payload, where, what))
        return Imm(r.float(payload, where, what))

    def attr(self, spec: AttrSpec, v: Any, where: str, what: str) -> Any:
        """One attribute value, read as its AttrSpec kind says (mirrors encode._attr)."""
        r, k = self.r, spec.kind
        if k is AttrKind.INT:
            return r.int(v, where, what)
        if k is AttrKind.INTS:
            return [r.int(x, where, what)
                    for x in r.array(v, where, what, self.lim.max_list_len, "max_list_len")]
        if k is AttrKind.FLOAT:
            if isinstance(v, float):
                return v
            if isinstance(v, bool) or not isinstance(v, (int, bytes)):
                raise malformed(where, f"{what} must be a number, got {type_name(v)}")
            return r.int(v, where, what)
        if k is AttrKind.BOOL:
            return r.bool(v, where, what)
        if k is AttrKind.DTYPE:
            return r.dtype(v, where, what)
        if k is AttrKind.STR:
            return r.string(v, where, what)
        if k in (AttrKind.LABEL, AttrKind.FUNC):
            return r.name(v, where, what)
        if k is AttrKind.SHAPE:
            dims = []
            for x in r.array(v, where, what, self.lim.max_list_len, "max_list_len"):
                if isinstance(x, list):
                    (i,) = r.fixed(x, 1, where, f"a dim name of {what}")
                    dims.append(r.dim_name(i, where, f"a dim name of {what}"))
                else:
                    dims.append(r.int(x, where, what))
            return dims
        if k is AttrKind.TYPE:
            return r.type(v, where, what)
        if k is AttrKind.TENSOR:
            code, dims, raw = r.fixed(v, 3, where, what)
            return r.ndarray(code, dims, raw, where, what)
        raise malformed(where, f"{what} has kind {k.value}, which this format cannot carry")

    # -- debug -------------------------------------------------------------------------------

    def debug(self, d: Any, m: Module) -> None:
        """Attach [line, col] locations; their file is the debug section's source."""
        r = self.r
        sec = self.sections(d, fmt.DEBUG_KEYS, fmt.DEBUG_KEYS, "debug")
        src = sec[fmt.DEBUG_SOURCE]
        source = None if src is None else r.string(src, "debug", "the source file")
        consts = list(m.constants.values())
        locs = r.fixed(sec[fmt.DEBUG_CONSTANTS], len(consts), "debug", "the constant locations")
        for c, loc in zip(consts, locs):
            c.loc = self.loc(loc, source, f"debug, constant @{c.name}")
        funcs = list(m.functions.values())
        entries = r.fixed(sec[fmt.DEBUG_FUNCTIONS], len(funcs), "debug", "the function locations")
        for f, e in zip(funcs, entries):
            where = f"debug, function @{f.name}"
            floc, blocks = r.fixed(e, 2, where, "a function's locations")
            f.loc = self.loc(floc, source, where)
            blocks = r.fixed(blocks, len(f.blocks), where, "the block locations")
            for bi, (b, bl) in enumerate(zip(f.blocks, blocks)):
                bl = r.fixed(bl, len(b.instrs), f"{where}, block {bi}", "the instruction locations")
                for ii, (ins, loc) in enumerate(zip(b.instrs, bl)):
                    ins.loc = self.loc(loc, source, f"{where}, block {bi}, instruction {ii}")
        m.source = source

    def loc(self, v: Any, source: str | None, where: str) -> SourceLoc | None:
        if v is None:
            return None
        if source is None:
            raise malformed(where, "a location, but the debug section names no source file")
        line, col = self.r.fixed(v, 2, where, "a location")
        return SourceLoc(source, self.r.count(line, where, "the line", MAX_LINE),
                         self.r.count(col, where, "the column", MAX_LINE))

