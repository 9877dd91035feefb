"""LLVM IR of the native worker pool: threads that wait and run kernel chunks outside Python.

Handing a chunk to a Python worker thread costs tens of microseconds (a queue, a wake-up, the
GIL). Here each worker thread enters `dlvm_pool_worker` once (through ctypes, so it holds no
GIL) and never comes back to Python: it waits on a futex for the next generation and claims
chunks of the job. The caller's `dlvm_pool_run` publishes a job, claims chunks itself, and waits
only until every chunk has finished, never for a worker to wake up: a sleeping worker takes 40 to
140 us to wake on this VM, and when it is late the caller simply runs more of the chunks.

Claims are tagged with the job's generation: the ticket word holds (generation << 32 | next
chunk), and a claim is a compare-and-swap of it. A worker that wakes after its job is over
fails the swap (the ticket carries a newer generation, or no chunk is left) and never runs a
chunk of a job it did not see published. The caller closes the ticket before it rewrites the
job's fields, so fields read before a successful claim belong to that claim's job.

State: one 512-byte block, fields a cache line apart so that waiting on one does not bounce the
others:
    byte   0: i32 generation (futex word; +1 per job)    byte 4: i32 quit flag
    byte  64: i64 trampoline address, 72: i64 argument block, 80: i64 chunk count
    byte 128: i64 ticket (generation << 32 | next chunk)
    byte 192: i32 chunks finished (futex word)            byte 256: i32 OR of chunk results

A trampoline `dlvm_tramp_N(block, chunk)` calls block[0] (a kernel's address) with the N i64
arguments block[1 + chunk*N .. 1 + chunk*N + N). Kernels take i64 and pointer arguments, which
the x86-64 and AArch64 calling conventions pass alike in integer registers and stack slots, so
one trampoline per arity serves every kernel.

Linux only (futex); elsewhere the Python pool is used.
"""
from __future__ import annotations

from llvmlite import ir

from jit.llvm.irutil import I32, I64, PTR, const

MAX_ARGS = 24
STATE_BYTES = 512
_GEN, _QUIT, _FN, _BLOCK, _COUNT, _TICKET, _FINISHED, _STATUS = 0, 4, 64, 72, 80, 128, 192, 256
_CLOSED = 0xFFFFFFFF      # a ticket's chunk field while the caller rewrites the job
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}


def supported(triple: str) -> bool:
    return "linux" in triple and triple.split("-")[0] in _SYS_FUTEX


