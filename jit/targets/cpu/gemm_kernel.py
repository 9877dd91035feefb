"""LLVM IR of the JIT's f32 matrix product: a packed, cache-blocked GEMM for the host CPU.

    i32 dlvm_sgemm(M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, packA, packB, beta,
                   flags, a_row0, m_pad, b_col0, n_pad, bias, epi)         (returns 0)
    C[i, j] = beta * C[i, j] + sum_k A[i, k] * B[k, j]        (beta is 0 or 1)

epi (applied where the last K block is stored, so that results are bit-identical to a
separate pass over C afterwards): 1 = add bias[i] to row i, 2 = add bias[j] to column j (bias
points at the call's first row or column), 4 = relu (llvm.maximum with 0: NaN stays NaN, as the
compiled `max` does). A convolution's bias and ReLU, or a layer's bias and activation, then cost
no pass over the output.

flags: 1 = A is prepacked (dlvm_sgemm_pack_a; the call covers its rows from a_row0, m_pad rows
in all), 2 = B is prepacked (dlvm_sgemm_pack_b; columns from b_col0, n_pad in all), 4 = B is a
convolution's patch matrix read from the padded input B with the geometry at address sbk
(pack_b_conv; columns from b_col0), 8 = B is read in place, unpacked: row k of the call's
columns starts at B + b_col0 + rows[k], rows an i64 table at address sbk (a stride-1
convolution's padded input, multiplied one output row at a time or over the padded width; a
pointwise one's image). With sbn > 0 as well, the columns are vectors of VW, each sbn floats
after the one before (b_col0 a multiple of VW): a convolution whose output rows are one vector
wide reads every output row of the image from its padded input row; with n_pad > 0 too, n_pad
vectors make one output row and rows are sbn apart (only for tiles of two vectors: each tile
reads its second vector one step from its first). A small M reuses a packed
panel only M / MR times, so packing it was a fifth of a 16-channel convolution's time. Reads
may run VW - 1 floats past a row's last column.

A and B may have any element strides (a transposed operand is only a pair of swapped strides);
C is row-major with row stride `ldc`. The structure is the one Goto and BLIS made standard:

    for jc in N by NC:                  B block [KC, NC] packed into NR-wide panels (L3)
      for pc in K by KC:
        for ic in M by MC:              A block [MC, KC] packed into MR-tall panels (L2)
          for jr in NC by NR:           one B micro-panel [KC, NR] stays in L1
            for ir in MC by MR:         the micro-kernel: an MR x NR tile of C in registers

The micro-kernel keeps MR x (NR / VW) vector accumulators in registers and per step of k loads
NR / VW vectors of the B panel and broadcasts MR values of the A panel: with AVX-512, 8 x 48
floats is 24 zmm accumulators of 32 registers. Packing pads the edges with zeros, so the
micro-kernel always runs full tiles; an edge tile is written through a small buffer. N's last
panel picks a narrower micro-kernel (one or two vectors wide) when that covers it, so that a
product with N = 49 does not compute 96 columns.

Why our own: NumPy's OpenBLAS picks its AVX2 (Haswell) kernels on CPUs it does not know (AMD
Zen 5 here), half the vector width the CPU has; this kernel is compiled for the host's features.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from jit.llvm.irutil import F32, I32, I64, PTR, const, for_range, intrinsic

FUNC_NAME = "dlvm_sgemm"


@dataclass(frozen=True)
class GemmShape:
    """Register tile and cache blocks. MR x (NR / VW) accumulators plus NR / VW B vectors must
    fit in the vector registers; KC x NR floats (one B micro-panel) fit in L1, MC x KC in L2."""
    vw: int            # floats per vector register
    mr: int            # rows of the register tile
    nr: int            # columns of the register tile (a multiple of vw)
    kc: int
    mc: int            # a multiple of mr
    nc: int            # a multiple of nr

    def pack_a_floats(self) -> int:
        return self.mc * self.kc

    def pack_b_floats(self) -> int:
        return self.kc * self.nc

    def text(self) -> str:
        return f"vw{self.vw} mr{self.mr} nr{self.nr} kc{self.kc} mc{self.mc} nc{self.nc}"


def shape_for(features: str) -> GemmShape:
    """The tile for the host's vector extension (LLVM feature string, e.g. "+avx512f,...")."""
    flags = {f[1:] for f in features.split(",") if f.startswith("+")}
    if "avx512f" in flags:        # 32 zmm registers: 8 x 3 accumulators + 3 B vectors
        return GemmShape(vw=16, mr=8, nr=48, kc=256, mc=128, nc=3072)
    if "avx" in flags:            # 16 ymm registers: 6 x 2 accumulators + 2 B vectors
        return GemmShape(vw=8, mr=6, nr=16, kc=256, mc=120, nc=2048)
    return GemmShape(vw=4, mr=4, nr=8, kc=256, mc=128, nc=2048)   # 16 xmm registers


