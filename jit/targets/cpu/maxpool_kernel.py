"""LLVM IR of the JIT's f32 2-D max pooling (the semantics: isa/ops/pooling.py, maxpool_ref).

    i32 dlvm_maxpool2d_f32(i64 planes_lo, i64 planes_hi, ptr x, ptr out, ptr geom)   (returns 0)

pools planes [planes_lo, planes_hi) of x [N, C, H, W] into out [N, C, Ho, Wo]; plane p is
(n, c) = (p // C, p % C). geom is an int64 array indexed by the G_* constants below: the
geometry, the interior column range [ow_lo, ow_hi) (jit/maxpool.py: _interior), and the
element strides of x and out (rows must be contiguous: column stride 1; any batch, channel
and row strides). Disjoint plane ranges write disjoint outputs, so threads may run the function
on separate ranges of one call at once; the kernel keeps its scratch on the stack (~36 KB).

Semantics, as maxpool_ref's padded, strided views give them:
- out-of-range taps (explicit pads, ceil-mode overhang) are skipped; a window with no tap in
  range is -inf (the reference's padding value);
- any NaN tap makes the result NaN (np.maximum), whatever the other taps. Scalar steps are
  `acc = x != x ? x : (x > acc ? x : acc)`; vector steps keep the max (`x > acc ? x : acc`,
  one vmaxps, which drops a NaN tap) and an "any NaN" mask (a compare and a mask OR) as two
  independent chains and apply the mask once per block, so a tap waits on one instruction of
  the previous one. (llvm.maximum also orders -0 < +0, two more instructions per tap on x86,
  which np.maximum does not promise either; a NaN result may carry another payload than the
  input's NaN.)

Max is separable: per output row, the max over the window's tap rows is taken first, column by
column, into a row buffer ("vertical": contiguous vector loads), then the max over each
window's column taps in that one row ("horizontal"); the column taps of neighbouring windows
share the row maxima. Rows wider than SCRATCH skip the buffer (the "direct" path: every column
tap of every tap row). The tap rows in range, [i_lo, i_hi), are computed once per output row.

Horizontally, columns split in three: the interior [ow_lo, ow_hi) (every column tap inside the
row) runs explicit vectors of VW output columns; the border columns a scalar loop that clips
each window's taps. The interior is vector IR rather than left to the loop vectorizer because
its rows are short (ResNet: 55 interior columns): the vectorizer's scalar remainder would run
7 of every 55 columns per tap; here the last block of a row is shifted left to end at ow_hi and
recomputes a few columns (max is idempotent), so every column runs in vectors (the vertical
pass does the same over the row's W columns). Loads by column stride:
- 1: one vector load per tap;
- 2: the even lanes of 2 VW - 1 floats, as two overlapping vector loads and one two-source
  shuffle (vpermt2ps), so that nothing past the window's last tap is read (an interleaved
  2 VW load would read one float past the end of the input's last row);
- other: VW scalar loads inserted into a vector.
The usual windows (1 to 3 tap rows; 2 or 3 columns with stride 1 or 2 and dilation 1) take
copies with the taps unrolled, chosen once per row (the choice depends on the geometry only,
so its branches are predicted). Rows whose interior is narrower than VW run scalar.

ResNet-18's 3x3/2 pool of [1, 64, 112, 112] on one Zen 5 core: ~105 us (maxpool_ref: ~900).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from llvmlite import ir

from jit.llvm.irutil import F32, I32, I64, PTR, const, for_range

FUNC_NAME = "dlvm_maxpool2d_f32"

# geom slots (int64)
(G_H, G_W, G_HO, G_WO, G_KH, G_KW, G_SH, G_SW, G_PH, G_PW, G_DH, G_DW, G_OW_LO, G_OW_HI,
 G_C, G_X_SN, G_X_SC, G_X_SH, G_O_SN, G_O_SC, G_O_SH) = range(21)
GEOM_SLOTS = 21
# floats of a stack row buffer: rows up to this wide take the separable path
SCRATCH = 4096
# one row buffer: SCRATCH, the alignment shift (< VW), and a spacing that puts the two buffers
# 2 KB apart modulo 4 KB, so that loads from one do not falsely wait on stores to the other
# (the CPU matches loads against pending stores by address bits 0-11)
_HALF = SCRATCH + 512


def vector_width(features: str) -> int:
    """Floats per vector register for the host's LLVM feature string ("+avx512f,...")."""
    flags = {f[1:] for f in features.split(",") if f.startswith("+")}
    if "avx512f" in flags:
        return 16
    if "avx" in flags:
        return 8
    return 4