class _Builder:
    def __init__(self, triple: str):
        self.mod = ir.Module(name="dlvm_pool")
        self.arch = triple.split("-")[0]
        self.syscall = ir.Function(self.mod, ir.FunctionType(I64, [I64], var_arg=True), name="syscall")
        self.kernel_t = ir.FunctionType(I32, [PTR, I64])   # trampoline / chunk function

    def field(self, b: ir.IRBuilder, state: ir.Value, offset: int) -> ir.Value:
        return b.gep(state, [const(I64, offset)], inbounds=True, source_etype=ir.IntType(8))

    def futex(self, b: ir.IRBuilder, addr: ir.Value, op: int, val: ir.Value) -> None:
        b.call(self.syscall, [const(I64, _SYS_FUTEX[self.arch]), b.ptrtoint(addr, I64), const(I64, op),
                              val, const(I64, 0), const(I64, 0), const(I64, 0)])

    def pause(self, b: ir.IRBuilder) -> None:
        """The CPU's spin-wait hint (x86 pause, AArch64 yield): a waiting loop then does not
        starve the other hardware thread or flood the memory system."""
        if self.arch == "x86_64":
            b.call(self._declare("llvm.x86.sse2.pause", []), [])
        else:
            b.call(self._declare("llvm.aarch64.hint", [I32]), [const(I32, 1)])

    def _declare(self, name: str, args: list[ir.Type]) -> ir.Function:
        if name in self.mod.globals:
            return self.mod.globals[name]
        return ir.Function(self.mod, ir.FunctionType(ir.VoidType(), args), name=name)

    def wait_change(self, b: ir.IRBuilder, word: ir.Value, seen: ir.Value, spin: ir.Value,
                    name: str) -> ir.Value:
        """Wait until the i32 at `word` differs from `seen` (spin `spin` rounds, then sleep on
        the futex); returns the new value."""
        fn = b.function
        head = fn.append_basic_block(f"{name}.head")
        spin_bb = fn.append_basic_block(f"{name}.spin")
        done = fn.append_basic_block(f"{name}.done")
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name=f"{name}.i")
        i.add_incoming(const(I64, 0), pre)
        now = b.load_atomic(word, "seq_cst", 4, typ=I32)
        b.cbranch(b.icmp_signed("!=", now, seen), done, spin_bb)
        b.position_at_end(spin_bb)
        nxt = b.add(i, const(I64, 1))
        with b.if_else(b.icmp_signed("<", i, spin)) as (then, otherwise):
            with then:
                self.pause(b)
            with otherwise:
                # sleeps only while the word still holds `seen`: no lost wake-up
                self.futex(b, word, _FUTEX_WAIT_PRIVATE, b.zext(seen, I64))
        i.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)
        return now

    def run_chunks(self) -> ir.Function:
        """Claim and run chunks of generation `gen` until none is left or the job is over."""
        fn = ir.Function(self.mod, ir.FunctionType(ir.VoidType(), [PTR, I32]), name="run_chunks")
        fn.linkage = "internal"
        state, gen = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        task = b.inttoptr(b.load_atomic(self.field(b, state, _FN), "seq_cst", 8, typ=I64),
                          self.kernel_t.as_pointer())
        block = b.inttoptr(b.load_atomic(self.field(b, state, _BLOCK), "seq_cst", 8, typ=I64), PTR)
        count = b.load_atomic(self.field(b, state, _COUNT), "seq_cst", 8, typ=I64)
        ticket = self.field(b, state, _TICKET)
        loop = fn.append_basic_block("claim")
        check = fn.append_basic_block("check")
        swap = fn.append_basic_block("swap")
        body = fn.append_basic_block("run")
        out = fn.append_basic_block("out")
        b.branch(loop)
        b.position_at_end(loop)
        t = b.load_atomic(ticket, "seq_cst", 8, typ=I64)
        same = b.icmp_unsigned("==", b.lshr(t, const(I64, 32)), b.zext(gen, I64))
        b.cbranch(same, check, out)
        b.position_at_end(check)
        c = b.and_(t, const(I64, _CLOSED))
        b.cbranch(b.icmp_signed("<", c, count), swap, out)
        b.position_at_end(swap)
        pair = b.cmpxchg(ticket, t, b.add(t, const(I64, 1)), "seq_cst", "seq_cst")
        b.cbranch(b.extract_value(pair, 1), body, loop)
        b.position_at_end(body)
        status = b.call(task, [block, c])
        b.atomic_rmw("or", self.field(b, state, _STATUS), status, "seq_cst")
        finished = self.field(b, state, _FINISHED)
        n = b.atomic_rmw("add", finished, const(I32, 1), "seq_cst")
        # the last chunk wakes the caller, should it be asleep waiting for them
        with b.if_then(b.icmp_signed("==", b.sext(b.add(n, const(I32, 1)), I64), count)):
            self.futex(b, finished, _FUTEX_WAKE_PRIVATE, const(I64, 1))
        b.branch(loop)
        b.position_at_end(out)
        b.ret_void()
        return fn

    def worker(self, run_chunks: ir.Function) -> None:
        fn = ir.Function(self.mod, ir.FunctionType(ir.VoidType(), [PTR, I64]), name="dlvm_pool_worker")
        state, spin = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        gen = self.field(b, state, _GEN)
        # generation 0 is the state block's initial value: a worker that starts after the first
        # job was published must still see it as new
        first = const(I32, 0)
        loop = fn.append_basic_block("loop")
        b.branch(loop)
        b.position_at_end(loop)
        seen = b.phi(I32, name="seen")
        seen.add_incoming(first, b.function.entry_basic_block)
        now = self.wait_change(b, gen, seen, spin, "job")
        quit_ = b.load_atomic(self.field(b, state, _QUIT), "seq_cst", 4, typ=I32)
        with b.if_then(b.icmp_signed("!=", quit_, const(I32, 0))):
            b.ret_void()
        b.call(run_chunks, [state, now])
        seen.add_incoming(now, b.block)
        b.branch(loop)

    def run(self, run_chunks: ir.Function) -> None:
        fn = ir.Function(self.mod, ir.FunctionType(I32, [PTR, PTR, PTR, I64, I64, I64]), name="dlvm_pool_run")
        state, task, block, count, workers, spin = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        gen = self.field(b, state, _GEN)
        ticket = self.field(b, state, _TICKET)
        new = b.add(b.load_atomic(gen, "seq_cst", 4, typ=I32), const(I32, 1))
        tag = b.shl(b.zext(new, I64), const(I64, 32))
        # close the ticket (new generation, no chunk claimable) before rewriting the job: a late
        # worker's claim on the previous job fails from here on
        b.atomic_rmw("xchg", ticket, b.or_(tag, const(I64, _CLOSED)), "seq_cst")
        b.atomic_rmw("xchg", self.field(b, state, _FN), b.ptrtoint(task, I64), "seq_cst")
        b.atomic_rmw("xchg", self.field(b, state, _BLOCK), b.ptrtoint(block, I64), "seq_cst")
        b.atomic_rmw("xchg", self.field(b, state, _COUNT), count, "seq_cst")
        finished = self.field(b, state, _FINISHED)
        b.atomic_rmw("xchg", finished, const(I32, 0), "seq_cst")
        b.atomic_rmw("xchg", self.field(b, state, _STATUS), const(I32, 0), "seq_cst")
        b.atomic_rmw("xchg", ticket, tag, "seq_cst")                 # open: chunk 0 is next
        b.atomic_rmw("xchg", gen, new, "seq_cst")                    # publish
        self.futex(b, gen, _FUTEX_WAKE_PRIVATE, const(I64, 0x7FFFFFFF))
        b.call(run_chunks, [state, new])
        # wait until every chunk has finished (not for every worker: a late one finds nothing)
        head = fn.append_basic_block("wait")
        out = fn.append_basic_block("out")
        body = fn.append_basic_block("wait.body")
        b.branch(head)
        b.position_at_end(head)
        n = b.load_atomic(finished, "seq_cst", 4, typ=I32)
        b.cbranch(b.icmp_signed("<", b.sext(n, I64), count), body, out)
        b.position_at_end(body)
        self.wait_change(b, finished, n, spin, "done")
        b.branch(head)
        b.position_at_end(out)
        b.ret(b.load_atomic(self.field(b, state, _STATUS), "seq_cst", 4, typ=I32))

    def quit(self) -> None:
        """Tell the workers to return (after the job in flight, if any)."""
        fn = ir.Function(self.mod, ir.FunctionType(ir.VoidType(), [PTR]), name="dlvm_pool_quit")
        (state,) = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.atomic_rmw("xchg", self.field(b, state, _QUIT), const(I32, 1), "seq_cst")
        gen = self.field(b, state, _GEN)
        b.atomic_rmw("add", gen, const(I32, 1), "seq_cst")
        self.futex(b, gen, _FUTEX_WAKE_PRIVATE, const(I64, 0x7FFFFFFF))
        b.ret_void()

    def trampoline(self, n: int) -> None:
        fn = ir.Function(self.mod, self.kernel_t, name=f"dlvm_tramp_{n}")
        block, chunk = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        target = b.inttoptr(b.load(block, typ=I64), ir.FunctionType(I32, [I64] * n).as_pointer())
        base = b.add(const(I64, 1), b.mul(chunk, const(I64, n)))
        args = [b.load(b.gep(block, [b.add(base, const(I64, i))], source_etype=I64), typ=I64)
                for i in range(n)]
        b.ret(b.call(target, args))


def pool_module(triple: str) -> ir.Module:
    builder = _Builder(triple)
    chunks = builder.run_chunks()
    builder.worker(chunks)
    builder.run(chunks)
    builder.quit()
    for n in range(1, MAX_ARGS + 1):
        builder.trampoline(n)
    return builder.mod