class _Builder:
    def __init__(self, shape: GemmShape):
        self.s = shape
        self.mod = ir.Module(name="dlvm_gemm")
        self.vec = ir.VectorType(F32, shape.vw)
        self.fma = intrinsic(self.mod, "llvm.fma", self.vec, [self.vec] * 3, suffix=f"v{shape.vw}f32")
        self.vmax = intrinsic(self.mod, "llvm.maximum", self.vec, [self.vec] * 2, suffix=f"v{shape.vw}f32")
        self.smax = intrinsic(self.mod, "llvm.maximum", F32, [F32] * 2, suffix="f32")
        self.masked_store = intrinsic(self.mod, "llvm.masked.store", ir.VoidType(),
                                      [self.vec, PTR, I32, ir.VectorType(ir.IntType(1), shape.vw)],
                                      suffix=f"v{shape.vw}f32.p0")
        self.masked_load = intrinsic(self.mod, "llvm.masked.load", self.vec,
                                     [PTR, I32, ir.VectorType(ir.IntType(1), shape.vw), self.vec],
                                     suffix=f"v{shape.vw}f32.p0")

    # ---- small helpers -------------------------------------------------------------------

    @staticmethod
    def _no_idiom(b: ir.IRBuilder) -> None:
        """An empty asm with a memory clobber in a copy or fill loop's body: LLVM's loop idiom
        pass otherwise turns the loop into a memcpy / memset call per segment and row, and a
        packed panel's segments are short (a small CNN's 32-float rows: the calls were 9% of
        its time at batch 32)."""
        b.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "", "~{memory}",
                            side_effect=True), [])

    @staticmethod
    def _at(b: ir.IRBuilder, base: ir.Value, index: ir.Value) -> ir.Value:
        return b.gep(base, [index], inbounds=True, source_etype=F32)

    def _splat(self, b: ir.IRBuilder, x: ir.Value) -> ir.Value:
        v = b.insert_element(ir.Constant(self.vec, ir.Undefined), x, const(I64, 0))
        return b.shuffle_vector(v, ir.Constant(self.vec, ir.Undefined),
                                ir.Constant(ir.VectorType(ir.IntType(32), self.s.vw), [0] * self.s.vw))

    @staticmethod
    def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
        return b.select(b.icmp_signed("<", x, y), x, y)

    @staticmethod
    def _max(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
        return b.select(b.icmp_signed(">", x, y), x, y)

    def _function(self, name: str, args: list[tuple[str, ir.Type]], internal: bool = True,
                  ret: ir.Type | None = None):
        fn = ir.Function(self.mod, ir.FunctionType(ret or ir.VoidType(), [t for _, t in args]), name=name)
        if internal:
            fn.linkage = "internal"
        for a, (n, _) in zip(fn.args, args):
            a.name = n
            if isinstance(a.type, ir.PointerType):
                a.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        return fn, b

    # ---- packing -------------------------------------------------------------------------

    def pack_a(self) -> ir.Function:
        """packA[p][k][i] = A[p*MR + i, k] for rows < mc, else 0: MR-tall panels, k-major.

        Reads run along A's unit stride: along k for a row-major A (MR rows at once, so that
        LLVM vectorizes the transpose: 256x784 packed in 27-36 us, was 75 us one row at a
        time), along i for a transposed one (one k at a time, MR contiguous floats)."""
        mr = self.s.mr
        fn, b = self._function("pack_a", [("a", PTR), ("sam", I64), ("sak", I64), ("mc", I64),
                                          ("kc", I64), ("dst", PTR)])
        a, sam, sak, mc, kc, dst = fn.args
        zero, one = const(I64, 0), const(I64, 1)
        panels = b.sdiv(b.add(mc, const(I64, mr - 1)), const(I64, mr))
        with for_range(b, zero, panels, "p") as p:
            row0 = b.mul(p, const(I64, mr))
            src = self._at(b, a, b.mul(row0, sam))
            panel = self._at(b, dst, b.mul(p, b.mul(kc, const(I64, mr))))
            rows = self._min(b, b.sub(mc, row0), const(I64, mr))
            full = b.icmp_signed("==", rows, const(I64, mr))
            full_t = b.and_(full, b.icmp_signed("==", sam, one))
            full_r = b.and_(full, b.icmp_signed("==", sak, one))
            with b.if_else(full_r) as (rowwise, other):
                with rowwise:   # row-major A, whole panel: k outer, one float of each row
                    # per step: unit-stride loads of MR rows and a contiguous MR-float store,
                    # which LLVM vectorizes along k as an interleaved store group (a transpose)
                    with for_range(b, zero, kc, "kr") as k:
                        out = self._at(b, panel, b.mul(k, const(I64, mr)))
                        for i in range(mr):
                            line = self._at(b, src, b.mul(const(I64, i), sam))
                            b.store(b.load(self._at(b, line, k), typ=F32), self._at(b, out, const(I64, i)))
                with other:
                    self._pack_a_general(b, src, sam, sak, kc, panel, rows, full_t)
        b.ret_void()
        return fn

    def _pack_a_general(self, b: ir.IRBuilder, src: ir.Value, sam: ir.Value, sak: ir.Value,
                        kc: ir.Value, panel: ir.Value, rows: ir.Value, full_t: ir.Value) -> None:
        """pack_a's other panels: a whole transposed one, or row by row (edges, any strides)."""
        mr = self.s.mr
        zero = const(I64, 0)
        with b.if_else(full_t) as (then, otherwise):
            with then:      # transposed A, whole panel: k outer, MR contiguous floats
                with for_range(b, zero, kc, "kt") as k:
                    col = self._at(b, src, b.mul(k, sak))
                    out = self._at(b, panel, b.mul(k, const(I64, mr)))
                    for i in range(mr):
                        b.store(b.load(self._at(b, col, const(I64, i)), typ=F32),
                                self._at(b, out, const(I64, i)))
            with otherwise:  # row by row along k; rows past the edge are zeros
                for i in range(mr):
                    line = self._at(b, src, b.mul(const(I64, i), sam))
                    with b.if_else(b.icmp_signed("<", const(I64, i), rows)) as (t2, o2):
                        with t2:
                            with for_range(b, zero, kc, f"k{i}") as k:
                                v = b.load(self._at(b, line, b.mul(k, sak)), typ=F32)
                                b.store(v, self._at(b, panel, b.add(b.mul(k, const(I64, mr)),
                                                                    const(I64, i))))
                        with o2:
                            with for_range(b, zero, kc, f"z{i}") as k:
                                b.store(ir.Constant(F32, 0.0),
                                        self._at(b, panel, b.add(b.mul(k, const(I64, mr)),
                                                                 const(I64, i))))

    def pack_b(self) -> ir.Function:
        """packB[q][k][j] = B[k, q*NR + j] for columns < nc, else 0: NR-wide panels, k-major.

        A row-major B copies NR contiguous floats per k (vector copies); a transposed one is
        read column by column along its unit stride k."""
        nr = self.s.nr
        fn, b = self._function("pack_b", [("b", PTR), ("sbk", I64), ("sbn", I64), ("nc", I64),
                                          ("kc", I64), ("dst", PTR)])
        src, sbk, sbn, nc, kc, dst = fn.args
        zero, one = const(I64, 0), const(I64, 1)
        panels = b.sdiv(b.add(nc, const(I64, nr - 1)), const(I64, nr))
        with for_range(b, zero, panels, "q") as q:
            col0 = b.mul(q, const(I64, nr))
            width = self._min(b, b.sub(nc, col0), const(I64, nr))
            base = self._at(b, src, b.mul(col0, sbn))
            panel = self._at(b, dst, b.mul(q, b.mul(kc, const(I64, nr))))
            full = b.icmp_signed("==", width, const(I64, nr))
            with b.if_else(b.and_(full, b.icmp_signed("==", sbn, one))) as (then, otherwise):
                with then:      # row-major B: whole rows of NR contiguous floats
                    with for_range(b, zero, kc, "kf") as k:
                        row = self._at(b, base, b.mul(k, sbk))
                        out = self._at(b, panel, b.mul(k, const(I64, nr)))
                        for v in range(nr // self.s.vw):
                            x = b.load(self._at(b, row, const(I64, v * self.s.vw)), typ=self.vec, align=4)
                            b.store(x, self._at(b, out, const(I64, v * self.s.vw)), align=4)
                with otherwise:
                    with b.if_else(b.icmp_signed("==", sbn, one)) as (edge, transposed):
                        with edge:      # a row-major edge panel: masked vector rows, zeros past it
                            masks = [self._lanes_below(b, v, width)
                                     for v in range(0, nr, self.s.vw)]
                            zeros = ir.Constant(self.vec, [0.0] * self.s.vw)
                            with for_range(b, zero, kc, "ke") as k:
                                row = self._at(b, base, b.mul(k, sbk))
                                out = self._at(b, panel, b.mul(k, const(I64, nr)))
                                for i, v in enumerate(range(0, nr, self.s.vw)):
                                    x = b.call(self.masked_load, [self._at(b, row, const(I64, v)),
                                                                  const(I32, 4), masks[i], zeros])
                                    b.store(x, self._at(b, out, const(I64, v)), align=4)
                        with transposed:    # column by column along k's unit stride, then zeros
                            with for_range(b, zero, width, "j") as j:
                                line = self._at(b, base, b.mul(j, sbn))
                                with for_range(b, zero, kc, "kc") as k:
                                    x = b.load(self._at(b, line, b.mul(k, sbk)), typ=F32)
                                    b.store(x, self._at(b, panel, b.add(b.mul(k, const(I64, nr)), j)))
                            with for_range(b, zero, kc, "kz") as k:
                                self._zero_tail(b, self._at(b, panel, b.mul(k, const(I64, nr))), width)
        b.ret_void()
        return fn

    def _lanes_below(self, b: ir.IRBuilder, first: int, width: ir.Value) -> ir.Value:
        """The mask of lanes first, first + 1, ... (one vector) that are < width."""
        lanes = ir.Constant(ir.VectorType(I64, self.s.vw), list(range(first, first + self.s.vw)))
        return b.icmp_signed("<", lanes, self._splat_i64(b, width))

    def _zero_tail(self, b: ir.IRBuilder, row: ir.Value, width: ir.Value) -> None:
        """Zeros in columns [width, NR) of one NR-wide panel row: masked vector stores (one
        float at a time was a tenth of a small CNN's packing)."""
        zeros = ir.Constant(self.vec, [0.0] * self.s.vw)
        for v in range(0, self.s.nr, self.s.vw):
            self._store_lanes(b, zeros, self._at(b, row, const(I64, v)), b.sub(width, const(I64, v)),
                              low=False)

    def _store_lanes(self, b: ir.IRBuilder, x: ir.Value, at: ir.Value, n: ir.Value,
                     low: bool = True) -> None:
        """The first `n` lanes of `x` (`low`; else the lanes from `n` on; n may lie outside
        [0, VW]) to `at`, in a packing buffer: this thread's, with SLACK floats after it.
        AVX-512 stores under a mask register. With AVX, LLVM's masked store is VMASKMOVPS,
        microcoded on AMD's Zen 2 and 3: a 12x12 map's convolution spent a quarter of its time
        in the packing's tail stores (1.6x onnxruntime's time). There the vector is blended
        (VBLENDVPS) with what the buffer holds and stored whole: the other lanes are written
        back unchanged (nothing else writes the buffer meanwhile). The blend's mask is loaded
        from a table: a mask LLVM can see is boolean turns the blend and store back into a
        masked store."""
        vw = self.s.vw
        if vw != 8:
            lanes = self._lanes_below(b, 0, n)
            b.call(self.masked_store, [x, at, const(I32, 4), lanes if low else b.not_(lanes)])
            return
        n = self._min(b, self._max(b, n, const(I64, 0)), const(I64, vw))
        table = self._lane_table()
        first = b.sub(const(I64, 2 * vw if low else vw), n)
        mask = b.load(b.gep(table, [const(I64, 0), first], source_etype=table.value_type),
                      typ=ir.VectorType(I32, vw), align=4)
        blend = self.mod.globals.get("llvm.x86.avx.blendv.ps.256") or ir.Function(
            self.mod, ir.FunctionType(self.vec, [self.vec] * 3), name="llvm.x86.avx.blendv.ps.256")
        old = b.load(at, typ=self.vec, align=4)
        b.store(b.call(blend, [old, x, b.bitcast(mask, self.vec)]), at, align=4)

    def _lane_table(self) -> ir.GlobalVariable:
        """VW zeros, VW all-ones, VW zeros (i32): VW lanes from VW - n are n zeros then ones,
        from 2 VW - n n ones then zeros."""
        table = self.mod.globals.get("dlvm_gemm_lanes")
        if table is None:
            vw = self.s.vw
            t = ir.ArrayType(I32, 3 * vw)
            table = ir.GlobalVariable(self.mod, t, name="dlvm_gemm_lanes")
            table.global_constant = True
            table.linkage = "internal"
            table.initializer = ir.Constant(t, [0] * vw + [-1] * vw + [0] * vw)
        return table

    def _splat_i64(self, b: ir.IRBuilder, x: ir.Value) -> ir.Value:
        vw = self.s.vw
        t = ir.VectorType(I64, vw)
        v = b.insert_element(ir.Constant(t, ir.Undefined), x, const(I64, 0))
        zeros = ir.Constant(ir.VectorType(I32, vw), [0] * vw)
        return b.shuffle_vector(v, ir.Constant(t, ir.Undefined), zeros)

    def _copy_rows(self, b: ir.IRBuilder, kc: ir.Value, koff: ir.Value, xp: ir.Value, start: ir.Value,
                   to: ir.Value, whole: ir.Value, rem: ir.Value, stride: int) -> None:
        """Row k of one segment for every k: `whole` vectors, then `rem` floats (_store_lanes),
        from xp + koff[k] + start (every `stride`-th float: 2 takes the even lanes of two
        loads, which may read past the segment; ConvPlan's buffer has slack after it)."""
        vw, nr = self.s.vw, self.s.nr
        even = ir.Constant(ir.VectorType(I32, vw), list(range(0, 2 * vw, 2)))

        def load(at: ir.Value) -> ir.Value:
            if stride == 1:
                return b.load(at, typ=self.vec, align=4)
            lo = b.load(at, typ=self.vec, align=4)
            hi = b.load(self._at(b, at, const(I64, vw)), typ=self.vec, align=4)
            return b.shuffle_vector(lo, hi, even)
        with for_range(b, const(I64, 0), kc, f"k{stride}") as k:
            src = self._at(b, xp, b.add(b.load(b.gep(koff, [k], source_etype=I64), typ=I64), start))
            row = self._at(b, to, b.mul(k, const(I64, nr)))
            with for_range(b, const(I64, 0), whole, f"v{stride}") as v:
                off = b.mul(v, const(I64, vw))
                x = load(self._at(b, src, b.mul(off, const(I64, stride))))
                b.store(x, self._at(b, row, off), align=4)
                self._no_idiom(b)
            with b.if_then(b.icmp_signed("!=", rem, const(I64, 0))):
                off = b.mul(whole, const(I64, vw))
                x = load(self._at(b, src, b.mul(off, const(I64, stride))))
                self._store_lanes(b, x, self._at(b, row, off), rem)

    def _copy_row_groups(self, b: ir.IRBuilder, kc: ir.Value, koff: ir.Value, xp: ir.Value,
                         segments: ir.Value, seg_src: ir.Value, panel: ir.Value, stride: int,
                         group: int) -> None:
        """Segments (output rows) of VW / `group` columns, `group` of them a vector: for every
        k, a vector from each row's start (every `stride`-th float; the loads may read past
        the rows, as _copy_rows's), their first lanes put together by a tree of group - 1
        shuffles, one store. Small planes' rows (8, 4 or 2 outputs with AVX-512) otherwise
        took a loop trip and a masked store each: 4x4 and 2x2 planes spent a quarter to a
        third of a convolution packing."""
        nr, vw = self.s.nr, self.s.vw
        wo = vw // group
        levels = []                       # each level's shuffle: two vectors' valid lanes
        width, step = wo, stride
        while width < vw:
            levels.append(ir.Constant(ir.VectorType(I32, vw),
                                      [step * i for i in range(width)]
                                      + [vw + step * i for i in range(width)]
                                      + [0] * (vw - 2 * width)))
            width, step = 2 * width, 1
        with for_range(b, const(I64, 0), b.sdiv(segments, const(I64, group)), f"g{group}") as pr:
            first = b.mul(pr, const(I64, group))
            starts = [b.load(b.gep(seg_src, [b.add(first, const(I64, g))], source_etype=I64),
                             typ=I64) for g in range(group)]
            to = self._at(b, panel, b.mul(pr, const(I64, vw)))
            with for_range(b, const(I64, 0), kc, f"kg{group}s{stride}") as k:
                tap = self._at(b, xp, b.load(b.gep(koff, [k], source_etype=I64), typ=I64))
                vecs = [b.load(self._at(b, tap, st), typ=self.vec, align=4) for st in starts]
                for pick in levels:
                    vecs = [b.shuffle_vector(vecs[i], vecs[i + 1], pick)
                            for i in range(0, len(vecs), 2)]
                b.store(vecs[0], self._at(b, to, b.mul(k, const(I64, nr))), align=4)
                self._no_idiom(b)

    def pack_b_conv(self) -> ir.Function:
        """pack_b for a convolution's patch matrix, read straight from the padded input
        (implicit GEMM): B[k, n] = xp[c, i*sh + p*dh, j*sw + q*dw] with k = (c, p, q) and
        n = (i, j) over the output. No patch matrix is ever written: ResNet's first stages
        would write 7 MB of it and read it back per convolution.

        geom (i64[11]): kh, kw, wo, sh, sw, dh, dw, s_c, s_h (xp's channel and row strides in
        elements; its column stride is 1), px, s_img: the columns are the output pixels of
        consecutive images, px per image, image i's padded input at xp + i * s_img (several
        small images in one product fill its register tiles: 4 output pixels of one image
        would fill a quarter of one). jc: the block's first column.
        A panel's NR columns cross output rows and images; its runs of columns within one
        output row (segments) are found once per panel and copied for every k."""
        nr, vw = self.s.nr, self.s.vw
        fn, b = self._function("pack_b_conv", [("xp", PTR), ("geom", PTR), ("pc", I64), ("jc", I64),
                                               ("nc", I64), ("kc", I64), ("dst", PTR)])
        xp, geom, pc, jc, nc, kc, dst = fn.args
        g = [b.load(b.gep(geom, [const(I64, i)], source_etype=I64), typ=I64) for i in range(11)]
        kh, kw, wo, sh, sw, dh, dw, s_c, s_h, px, s_img = g
        zero, one = const(I64, 0), const(I64, 1)
        khw = b.mul(kh, kw)
        # per-segment source offset (within one (c, p, q) plane), destination column, length
        seg_src = b.alloca(I64, size=const(I64, nr + 1), name="seg_src")
        seg_dst = b.alloca(I64, size=const(I64, nr + 1), name="seg_dst")
        seg_len = b.alloca(I64, size=const(I64, nr + 1), name="seg_len")
        count = b.alloca(I64, name="count")
        tap_c, tap_p, tap_q = (b.alloca(I64, name=n) for n in ("tap_c", "tap_p", "tap_q"))
        # the offset in xp of row k's tap (c, p, q), stepped along k: no division per row
        koff = b.alloca(I64, size=const(I64, self.s.kc), name="koff")
        r0 = b.srem(pc, khw)
        for slot, v in ((tap_c, b.sdiv(pc, khw)), (tap_p, b.sdiv(r0, kw)), (tap_q, b.srem(r0, kw))):
            b.store(v, slot)
        with for_range(b, zero, kc, "kt") as k:
            c, p, q = (b.load(slot, typ=I64) for slot in (tap_c, tap_p, tap_q))
            b.store(b.add(b.add(b.mul(c, s_c), b.mul(b.mul(p, dh), s_h)), b.mul(q, dw)),
                    b.gep(koff, [k], source_etype=I64))
            q1 = b.add(q, one)
            next_row = b.icmp_signed("==", q1, kw)
            p1 = b.select(next_row, b.add(p, one), p)
            next_c = b.icmp_signed("==", p1, kh)
            b.store(b.select(next_row, zero, q1), tap_q)
            b.store(b.select(next_c, zero, p1), tap_p)
            b.store(b.select(next_c, b.add(c, one), c), tap_c)
        panels = b.sdiv(b.add(nc, const(I64, nr - 1)), const(I64, nr))
        with for_range(b, zero, panels, "q") as q:
            col0 = b.mul(q, const(I64, nr))
            width = self._min(b, b.sub(nc, col0), const(I64, nr))
            panel = self._at(b, dst, b.mul(q, b.mul(kc, const(I64, nr))))
            first = b.add(jc, col0)                           # output pixel of the panel's column 0
            b.store(zero, count)
            # segments: walk the panel's columns one output row at a time
            head = b.append_basic_block("seg.head")
            body = b.append_basic_block("seg.body")
            done = b.append_basic_block("seg.done")
            pre = b.block
            b.branch(head)
            b.position_at_end(head)
            t = b.phi(I64, name="t")                          # columns done in this panel
            t.add_incoming(zero, pre)
            b.cbranch(b.icmp_signed("<", t, width), body, done)
            b.position_at_end(body)
            col = b.add(first, t)
            img = b.sdiv(col, px)
            pix = b.sub(col, b.mul(img, px))
            i = b.sdiv(pix, wo)
            j = b.srem(pix, wo)
            length = self._min(b, b.sub(wo, j), b.sub(width, t))     # an image ends with a row
            n = b.load(count, typ=I64)
            b.store(b.add(b.mul(img, s_img), b.add(b.mul(b.mul(i, sh), s_h), b.mul(j, sw))),
                    b.gep(seg_src, [n], source_etype=I64))
            b.store(t, b.gep(seg_dst, [n], source_etype=I64))
            b.store(length, b.gep(seg_len, [n], source_etype=I64))
            b.store(b.add(n, one), count)
            t.add_incoming(b.add(t, length), b.block)
            b.branch(head)
            b.position_at_end(done)
            segments = b.load(count, typ=I64)
            # a whole panel of output rows half, a quarter or an eighth of a vector long (8x8,
            # 4x4 and 2x2 planes with AVX-512): `group` rows a vector, each row k one load per
            # row, a tree of shuffles and a whole store (a masked store and a loop trip per
            # row of 8 was 13% of a small CNN at batch 32, 1 thread)
            by_one = b.icmp_signed("==", sw, one)
            strided = b.or_(by_one, b.icmp_signed("==", sw, const(I64, 2)))
            whole_rows = b.and_(strided, b.icmp_signed("==", b.mul(segments, wo), width))
            grouped = ir.Constant(ir.IntType(1), 0)
            for group in (g for g in (2, 4, 8) if vw // g >= 2):
                fits = b.and_(whole_rows, b.icmp_signed("==", b.mul(wo, const(I64, group)),
                                                        const(I64, vw)))
                fits = b.and_(fits, b.icmp_signed("==", b.srem(segments, const(I64, group)), zero))
                with b.if_then(fits):
                    with b.if_else(by_one) as (unit, two):
                        with unit:
                            self._copy_row_groups(b, kc, koff, xp, segments, seg_src, panel, 1, group)
                        with two:
                            self._copy_row_groups(b, kc, koff, xp, segments, seg_src, panel, 2, group)
                grouped = b.or_(grouped, fits)
            # else segment by segment, every row k of the block: the inner loops then have one
            # trip count per segment (branches predicted), and each row is a table lookup
            with for_range(b, zero, b.select(grouped, zero, segments), "s") as sg:
                start = b.load(b.gep(seg_src, [sg], source_etype=I64), typ=I64)
                to = self._at(b, panel, b.load(b.gep(seg_dst, [sg], source_etype=I64), typ=I64))
                ln = b.load(b.gep(seg_len, [sg], source_etype=I64), typ=I64)
                whole = b.sdiv(ln, const(I64, vw))
                rem = b.sub(ln, b.mul(whole, const(I64, vw)))
                # the last, partial vector is stored under a mask: a whole-vector store past
                # the segment's end would overwrite a row or segment already packed
                unit = b.icmp_signed("==", sw, one)
                two = b.icmp_signed("==", sw, const(I64, 2))
                with b.if_else(b.or_(unit, two)) as (vector, other):
                    with vector:
                        with b.if_else(unit) as (by_one, by_two):
                            with by_one:
                                self._copy_rows(b, kc, koff, xp, start, to, whole, rem, 1)
                            with by_two:
                                self._copy_rows(b, kc, koff, xp, start, to, whole, rem, 2)
                    with other:      # other strides: element by element
                        with for_range(b, zero, kc, "ke") as k:
                            tap = b.load(b.gep(koff, [k], source_etype=I64), typ=I64)
                            src = self._at(b, xp, b.add(tap, start))
                            row = self._at(b, to, b.mul(k, const(I64, nr)))
                            with for_range(b, zero, ln, "e") as e:
                                b.store(b.load(self._at(b, src, b.mul(e, sw)), typ=F32), self._at(b, row, e))
            with b.if_then(b.icmp_signed("<", width, const(I64, nr))):     # past the last column
                with for_range(b, zero, kc, "kz") as k:
                    self._zero_tail(b, self._at(b, panel, b.mul(k, const(I64, nr))), width)
        b.ret_void()
        return fn

    def im2col(self) -> None:
        """dlvm_sgemm_im2col(xp, geom, k0, k1, P, dst): rows k0..k1 of a convolution's patch
        matrix [C*kH*kW, P] (P = Ho*Wo output pixels), row k at dst + k*P, from the padded
        input (geometry as pack_b_conv's). For the narrow layers that multiply an explicit
        patch matrix (ResNet's 7x7 stage): NumPy's strided copy took 140 us per layer.

        Each output row's Wo pixels are copied as whole vectors (stride 2: even lanes of two
        loads), which may write up to a vector past the row: rows are written in order, so
        the next row overwrites it, and the caller's buffer has SLACK floats after its end.
        So ranges [k0, k1) must not be written concurrently (the last row of one spills into
        the first of the next): jit/gemm.py calls it once for the whole matrix."""
        vw = self.s.vw
        fn, b = self._function(f"{FUNC_NAME}_im2col", [("xp", PTR), ("geom", PTR), ("k0", I64), ("k1", I64),
                                                      ("P", I64), ("dst", PTR)], internal=False, ret=I32)
        xp, geom, k0, k1, pixels, dst = fn.args
        kh, kw, wo, sh, sw, dh, dw, s_c, s_h = (
            b.load(b.gep(geom, [const(I64, i)], source_etype=I64), typ=I64) for i in range(9))
        zero, one = const(I64, 0), const(I64, 1)
        khw = b.mul(kh, kw)
        ho = b.sdiv(pixels, wo)
        even = ir.Constant(ir.VectorType(I32, vw), list(range(0, 2 * vw, 2)))
        vecs = b.sdiv(b.add(wo, const(I64, vw - 1)), const(I64, vw))
        unit = b.icmp_signed("==", sw, one)
        two = b.icmp_signed("==", sw, const(I64, 2))
        with for_range(b, k0, k1, "k") as k:
            c, r = b.sdiv(k, khw), b.srem(k, khw)
            tap = b.add(b.add(b.mul(c, s_c), b.mul(b.mul(b.sdiv(r, kw), dh), s_h)), b.mul(b.srem(r, kw), dw))
            row = self._at(b, dst, b.mul(k, pixels))
            with for_range(b, zero, ho, "oh") as oh:
                src = self._at(b, xp, b.add(tap, b.mul(b.mul(oh, sh), s_h)))
                to = self._at(b, row, b.mul(oh, wo))
                with b.if_else(unit) as (by_one, other):
                    with by_one:
                        with for_range(b, zero, vecs, "v1") as v:
                            off = b.mul(v, const(I64, vw))
                            x = b.load(self._at(b, src, off), typ=self.vec, align=4)
                            b.store(x, self._at(b, to, off), align=4)
                    with other:
                        with b.if_else(two) as (by_two, general):
                            with by_two:
                                with for_range(b, zero, vecs, "v2") as v:
                                    off = b.mul(v, const(I64, vw))
                                    at = self._at(b, src, b.mul(off, const(I64, 2)))
                                    lo = b.load(at, typ=self.vec, align=4)
                                    hi = b.load(self._at(b, at, const(I64, vw)), typ=self.vec, align=4)
                                    b.store(b.shuffle_vector(lo, hi, even), self._at(b, to, off), align=4)
                            with general:
                                with for_range(b, zero, wo, "e") as e:
                                    x = b.load(self._at(b, src, b.mul(e, sw)), typ=F32)
                                    b.store(x, self._at(b, to, e))
        b.ret(const(I32, 0))

    # ---- the micro-kernel ----------------------------------------------------------------

    def micro(self, nvec: int, rows: int) -> ir.Function:
        """C tile [rows, nvec * VW] (+)= packed A panel x packed B panel over kc steps; writes
        rows < mr and columns < nr of it (a full tile straight from registers). rows < MR: the
        last row panel of M (ResNet's 49 output pixels: 6 panels of 8 and one row, which a
        full 8-row tile would compute for 14% more time).

        Row k of B's tile starts at pb + koff[k]: k * NR in a packed panel (the `panel_rows`
        table), or where an unpacked B has it (flag 8: a stride-1 convolution's padded input, a
        pointwise one's image). One table lookup per k beside 24 FMAs costs nothing measurable,
        and one kernel serves both. Vector v of the row is `vstep` floats after vector v - 1:
        VW where the columns are contiguous, a padded row where each vector is one output row
        of a convolution's VW-wide map. It reads up to VW - 1 floats past column nr."""
        s, vec = self.s, self.vec
        width = nvec * s.vw
        fn, b = self._function(f"micro{nvec}_{rows}", [("kc", I64), ("pa", PTR), ("pb", PTR), ("c", PTR),
                                      ("ldc", I64), ("mr", I64), ("nr", I64), ("beta", I64),
                                      ("bias", PTR), ("epi", I64), ("koff", PTR), ("vstep", I64)])
        kc, pa, pb, c, ldc, mr, nr, beta, bias, epi, koff, vstep = fn.args
        acc = [[b.alloca(vec, name=f"acc{i}_{v}") for v in range(nvec)] for i in range(rows)]
        zero = ir.Constant(vec, [0.0] * s.vw)
        for row in acc:
            for slot in row:
                b.store(zero, slot)
        with for_range(b, const(I64, 0), kc, "k") as k:
            bp = self._at(b, pb, b.load(b.gep(koff, [k], source_etype=I64), typ=I64))
            bv = [b.load(self._at(b, bp, b.mul(vstep, const(I64, v))), typ=vec, align=4)
                  for v in range(nvec)]
            ap = self._at(b, pa, b.mul(k, const(I64, s.mr)))
            for i in range(rows):
                ai = self._splat(b, b.load(self._at(b, ap, const(I64, i)), typ=F32))
                for v in range(nvec):
                    b.store(b.call(self.fma, [ai, bv[v], b.load(acc[i][v], typ=vec)]), acc[i][v])
        add_c = b.icmp_signed("!=", beta, const(I64, 0))
        row_bias, col_bias, relu = (b.icmp_signed("!=", b.and_(epi, const(I64, bit)), const(I64, 0))
                                    for bit in (1, 2, 4))
        full = b.and_(b.icmp_signed("==", mr, const(I64, rows)), b.icmp_signed("==", nr, const(I64, width)))
        with b.if_else(full) as (then, otherwise):
            with then:
                crows = [self._at(b, c, b.mul(const(I64, i), ldc)) for i in range(rows)]
                with b.if_then(add_c):
                    for i in range(rows):
                        for v in range(nvec):
                            old = b.load(self._at(b, crows[i], const(I64, v * s.vw)), typ=vec, align=4)
                            b.store(b.fadd(b.load(acc[i][v], typ=vec), old), acc[i][v])
                # the epilogue, in the order a separate pass would apply it: bias, then relu
                with b.if_then(b.icmp_signed("!=", epi, const(I64, 0))):
                    with b.if_then(row_bias):
                        for i in range(rows):
                            bi = self._splat(b, b.load(self._at(b, bias, const(I64, i)), typ=F32))
                            for v in range(nvec):
                                b.store(b.fadd(b.load(acc[i][v], typ=vec), bi), acc[i][v])
                    with b.if_then(col_bias):
                        bvs = [b.load(self._at(b, bias, const(I64, v * s.vw)), typ=vec, align=4)
                               for v in range(nvec)]
                        for i in range(rows):
                            for v in range(nvec):
                                b.store(b.fadd(b.load(acc[i][v], typ=vec), bvs[v]), acc[i][v])
                    with b.if_then(relu):
                        for i in range(rows):
                            for v in range(nvec):
                                b.store(b.call(self.vmax, [b.load(acc[i][v], typ=vec), zero]), acc[i][v])
                for i in range(rows):
                    for v in range(nvec):
                        b.store(b.load(acc[i][v], typ=vec), self._at(b, crows[i], const(I64, v * s.vw)),
                                align=4)
            with otherwise:     # an edge tile: through a buffer, element by element
                tile = b.alloca(vec, size=const(I64, rows * nvec), name="tile")
                for i in range(rows):
                    for v in range(nvec):
                        b.store(b.load(acc[i][v], typ=vec),
                                b.gep(tile, [const(I64, i * nvec + v)], source_etype=vec))
                x_slot = b.alloca(F32, name="x")
                with for_range(b, const(I64, 0), mr, "ei") as i:
                    with for_range(b, const(I64, 0), nr, "ej") as j:
                        p = self._at(b, c, b.add(b.mul(i, ldc), j))
                        lane = b.gep(tile, [b.add(b.mul(i, const(I64, nvec)), b.sdiv(j, const(I64, s.vw)))],
                                     source_etype=vec)
                        x = b.extract_element(b.load(lane, typ=vec), b.srem(j, const(I64, s.vw)))
                        self._store_element(b, x, x_slot, p, i, j, bias, (add_c, row_bias, col_bias, relu))
        b.ret_void()
        return fn

    def _store_element(self, b: ir.IRBuilder, x: ir.Value, x_slot: ir.Value, p: ir.Value,
                       i: ir.Value, j: ir.Value, bias: ir.Value, flags: tuple) -> None:
        """C[i, j] at p = x (+ C when beta, + the row's or column's bias, then relu), one
        element of an edge tile, in the order a separate pass would apply them."""
        add_c, row_bias, col_bias, relu = flags
        b.store(x, x_slot)
        with b.if_then(add_c):
            b.store(b.fadd(b.load(x_slot, typ=F32), b.load(p, typ=F32)), x_slot)
        for flag, index in ((row_bias, i), (col_bias, j)):
            with b.if_then(flag):
                bx = b.load(self._at(b, bias, index), typ=F32)
                b.store(b.fadd(b.load(x_slot, typ=F32), bx), x_slot)
        with b.if_then(relu):
            b.store(b.call(self.smax, [b.load(x_slot, typ=F32), ir.Constant(F32, 0.0)]), x_slot)
        b.store(b.load(x_slot, typ=F32), p)

    # Widths of the column-tail kernels (micro_columns): a tail of t columns runs the
    # narrowest one of at least t; wider tails run a whole-vector micro-kernel
    COLUMN_TAILS = (1, 2, 4, 8, 12)

    def column_panels(self, width: int) -> int:
        """Row panels one column-tail call computes together: enough independent sums
        (panels x width) to hide the FMA's latency, within half the vector registers."""
        budget = 16 if self.s.vw >= 16 else 8
        return max(1, min(8, budget // width))

    def micro_columns(self, width: int) -> ir.Function:
        """C tile [mr, nr] (+)= `column_panels(width)` packed A panels (mr rows in all) x B's
        first nr <= `width` columns, each panel's MR rows as one vector and one accumulator per
        panel and column. For N's last few columns: a 7x7 image's 49 output pixels are a full
        48-column tile and one column, which the one-vector micro-kernel computes as MR
        whole-width FMAs per k; here it is one MR-wide FMA per panel. One panel and one column
        alone would be a single chain of FMAs, each waiting for the last (ResNet-18's last
        stage spent 13% of its time there at batch 1): the panels side by side make
        independent chains. Each element sums over k in the same order as micro(), so results
        are the same bits. Reads B up to `width` columns (a packed panel holds NR; in place,
        VW - 1 of slack); panels past the last row read the last panel again, never past it."""
        s = self.s
        panels = self.column_panels(width)
        rvec = ir.VectorType(F32, s.mr)
        fma = intrinsic(self.mod, "llvm.fma", rvec, [rvec] * 3, suffix=f"v{s.mr}f32")
        fn, b = self._function(f"micro_columns{width}", [
            ("kc", I64), ("pa", PTR), ("pb", PTR), ("c", PTR), ("ldc", I64), ("mr", I64),
            ("nr", I64), ("beta", I64), ("bias", PTR), ("epi", I64), ("koff", PTR)])
        kc, pa, pb, c, ldc, mr, nr, beta, bias, epi, koff = fn.args
        last = b.sdiv(b.sub(mr, const(I64, 1)), const(I64, s.mr))
        panel_floats = b.mul(kc, const(I64, s.mr))
        pas = [self._at(b, pa, b.mul(self._min(b, const(I64, p), last), panel_floats))
               for p in range(panels)]
        acc = [[b.alloca(rvec, name=f"acc{p}_{j}") for j in range(width)] for p in range(panels)]
        for row in acc:
            for slot in row:
                b.store(ir.Constant(rvec, [0.0] * s.mr), slot)
        splat_mask = ir.Constant(ir.VectorType(ir.IntType(32), s.mr), [0] * s.mr)
        with for_range(b, const(I64, 0), kc, "k") as k:
            bp = self._at(b, pb, b.load(b.gep(koff, [k], source_etype=I64), typ=I64))
            bjs = []
            for j in range(width):
                bj = b.insert_element(ir.Constant(rvec, ir.Undefined),
                                      b.load(self._at(b, bp, const(I64, j)), typ=F32), const(I64, 0))
                bjs.append(b.shuffle_vector(bj, ir.Constant(rvec, ir.Undefined), splat_mask))
            at = b.mul(k, const(I64, s.mr))
            for p in range(panels):
                av = b.load(self._at(b, pas[p], at), typ=rvec, align=4)
                for j in range(width):
                    b.store(b.call(fma, [av, bjs[j], b.load(acc[p][j], typ=rvec)]), acc[p][j])
        # the store, element by element, in micro()'s order: + C, bias, relu
        add_c = b.icmp_signed("!=", beta, const(I64, 0))
        row_bias, col_bias, relu = (b.icmp_signed("!=", b.and_(epi, const(I64, bit)), const(I64, 0))
                                    for bit in (1, 2, 4))
        tile = b.alloca(rvec, size=const(I64, width * panels), name="tile")   # column by column
        for p in range(panels):
            for j in range(width):
                b.store(b.load(acc[p][j], typ=rvec),
                        b.gep(tile, [const(I64, j * panels + p)], source_etype=rvec))
        x_slot = b.alloca(F32, name="x")
        with for_range(b, const(I64, 0), nr, "ej") as j:
            with for_range(b, const(I64, 0), mr, "ei") as i:
                p = self._at(b, c, b.add(b.mul(i, ldc), j))
                at = b.add(b.mul(j, const(I64, panels)), b.sdiv(i, const(I64, s.mr)))
                lane = b.load(b.gep(tile, [at], source_etype=rvec), typ=rvec)
                self._store_element(b, b.extract_element(lane, b.srem(i, const(I64, s.mr))), x_slot,
                                    p, i, j, bias, (add_c, row_bias, col_bias, relu))
        b.ret_void()
        return fn

    # ---- the blocked driver --------------------------------------------------------------

    def gemm(self) -> ir.Function:
        s = self.s
        pack_a, pack_b, pack_b_conv = self.pack_a(), self.pack_b(), self.pack_b_conv()
        self.pack_all(pack_a, "a", s.mr)
        self.pack_all(pack_b, "b", s.nr)
        self.im2col()
        nvecs = s.nr // s.vw
        micros = {(n, r): self.micro(n, r) for n in range(1, nvecs + 1) for r in self.edge_rows()}
        # (an MR that is not a vector width, AVX2's 6, keeps the whole-vector tails)
        self.columns = ({w: self.micro_columns(w) for w in self.COLUMN_TAILS if w < s.vw}
                        if s.mr in (4, 8, 16) else {})
        panel_rows = ir.GlobalVariable(self.mod, ir.ArrayType(I64, s.kc), "panel_rows")
        panel_rows.initializer = ir.Constant(ir.ArrayType(I64, s.kc), [k * s.nr for k in range(s.kc)])
        panel_rows.global_constant = True
        panel_rows.linkage = "internal"
        fn, b = self._function(FUNC_NAME, [
            ("M", I64), ("N", I64), ("K", I64), ("A", PTR), ("sam", I64), ("sak", I64),
            ("B", PTR), ("sbk", I64), ("sbn", I64), ("C", PTR), ("ldc", I64),
            ("packA", PTR), ("packB", PTR), ("beta", I64),
            ("flags", I64), ("a_row0", I64), ("m_pad", I64), ("b_col0", I64), ("n_pad", I64),
            ("bias", PTR), ("epi", I64)],
            internal=False, ret=I32)
        (m, n, k, a, sam, sak, bb, sbk, sbn, c, ldc, pka, pkb, beta,
         flags, a_row0, m_pad, b_col0, n_pad, bias, epi) = fn.args
        zero = const(I64, 0)
        by_row = b.icmp_signed("!=", b.and_(epi, const(I64, 1)), zero)
        a_ready = b.icmp_signed("!=", b.and_(flags, const(I64, 1)), zero)
        b_ready = b.icmp_signed("!=", b.and_(flags, const(I64, 2)), zero)
        b_conv = b.icmp_signed("!=", b.and_(flags, const(I64, 4)), zero)
        b_direct = b.icmp_signed("!=", b.and_(flags, const(I64, 8)), zero)
        b_rows = b.inttoptr(sbk, PTR)       # flag 8: row k of B starts at B + b_rows[k]
        # flag 8 with sbn > 0: the call's columns are vectors `sbn` floats apart (a stride-1
        # convolution of VW-wide output rows, each vector one row of its padded input); every
        # column offset is then a multiple of VW
        by_vectors = b.and_(b_direct, b.icmp_signed(">", sbn, zero))
        # ... and n_pad > 0 (unused by flag 8 otherwise): that many vectors make one output row,
        # rows sbn floats apart (a tile's two vectors may then lie in two rows: with AVX2's two
        # vectors a tile its second is one step from the first, whatever that step is)
        vpr = b.select(b.and_(by_vectors, b.icmp_signed(">", n_pad, zero)), n_pad, const(I64, 1))

        def vector_at(q: ir.Value) -> ir.Value:
            """Where vector q of the columns starts, by vectors: (q / vpr) rows, q % vpr on."""
            row = b.sdiv(q, vpr)
            return b.add(b.mul(row, sbn), b.mul(b.sub(q, b.mul(row, vpr)), const(I64, s.vw)))
        with for_range(b, zero, n, "jc", step=const(I64, s.nc)) as jc:
            nc = self._min(b, b.sub(n, jc), const(I64, s.nc))
            with for_range(b, zero, k, "pc", step=const(I64, s.kc)) as pc:
                kc = self._min(b, b.sub(k, pc), const(I64, s.kc))
                # a prepacked B (a constant's panels, packed once) is read in place: within a
                # K block its panels follow each other in column order, kc floats per column
                with b.if_else(b_conv) as (conv_, plain):
                    with conv_:     # B is a convolution's patch matrix: sbk holds its geometry
                        b.call(pack_b_conv, [bb, b.inttoptr(sbk, PTR), pc, b.add(b_col0, jc), nc, kc, pkb])
                    with plain:
                        with b.if_then(b.not_(b.or_(b_ready, b_direct))):
                            b_block = self._at(b, bb, b.add(b.mul(pc, sbk), b.mul(jc, sbn)))
                            b.call(pack_b, [b_block, sbk, sbn, nc, kc, pkb])
                b_here = self._at(b, bb, b.add(b.mul(pc, n_pad), b.mul(b.add(b_col0, jc), kc)))
                pkb_k = b.select(b_ready, b_here, pkb)
                # the first K block writes C (or adds to it when beta), the later ones add;
                # the last one applies the epilogue
                first = b.icmp_signed("==", pc, zero)
                beta_k = b.select(first, beta, const(I64, 1))
                epi_k = b.select(b.icmp_signed(">=", b.add(pc, kc), k), epi, zero)
                with for_range(b, zero, m, "ic", step=const(I64, s.mc)) as ic:
                    mc = self._min(b, b.sub(m, ic), const(I64, s.mc))
                    with b.if_then(b.not_(a_ready)):
                        a_block = self._at(b, a, b.add(b.mul(ic, sam), b.mul(pc, sak)))
                        b.call(pack_a, [a_block, sam, sak, mc, kc, pka])
                    a_here = self._at(b, a, b.add(b.mul(pc, m_pad), b.mul(b.add(a_row0, ic), kc)))
                    pka_i = b.select(a_ready, a_here, pka)
                    with for_range(b, zero, nc, "jr", step=const(I64, s.nr)) as jr:
                        nr = self._min(b, b.sub(nc, jr), const(I64, s.nr))
                        col = b.add(b.add(b_col0, jc), jr)
                        q0 = b.sdiv(col, const(I64, s.vw))
                        first_v = vector_at(q0)
                        vstep = b.select(by_vectors, b.sub(vector_at(b.add(q0, const(I64, 1))), first_v),
                                         const(I64, s.vw))
                        col = b.select(by_vectors, first_v, col)
                        pb = b.select(b_direct, self._at(b, bb, col),
                                      self._at(b, pkb_k, b.mul(jr, kc)))
                        koff = b.select(b_direct, b.gep(b_rows, [pc], source_etype=I64),
                                        b.bitcast(panel_rows, PTR))
                        head, tail, t = self._split_columns(b, nr)

                        def tile_at(ir_: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
                            """The packed A panel, C's tile and the bias of rows from ir_."""
                            pa = self._at(b, pka_i, b.mul(ir_, kc))
                            tile = self._at(b, c, b.add(b.mul(b.add(ic, ir_), ldc), b.add(jc, jr)))
                            # (a plain gep: bias may be null when epi has no bias bit)
                            at = b.select(by_row, b.add(ic, ir_), b.add(jc, jr))
                            return pa, tile, b.gep(bias, [at], source_etype=F32)

                        with b.if_then(b.icmp_signed(">", head, zero)):
                            with for_range(b, zero, mc, "ir", step=const(I64, s.mr)) as ir_:
                                mr = self._min(b, b.sub(mc, ir_), const(I64, s.mr))
                                pa, tile, bias_t = tile_at(ir_)
                                args = [kc, pa, pb, tile, ldc, mr, head, beta_k, bias_t, epi_k, koff,
                                        vstep]
                                self._call_whole(b, micros, head, mr, args)
                        if self.columns:
                            with b.if_then(tail):
                                self._call_columns(b, t, head, mc, tile_at,
                                                   [kc, pb, ldc, beta_k, epi_k, koff, vstep])
        b.ret(const(I32, 0))      # the status word of every kernel: nothing can fail here
        return fn

    def pack_all(self, pack: ir.Function, which: str, tile: int) -> None:
        """dlvm_sgemm_pack_{a,b}(rows, K, src, s_row, s_k, dst): a whole operand in the
        prepacked layout the kernel reads with flag 1 (A) or 2 (B): K blocks of KC one after
        another, each holding every panel (rows padded to a multiple of the tile)."""
        s = self.s
        fn, b = self._function(f"{FUNC_NAME}_pack_{which}", [
            ("rows", I64), ("K", I64), ("src", PTR), ("s_row", I64), ("s_k", I64), ("dst", PTR)],
            internal=False, ret=I32)
        rows, k, src, s_row, s_k, dst = fn.args
        padded = b.mul(b.sdiv(b.add(rows, const(I64, tile - 1)), const(I64, tile)), const(I64, tile))
        with for_range(b, const(I64, 0), k, "pc", step=const(I64, s.kc)) as pc:
            kc = self._min(b, b.sub(k, pc), const(I64, s.kc))
            strides = [s_row, s_k] if which == "a" else [s_k, s_row]    # pack_b takes (k, column)
            b.call(pack, [self._at(b, src, b.mul(pc, s_k)), *strides, rows, kc,
                          self._at(b, dst, b.mul(pc, padded))])
        b.ret(const(I32, 0))

    def edge_rows(self) -> list[int]:
        """Row counts of the micro-kernels: MR, and fewer for M's last panel. AVX2's MR of 6
        leaves 2 or 4 rows of the usual channel counts and batches (16, 32, 64, 128), which
        the next taller kernel computed with rows to spare and stored element by element: a
        kernels of 2 and 4 rows too (0.92-0.96x the time at M = 16 to 128, 0.88x at M = 4).
        Each kernel adds to the module's one compile per machine (AVX2: 1.5 s, 2.4 s with
        every height up to 6), so not 5 rows, which few M leave."""
        if self.s.mr == 6:
            return [1, 2, 3, 4, 6]
        return sorted({1, max(1, self.s.mr // 2), self.s.mr})

    def _split_columns(self, b: ir.IRBuilder, nr: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(head, tail, t) of a tile of `nr` columns: micro() computes the first `head`
        columns (whole vectors); when `tail`, the last t past them (up to the widest column
        kernel) are micro_columns()' work."""
        if not self.columns:
            return nr, ir.Constant(ir.IntType(1), 0), const(I64, 0)
        t = b.srem(nr, const(I64, self.s.vw))
        tail = b.and_(b.icmp_signed(">", t, const(I64, 0)),
                      b.icmp_signed("<=", t, const(I64, max(self.columns))))
        return b.select(tail, b.sub(nr, t), nr), tail, t

    def _call_columns(self, b: ir.IRBuilder, t: ir.Value, whole: ir.Value, mc: ir.Value,
                      tile_at, shared: list[ir.Value]) -> None:
        """The last t columns (from `whole`) of every row of the block, by the narrowest
        column kernel of at least t columns, column_panels() row panels a call."""
        kc, pb, ldc, beta, epi, koff, vstep = shared
        # the tail's vector: `whole` columns (whole vectors) past the tile's first
        tail_at = self._at(b, pb, b.mul(b.sdiv(whole, const(I64, self.s.vw)), vstep))
        col_bias = b.icmp_signed("!=", b.and_(epi, const(I64, 2)), const(I64, 0))
        widths = sorted(self.columns)
        done = b.append_basic_block("columns.done")
        for n, w in enumerate(widths):
            here = b.append_basic_block(f"columns{w}")
            if n + 1 < len(widths):
                nxt = b.append_basic_block(f"columns{w}.else")
                b.cbranch(b.icmp_signed("<=", t, const(I64, w)), here, nxt)
            else:
                b.branch(here)
            b.position_at_end(here)
            step = const(I64, self.column_panels(w) * self.s.mr)
            with for_range(b, const(I64, 0), mc, f"ic{w}", step=step) as ir_:
                rows = self._min(b, b.sub(mc, ir_), step)
                pa, tile, bias_t = tile_at(ir_)
                bias_t = b.select(col_bias, b.gep(bias_t, [whole], source_etype=F32), bias_t)
                b.call(self.columns[w], [kc, pa, tail_at, self._at(b, tile, whole),
                                         ldc, rows, t, beta, bias_t, epi, koff])
            b.branch(done)
            if n + 1 < len(widths):
                b.position_at_end(nxt)
        b.position_at_end(done)

    def _call_whole(self, b: ir.IRBuilder, micros: dict[tuple[int, int], ir.Function],
                    nr: ir.Value, mr: ir.Value, args: list[ir.Value]) -> None:
        """The smallest micro-kernel whose width covers the `nr` columns left and whose
        height covers the `mr` rows left."""
        done = b.append_basic_block("micro.done")
        widths = sorted({n for n, _ in micros})
        heights = self.edge_rows()

        def by_height(nvec: int) -> None:
            for rows in heights[:-1]:
                fits = b.icmp_signed("<=", mr, const(I64, rows))
                here = b.append_basic_block(f"micro{nvec}_{rows}")
                nxt = b.append_basic_block(f"micro{nvec}_{rows}.else")
                b.cbranch(fits, here, nxt)
                b.position_at_end(here)
                b.call(micros[(nvec, rows)], args)
                b.branch(done)
                b.position_at_end(nxt)
            b.call(micros[(nvec, heights[-1])], args)
            b.branch(done)
        for nvec in widths[:-1]:
            fits = b.icmp_signed("<=", nr, const(I64, nvec * self.s.vw))
            here = b.append_basic_block(f"micro{nvec}")
            nxt = b.append_basic_block(f"micro{nvec}.else")
            b.cbranch(fits, here, nxt)
            b.position_at_end(here)
            by_height(nvec)
            b.position_at_end(nxt)
        by_height(widths[-1])
        b.position_at_end(done)


def gemm_module(shape: GemmShape) -> ir.Module:
    """The LLVM module with `dlvm_sgemm` for `shape` (its helpers are internal)."""
    builder = _Builder(shape)
    builder.gemm()
    return builder.mod