class _Builder:
    def __init__(self, vw: int):
        self.vw = vw
        self.mod = ir.Module(name="dlvm_maxpool")
        self.vec = ir.VectorType(F32, vw)
        self.neg_inf = ir.Constant(F32, float("-inf"))
        self.vneg_inf = ir.Constant(self.vec, [float("-inf")] * vw)
        self.vmask = ir.VectorType(ir.IntType(1), vw)

    # ---- small helpers -------------------------------------------------------------------

    @staticmethod
    def _at(b: ir.IRBuilder, base: ir.Value, index: ir.Value) -> ir.Value:
        return b.gep(base, [index], inbounds=True, source_etype=F32)

    @staticmethod
    def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
        return b.select(b.icmp_signed("<", x, y), x, y)

    @staticmethod
    def _max(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
        return b.select(b.icmp_signed(">", x, y), x, y)

    @staticmethod
    def _fmax(b: ir.IRBuilder, acc: ir.Value, x: ir.Value) -> ir.Value:
        """max(acc, x) propagating NaN from either side (module docstring). No fast-math
        flags: NaN must keep its meaning."""
        bigger = b.select(b.fcmp_ordered(">", x, acc), x, acc)
        return b.select(b.fcmp_unordered("uno", x, x), x, bigger)

    def _ceil_div(self, b: ir.IRBuilder, num: ir.Value, step: ir.Value) -> ir.Value:
        """ceil(num / step) for num >= 0, step >= 1; no division when step is 1 (dilation 1,
        the usual case: 64-bit divisions per border column and per row took ~10% of ResNet's
        pool)."""
        with b.if_else(b.icmp_signed("==", step, const(I64, 1))) as (unit, other):
            with unit:
                b.store(num, self.quot)
            with other:
                b.store(b.sdiv(b.add(num, b.sub(step, const(I64, 1))), step), self.quot)
        return b.load(self.quot, typ=I64)

    def _taps(self, b: ir.IRBuilder, start: ir.Value, size: ir.Value, step: ir.Value,
              count: ir.Value) -> tuple[ir.Value, ir.Value]:
        """The taps t in [0, count) whose position start + t*step lies in [0, size), as a range
        [lo, hi) (empty when lo >= hi): taps move monotonically, so the valid ones are
        contiguous."""
        zero = const(I64, 0)
        # first tap at or after 0: ceil(-start / step) when start < 0
        lo = self._ceil_div(b, self._max(b, b.sub(zero, start), zero), step)
        # taps before size: ceil((size - start) / step), none when start >= size
        room = self._max(b, b.sub(size, start), zero)
        hi = self._min(b, count, self._ceil_div(b, room, step))
        return lo, hi

    # Vector windows: the max and the "any NaN" mask as two chains (module docstring).

    def _vstart(self, b: ir.IRBuilder) -> None:
        b.store(self.vneg_inf, self.vacc)
        b.store(ir.Constant(self.vmask, [0] * self.vw), self.vnan)

    def _vstep(self, b: ir.IRBuilder, x: ir.Value) -> None:
        acc = b.load(self.vacc, typ=self.vec)
        b.store(b.select(b.fcmp_ordered(">", x, acc), x, acc), self.vacc)
        b.store(b.or_(b.load(self.vnan, typ=self.vmask), b.fcmp_unordered("uno", x, x)), self.vnan)

    def _vresult(self, b: ir.IRBuilder) -> ir.Value:
        nan = ir.Constant(self.vec, [float("nan")] * self.vw)
        return b.select(b.load(self.vnan, typ=self.vmask), nan, b.load(self.vacc, typ=self.vec))

    # ---- the kernel ----------------------------------------------------------------------

    def build(self) -> ir.Module:
        fnty = ir.FunctionType(I32, [I64, I64, PTR, PTR, PTR])
        fn = ir.Function(self.mod, fnty, name=FUNC_NAME)
        plo, phi, x, out, geom = fn.args
        for a, n in zip(fn.args, ("planes_lo", "planes_hi", "x", "out", "geom")):
            a.name = n
        for a in (x, out, geom):
            a.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        # loop-carried accumulators live in allocas (entry block, so mem2reg promotes them)
        self.acc = b.alloca(F32, name="acc")
        self.vacc = b.alloca(self.vec, name="vacc")
        self.vnan = b.alloca(self.vmask, name="vnan")
        self.quot = b.alloca(I64, name="quot")
        # two rows of window maxima (the separable path), on the stack (~36 KB); and where
        # each row's maxima start in its half (see _vertical)
        buf = b.alloca(F32, size=const(I64, 2 * _HALF), name="rowmax")
        buf.align = 64
        buf.type = PTR      # llvmlite types allocas as typed pointers; LLVM's are all `ptr`
        self.buf = buf
        self.starts = b.alloca(PTR, size=const(I64, 2), name="starts")
        g = {i: b.load(self._at_i64(b, geom, i), typ=I64) for i in range(GEOM_SLOTS)}
        self.g = g
        separable = b.icmp_signed("<=", g[G_W], const(I64, SCRATCH))
        with for_range(b, plo, phi, "p") as p:
            n = b.sdiv(p, g[G_C])
            c = b.srem(p, g[G_C])
            xp = self._at(b, x, b.add(b.mul(n, g[G_X_SN]), b.mul(c, g[G_X_SC])))
            op = self._at(b, out, b.add(b.mul(n, g[G_O_SN]), b.mul(c, g[G_O_SC])))
            with b.if_else(separable) as (then, otherwise):
                with then:
                    self._plane_separable(b, xp, op)
                with otherwise:
                    self._plane_direct(b, xp, op)
        b.ret(const(I32, 0))
        return self.mod

    @staticmethod
    def _at_i64(b: ir.IRBuilder, base: ir.Value, index: int) -> ir.Value:
        return b.gep(base, [const(I64, index)], inbounds=True, source_etype=I64)

    def _tap_rows(self, b: ir.IRBuilder, oh: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(h0, i_lo, i_hi): output row oh's window starts at input row h0 (maybe negative);
        its tap rows in range are [i_lo, i_hi)."""
        g = self.g
        h0 = b.sub(b.mul(oh, g[G_SH]), g[G_PH])
        i_lo, i_hi = self._taps(b, h0, g[G_H], g[G_DH], g[G_KH])
        return h0, i_lo, i_hi

    def _plane_separable(self, b: ir.IRBuilder, xp: ir.Value, op: ir.Value) -> None:
        """Max over each window's rows first (contiguous vectors) into a row buffer, then
        over its columns in that one row: the column taps share the row maxima. The row
        maxima of output row oh + 1 are computed before row oh's columns, into the other of
        two buffers: the columns then read stores issued a row earlier. (Reading the row just
        stored, at other offsets than it was stored at, made loads wait for the stores to
        reach the cache: ResNet's pool took 130 us instead of 108.)"""
        g = self.g
        one = const(I64, 1)

        def vertical(r: ir.Value) -> None:
            parity = b.and_(r, one)
            start = self._vertical(b, xp, *self._tap_rows(b, r),
                                   self._at(b, self.buf, b.mul(parity, const(I64, _HALF))))
            b.store(start, b.gep(self.starts, [parity], inbounds=True, source_etype=PTR))

        vertical(const(I64, 0))
        with for_range(b, const(I64, 0), g[G_HO], "oh") as oh:
            nxt = b.add(oh, one)
            with b.if_then(b.icmp_signed("<", nxt, g[G_HO])):
                vertical(nxt)
            orow = self._at(b, op, b.mul(oh, g[G_O_SH]))
            start = b.load(b.gep(self.starts, [b.and_(oh, one)], inbounds=True, source_etype=PTR),
                           typ=PTR)
            self._columns(b, (start, orow, None, None, None))

    def _plane_direct(self, b: ir.IRBuilder, xp: ir.Value, op: ir.Value) -> None:
        """Rows wider than the buffer: every column tap of every tap row, in place."""
        g = self.g
        with for_range(b, const(I64, 0), g[G_HO], "ohd") as oh:
            h0, i_lo, i_hi = self._tap_rows(b, oh)
            orow = self._at(b, op, b.mul(oh, g[G_O_SH]))
            self._columns(b, (xp, orow, h0, i_lo, i_hi))

    @staticmethod
    def _dispatch(b: ir.IRBuilder, cases: list, default) -> None:
        """if cond0: emit0() elif cond1: emit1() ... else: default(). The conditions depend
        on the geometry only, so the branches are predicted."""
        if not cases:
            default()
            return
        (cond, emit), rest = cases[0], cases[1:]
        with b.if_else(cond) as (then, otherwise):
            with then:
                emit()
            with otherwise:
                _Builder._dispatch(b, rest, default)

    def _columns(self, b: ir.IRBuilder, row: tuple) -> None:
        """One output row from the tap rows `row` = (base, out row, first row's offset in
        rows of x_sh, tap rows [i_lo, i_hi)), or from the one row `base` when those three are
        None: the interior in vectors, the border clipped."""
        g = self.g
        ow_lo, ow_hi = g[G_OW_LO], g[G_OW_HI]
        wide = b.icmp_signed(">=", b.sub(ow_hi, ow_lo), const(I64, self.vw))
        with b.if_else(wide) as (then, otherwise):
            with then:
                self._clipped(b, row, const(I64, 0), ow_lo)
                self._interior(b, row, ow_lo, ow_hi)
                self._clipped(b, row, ow_hi, g[G_WO])
            with otherwise:
                self._clipped(b, row, const(I64, 0), g[G_WO])

    def _vertical(self, b: ir.IRBuilder, xp: ir.Value, h0: ir.Value, i_lo: ir.Value,
                  i_hi: ir.Value, half: ir.Value) -> ir.Value:
        """row[w] = max over tap rows [i_lo, i_hi) of x[h0 + i*dh, w] (-inf when none), in
        vectors of VW (the last one shifted to end at W) when W >= VW, else scalar; returns
        `row`, a place in the (64-byte aligned) buffer `half`. Rows with 1, 2 or 3 tap rows
        in range take a copy with them unrolled (no loop per block).

        Blocks start where the first tap row is vector-aligned (the columns before are one
        unaligned block), and `row` is placed so that those blocks' stores are aligned too: a
        NumPy array's data is only 16-byte aligned, and loads that straddle two cache lines
        made the whole kernel 10% slower."""
        g = self.g
        w, vw = g[G_W], const(I64, self.vw)

        def line(i: ir.Value) -> ir.Value:
            return self._at(b, xp, b.mul(b.add(h0, b.mul(i, g[G_DH])), g[G_X_SH]))

        # (not `inbounds`: with no tap row in range, line(i_lo) may lie outside x)
        first = b.gep(xp, [b.mul(b.add(h0, b.mul(i_lo, g[G_DH])), g[G_X_SH])], source_etype=F32)
        addr = b.ptrtoint(first, I64)
        lanes = const(I64, self.vw - 1)
        a0 = b.and_(b.sub(const(I64, 0), b.lshr(addr, const(I64, 2))), lanes)
        buf = self._at(b, half, b.and_(b.sub(vw, a0), lanes))

        def block(w0: ir.Value, taps: int | None) -> None:
            self._vstart(b)
            if taps is None:
                with for_range(b, i_lo, i_hi, "vr") as i:
                    self._vstep(b, b.load(self._at(b, line(i), w0), typ=self.vec, align=4))
            else:
                for t in range(taps):
                    i = b.add(i_lo, const(I64, t))
                    self._vstep(b, b.load(self._at(b, line(i), w0), typ=self.vec, align=4))
            b.store(self._vresult(b), self._at(b, buf, w0), align=4)

        def blocks(taps: int | None) -> None:
            with b.if_then(b.icmp_signed("!=", a0, const(I64, 0))):
                block(const(I64, 0), taps)
            n = b.sdiv(b.add(b.sub(w, a0), const(I64, self.vw - 1)), vw)
            with for_range(b, const(I64, 0), n, "vb") as blk:
                block(self._min(b, b.add(a0, b.mul(blk, vw)), b.sub(w, vw)), taps)

        def scalar() -> None:
            with for_range(b, const(I64, 0), w, "sw") as col:
                b.store(self.neg_inf, self.acc)
                with for_range(b, i_lo, i_hi, "sr") as i:
                    v = b.load(self._at(b, line(i), col), typ=F32)
                    b.store(self._fmax(b, b.load(self.acc, typ=F32), v), self.acc)
                b.store(b.load(self.acc, typ=F32), self._at(b, buf, col))

        def vector() -> None:
            taps = b.sub(i_hi, i_lo)
            self._dispatch(b, [(b.icmp_signed("==", taps, const(I64, k)), lambda k=k: blocks(k))
                               for k in (3, 2, 1)], lambda: blocks(None))

        self._dispatch(b, [(b.icmp_signed(">=", w, vw), vector)], scalar)
        return buf

    @contextmanager
    def _each_row(self, b: ir.IRBuilder, row: tuple) -> Iterator[ir.Value]:
        """The body once per tap row of `row` (see _columns), given the row's start."""
        xp, _, h0, i_lo, i_hi = row
        if i_lo is None:
            yield xp
            return
        with for_range(b, i_lo, i_hi, "ti") as i:
            yield self._at(b, xp, b.mul(b.add(h0, b.mul(i, self.g[G_DH])), self.g[G_X_SH]))

    def _clipped(self, b: ir.IRBuilder, row: tuple, start: ir.Value, stop: ir.Value) -> None:
        """Scalar output columns [start, stop), each window's column taps clipped."""
        g = self.g
        orow = row[1]
        with for_range(b, start, stop, "ow") as ow:
            w0 = b.sub(b.mul(ow, g[G_SW]), g[G_PW])
            j_lo, j_hi = self._taps(b, w0, g[G_W], g[G_DW], g[G_KW])
            b.store(self.neg_inf, self.acc)
            with self._each_row(b, row) as line:
                # one index: line + w0 alone may lie before x (a border window's first tap)
                with for_range(b, j_lo, j_hi, "cj") as j:
                    v = b.load(self._at(b, line, b.add(w0, b.mul(j, g[G_DW]))), typ=F32)
                    b.store(self._fmax(b, b.load(self.acc, typ=F32), v), self.acc)
            b.store(b.load(self.acc, typ=F32), self._at(b, orow, ow))

    def _interior(self, b: ir.IRBuilder, row: tuple, start: ir.Value, stop: ir.Value) -> None:
        """Output columns [start, stop) (at least VW of them) in blocks of VW; the last block
        ends at stop. One loop copy per column stride kind, chosen once per row, and unrolled
        copies for the usual windows (2 or 3 wide, dilation 1, stride 1 or 2)."""
        g = self.g
        sw, kw, dw = g[G_SW], g[G_KW], g[G_DW]
        one = const(I64, 1)

        def eq(v: ir.Value, k: int) -> ir.Value:
            return b.icmp_signed("==", v, const(I64, k))

        cases = []
        for stride, load in ((2, self._load_s2), (1, self._load_s1)):
            for taps in (3, 2):
                cond = b.and_(b.and_(eq(sw, stride), eq(kw, taps)), eq(dw, 1))
                cases.append((cond, lambda load=load, taps=taps:
                              self._blocks(b, row, start, stop, load, taps, one)))
        cases.append((eq(sw, 1), lambda: self._blocks(b, row, start, stop, self._load_s1, kw, dw)))
        cases.append((eq(sw, 2), lambda: self._blocks(b, row, start, stop, self._load_s2, kw, dw)))
        self._dispatch(b, cases, lambda: self._blocks(b, row, start, stop, self._load_any, kw, dw))

    def _blocks(self, b: ir.IRBuilder, row: tuple, start: ir.Value, stop: ir.Value, load,
                kw: ir.Value | int, dw: ir.Value) -> None:
        """The interior's blocks; `kw` an int unrolls the column taps."""
        g = self.g
        orow = row[1]
        vw = const(I64, self.vw)
        blocks = b.sdiv(b.add(b.sub(stop, start), const(I64, self.vw - 1)), vw)
        last = b.sub(stop, vw)
        with for_range(b, const(I64, 0), blocks, "blk") as blk:
            ow0 = self._min(b, b.add(start, b.mul(blk, vw)), last)
            w0 = b.sub(b.mul(ow0, g[G_SW]), g[G_PW])
            self._vstart(b)
            with self._each_row(b, row) as line:
                line = self._at(b, line, w0)
                if isinstance(kw, int):
                    for j in range(kw):
                        self._vstep(b, load(b, self._at(b, line, b.mul(const(I64, j), dw))))
                else:
                    with for_range(b, const(I64, 0), kw, "vj") as j:
                        self._vstep(b, load(b, self._at(b, line, b.mul(j, dw))))
            b.store(self._vresult(b), self._at(b, orow, ow0), align=4)

    def _load_s1(self, b: ir.IRBuilder, base: ir.Value) -> ir.Value:
        return b.load(base, typ=self.vec, align=4)

    def _load_s2(self, b: ir.IRBuilder, base: ir.Value) -> ir.Value:
        """base[0], base[2], ..., base[2 VW - 2], reading base[0 .. 2 VW - 2] only."""
        vw = self.vw
        first = b.load(base, typ=self.vec, align=4)                     # base[0 .. VW)
        second = b.load(self._at(b, base, const(I64, vw - 1)), typ=self.vec, align=4)
        # even lanes of `first`, then base[VW + 2m] = second's lane 2m + 1
        mask = [2 * m for m in range(vw // 2)] + [vw + 2 * m + 1 for m in range(vw // 2)]
        return b.shuffle_vector(first, second, ir.Constant(ir.VectorType(I32, vw), mask))

    def _load_any(self, b: ir.IRBuilder, base: ir.Value) -> ir.Value:
        sw = self.g[G_SW]
        v = ir.Constant(self.vec, ir.Undefined)
        for lane in range(self.vw):
            s = b.load(self._at(b, base, b.mul(const(I64, lane), sw)), typ=F32)
            v = b.insert_element(v, s, const(I32, lane))
        return v


def maxpool_module(vw: int) -> ir.Module:
    """The module with FUNC_NAME for vectors of `vw` floats (vector_width of the host)."""
    if vw < 2 or vw & (vw - 1):
        raise ValueError(f"vector width must be a power of two >= 2, got {vw}")
    return _Builder(vw).build()

