"""The `.dlasm` parser: text -> isa.Module, syntax only (the verifier judges meaning).

    file     := [module NAME] [source "FILE"] (constant | function)*
    constant := const @NAME : TYPE = (file "PATH" | LITERAL) [loc(L:C)]
    function := func @NAME(%p: TYPE, ...) -> (TYPE | (TYPE, ...)) [loc(L:C)] {
                  (LABEL: | instruction)*
                }

Instructions before the first label form the block `entry`. Instruction lines are parsed by
instructions.InstrParser from the op table. Every Instr, Function and Constant gets the location
of its first token, or the one its `loc(L:C)` suffix names; a `source` directive makes those
locations name another file (the disassembler writes it so that debug info survives a text
round trip).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from isa.dtypes import dtype_from_numpy
from isa.module import Block, Constant, Function, Module, Param
from isa.types import TensorType

from .cursor import Cursor
from .instructions import InstrParser
from .lexer import Token, tokenize
from .literals import LiteralError, fill_array, tree_to_array


def is_pseudo_file(filename: str) -> bool:
    """`<input>`, `<stdin>`, `<repl>`: names that stand for text with no file behind it."""
    return filename.startswith("<")


class ModuleParser:
    def __init__(self, text: str, filename: str, base_dir: str | Path | None):
        text = text.removeprefix("\ufeff")
        lines = [ln.rstrip("\r") for ln in text.split("\n")]
        self.cur = Cursor(tokenize(text, filename), filename, lines)
        self.filename = filename
        self.base_dir = Path(base_dir) if base_dir is not None else Path(".")
        self.instrs = InstrParser(self.cur)
        default = "main" if is_pseudo_file(filename) else Path(filename).stem or "main"
        self.module = Module(default, source=None if is_pseudo_file(filename) else filename)
        self.first_seen: dict[tuple[str, str], Token] = {}   # (kind, name) -> defining token

    def parse(self) -> Module:
        cur = self.cur
        cur.skip_newlines()
        if cur.at_word("module"):
            cur.advance()
            self.module.name = cur.label("a module name")
            cur.expect_newline("the module name")
            cur.skip_newlines()
        if cur.at_word("source"):
            cur.advance()
            src = cur.expect("STRING", 'a file name in quotes after source').value
            self.module.source = src
            cur.loc_file = src
            cur.expect_newline("the source directive")
        while True:
            cur.skip_newlines()
            if cur.at("EOF"):
                return self.module
            if cur.at_word("const"):
                self.constant()
            elif cur.at_word("func"):
                self.function()
            elif cur.at_word("module") or cur.at_word("source"):
                raise cur.fail(f"'{cur.tok.text}' must come first, before any constant or function")
            else:
                raise cur.fail(f"expected 'const' or 'func' at the top level, got "
                               f"{cur.tok.describe()}")

    def claim(self, kind: str, tok: Token) -> None:
        """Record the definition of a name; a second one is an error naming the first."""
        first = self.first_seen.get((kind, tok.value))
        if first is not None:
            raise self.cur.fail(f"{kind} {tok.text} is defined twice (first at line {first.line})",
                                tok)
        self.first_seen[(kind, tok.value)] = tok

    # ---- constants ----------------------------------------------------------------------------

    def constant(self) -> None:
        cur = self.cur
        kw = cur.advance()
        name_tok = cur.expect("GLOBAL", "a constant name such as @w after const")
        self.claim("constant", name_tok)
        cur.expect_punct(":", f" after {name_tok.text}")
        type_tok = cur.tok
        t = cur.type()
        if not t.is_static:
            raise cur.fail(f"constant {name_tok.text} must have a static type, got {t}", type_tok)
        cur.expect_punct("=", f" after the type of {name_tok.text}")
        if cur.at_word("elided"):
            raise cur.fail(f"the literal of {name_tok.text} was left out of this listing (it was "
                           f"printed by `dlvm disasm` or `dlvm opt` without --weights, which "
                           f"print every constant)")
        if cur.at_word("file") and cur.peek().kind == "STRING":
            cur.advance()
            value = self.load_npy(cur.advance(), name_tok.text, t)
        else:
            value = self.literal_value(name_tok.text, t)
        loc = cur.loc_suffix(cur.loc_of(kw))
        cur.expect_newline("the constant")
        name = name_tok.value
        self.module.constants[name] = Constant(name, t, value, loc)

    def literal_value(self, name: str, t: TensorType) -> np.ndarray:
        cur = self.cur
        first = cur.tok
        tree = cur.literal_tree()
        try:
            value = tree_to_array(tree, t.dtype, t.shape, first)
            if value.ndim == 0:
                return fill_array(value, t.shape, first)
        except LiteralError as e:
            raise cur.literal_fail(e) from None
        if value.shape != t.shape:
            raise cur.fail(f"the literal of {name} has shape {list(value.shape)}, but its type is "
                           f"{t}", first)
        return value

    def load_npy(self, path_tok: Token, name: str, t: TensorType) -> np.ndarray:
        cur = self.cur
        path = self.base_dir / path_tok.value
        try:
            arr = np.load(path, allow_pickle=False)
        except OSError as e:
            raise cur.fail(f"cannot read {path_tok.text} for {name}: {e.strerror or e}",
                           path_tok) from None
        except Exception as e:   # anything np.load refuses is a bad file, not our bug
            raise cur.fail(f"{path_tok.text} is not a readable .npy file: {e}", path_tok) from None
        if not isinstance(arr, np.ndarray):
            if hasattr(arr, "close"):
                arr.close()
            raise cur.fail(f"{path_tok.text} holds several arrays (.npz); give one .npy file",
                           path_tok)
        native = arr.dtype.newbyteorder("=") if arr.dtype.byteorder not in "=|" else arr.dtype
        if native.kind == "U" and t.dtype.is_str:
            # text is saved as fixed-width unicode (.npy without pickle holds no object arrays)
            arr, native = arr.astype(object), np.dtype(object)
        dt = dtype_from_numpy(native) if native.fields is None else None
        if dt is not t.dtype or arr.shape != t.shape:
            held = f"{dt.text}{list(arr.shape)}" if dt else f"{arr.dtype} of shape {list(arr.shape)}"
            raise cur.fail(f"{path_tok.text} holds {held}, but {name} is declared {t}", path_tok)
        # big-endian files are fine; in memory everything is native and contiguous
        return np.asarray(arr, dtype=t.dtype.np, order="C")   # (ascontiguousarray makes 0-d 1-d)

    # ---- functions ----------------------------------------------------------------------------

    def function(self) -> None:
        cur = self.cur
        kw = cur.advance()
        name_tok = cur.expect("GLOBAL", "a function name such as @main after func")
        self.claim("function", name_tok)
        cur.expect_punct("(", f" after {name_tok.text}")
        params: list[Param] = []
        seen: dict[str, Token] = {}
        while not cur.at_punct(")"):
            if params:
                cur.expect_punct(",", " between parameters")
            reg = cur.expect("REG", "a parameter such as %x")
            if reg.value in seen:
                raise cur.fail(f"parameter {reg.text} is given twice", reg)
            seen[reg.value] = reg
            cur.expect_punct(":", f" after the parameter {reg.text}")
            params.append(Param(reg.value, cur.type()))
        cur.advance()
        cur.expect_punct("->", f" and the result types after the parameters of {name_tok.text}")
        results = self.result_types()
        loc = cur.loc_suffix(cur.loc_of(kw))
        cur.expect_punct("{", f" to open the body of {name_tok.text}")
        cur.expect_newline("'{' (the body starts on the next line)")
        func = Function(name_tok.value, params, results, [], loc)
        self.body(func)
        self.module.functions[func.name] = func

    def result_types(self) -> list[TensorType]:
        cur = self.cur
        if not cur.accept_punct("("):
            return [cur.type()]
        out: list[TensorType] = []
        while not cur.at_punct(")"):
            if out:
                cur.expect_punct(",", " between result types")
            out.append(cur.type())
        cur.advance()
        return out

    def body(self, func: Function) -> None:
        cur = self.cur
        labels: dict[str, Token] = {}
        while True:
            cur.skip_newlines()
            tok = cur.tok
            if cur.at_punct("}"):
                cur.advance()
                cur.expect_newline("'}'")
                return
            if cur.at("EOF"):
                raise cur.fail(f"the body of @{func.name} is not closed with '}}'")
            if tok.kind in ("NAME", "STRING") and cur.peek().kind == "PUNCT" and \
                    cur.peek().text == ":":
                if tok.value in labels:
                    raise cur.fail(f"label '{tok.value}' is defined twice (first at line "
                                   f"{labels[tok.value].line})", tok)
                labels[tok.value] = tok
                func.blocks.append(Block(tok.value))
                cur.advance()
                cur.advance()
                continue
            if not func.blocks:
                labels["entry"] = tok   # so that a later `entry:` is reported as a duplicate
                func.blocks.append(Block("entry"))
            func.blocks[-1].instrs.append(self.instrs.instruction())


def parse_text(text: str, filename: str = "<input>", base_dir: str | Path | None = None) -> Module:
    """Parse `.dlasm` text into a Module without verifying it; raise MalformedError."""
    return ModuleParser(text, filename, base_dir).parse()
