"""Ctrl-C inside a compiled kernel: a flag the kernels poll between blocks of work.

A SIGINT that arrives while a numba kernel runs does not stop it: CPython's C-level
handler only notes the signal, and the Python handler (the KeyboardInterrupt) runs
once the kernel returns to the interpreter, minutes later for a long cell.  What
the C-level handler does do at once is write the signal's number to the *wakeup
fd* (:func:`signal.set_wakeup_fd`).  Here that fd is a page of memory
(``memfd_create``) mapped into the process, so the write lands in memory that the
kernels read: :func:`stopped`, called by every long kernel between blocks of
instances (paths, rounds), sees a SIGINT among the page's first bytes and the kernel
returns early; the Python side then raises the KeyboardInterrupt (the pending
handler runs as the kernel returns; :func:`armed` raises it if it did not), so an
incomplete result is never used.

The page is armed only while kernels run (:func:`armed`, in
:func:`antiamp.runner.kernel_interrupts`), and only in the main thread, the one
thread that may set the wakeup fd; elsewhere and at other times its bytes are zero
and :func:`stopped` is always false, so a kernel called on its own (a test, a
benchmark) runs to the end as before.  A signal other than SIGINT with a Python
handler is written too but does not stop a kernel.

The kernels find the page through a symbol (``antiamp_interrupt_page``) registered
with LLVM's linker in each process before any kernel loads, not through an argument:
their signatures, and the cached machine code that refers to the symbol, stay the
same in every process.  Written by hand because numba has no way to interrupt a
running kernel; the load is atomic so that LLVM cannot hoist it
out of a kernel's loop.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import mmap
import os
import signal
import sys
import threading

import llvmlite.binding as _llvm
import numba as nb
from llvmlite import ir
from numba.core import types
from numba.core.extending import intrinsic

#: The symbol through which compiled kernels read the page.
SYMBOL = "antiamp_interrupt_page"
#: Bytes of the page a kernel looks at for a SIGINT: the first signals written (a
#: SIGINT that follows this many other signals in one armed window is seen only
#: when the kernel returns).
SLOTS = 16

_PAGE = mmap.PAGESIZE
_state = threading.local()
#: Whether the main thread has armed the kernels (read by :func:`_again`).
_ARMED = False


#: Set where the page cannot be made or remade (a child whose remap failed): the
#: kernels are never armed there and run to the end, as before.
_BROKEN = False


def _new_page():
    """A fresh memory file, one page long, non-blocking (as the wakeup fd must be): a
    ``memfd`` on Linux, an unlinked temporary file elsewhere (its writes show in a
    shared mapping as well)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("antiamp-interrupt", os.MFD_CLOEXEC)
    else:  # pragma: no cover - not Linux
        import tempfile

        with tempfile.TemporaryFile() as f:
            fd = os.dup(f.fileno())
    os.ftruncate(fd, _PAGE)
    os.set_blocking(fd, False)
    return fd


_fd = _new_page()
_map = mmap.mmap(_fd, _PAGE)  # MAP_SHARED: the fd's writes show in it
_buf = (ctypes.c_uint8 * _PAGE).from_buffer(_map)
_ADDR = ctypes.addressof(_buf)
_llvm.add_symbol(SYMBOL, _ADDR)


def _after_fork() -> None:
    """A forked child gets a page of its own at the same address (the kernels' code
    refers to the address): sharing the parent's file, a SIGINT of one process
    would stop the other's kernels."""
    global _fd
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    old = _fd
    _fd = _new_page()
    got = libc.mmap(_ADDR, _PAGE, mmap.PROT_READ | mmap.PROT_WRITE,
                    mmap.MAP_SHARED | 0x10, _fd, 0)  # 0x10: MAP_FIXED (Linux)
    if got != _ADDR:  # pragma: no cover - the kernel refused: never arm in this child
        global _BROKEN
        _BROKEN = True
    os.close(old)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


@intrinsic
def _sigint_seen(typingctx):
    """Whether a SIGINT is among the page's first :data:`SLOTS` bytes (atomic loads
    of the page that the wakeup fd writes to)."""
    def codegen(context, builder, signature, args):
        mod = builder.module
        page = mod.globals.get(SYMBOL)
        if page is None:
            page = ir.GlobalVariable(mod, ir.ArrayType(ir.IntType(8), SLOTS), name=SYMBOL)
            page.linkage = "external"
        i8 = ir.IntType(8)
        seen = ir.Constant(ir.IntType(1), 0)
        base = builder.bitcast(page, i8.as_pointer())
        for k in range(SLOTS):
            v = builder.load_atomic(builder.gep(base, [ir.Constant(ir.IntType(32), k)]),
                                    "monotonic", 1)
            seen = builder.or_(seen, builder.icmp_unsigned("==", v, ir.Constant(i8, signal.SIGINT)))
        return seen

    return types.boolean(), codegen


@nb.njit(inline="always", cache=True)
def stopped():
    """True once a SIGINT arrived while the kernels are armed: a kernel calls it between
    blocks of work and returns early (its caller raises KeyboardInterrupt)."""
    return _sigint_seen()


def _written() -> bytes:
    pos = os.lseek(_fd, 0, os.SEEK_CUR)
    return bytes(_buf[:min(pos, _PAGE)])


def _clear() -> None:
    os.lseek(_fd, 0, os.SEEK_SET)
    ctypes.memset(_ADDR, 0, SLOTS)


def _deferred_in_callbacks(signum, frame):
    """Python's SIGINT handler while armed: KeyboardInterrupt, except inside a call that a
    running kernel makes into the interpreter (numba's ``_numba_unpickle``, which
    builds the kernel's constants and exceptions, and which a parallel kernel calls
    on every call): a KeyboardInterrupt raised there comes back to the kernel as
    ``SystemError: ... returned a result with an exception set``, and the kernel went
    on with the missing object until it crashed (SIGSEGV).  There the interrupt is
    raised in the Python frame that called the kernel, at its first instruction after
    the kernel returns (:func:`_raise_on_return_to`); and in any case when the
    kernels are disarmed."""
    f = frame
    for _ in range(4):
        if f is None:
            break
        if f.f_code.co_name == "_numba_unpickle":
            _raise_on_return_to(f.f_back, signum)
            return
        f = f.f_back
    raise KeyboardInterrupt


def _raise_on_return_to(caller, signum: int) -> None:
    """KeyboardInterrupt at ``caller``'s next instruction (a trace function on that one
    frame; the kernel it called returns early, its page showing the SIGINT).

    Re-raising the signal a moment later instead (:func:`_thread.interrupt_main`) can
    land in ``_numba_unpickle`` every time, forever, when the caller calls a parallel
    kernel in a loop: the interpreter first looks at pending signals there.  Where a
    tracer is already installed (a debugger, coverage) it is left alone and the
    signal is raised again a moment later, as before."""
    if caller is None or sys.gettrace() is not None:
        t = threading.Timer(0.05, _again, args=(signum,))
        t.daemon = True
        t.start()
        return

    def local(fr, event, arg):
        if event in ("line", "opcode", "return", "exception"):
            fr.f_trace = None
            sys.settrace(None)
            raise KeyboardInterrupt
        return local

    caller.f_trace_opcodes = True
    caller.f_trace = local
    # Tracing on in this thread (the frame's f_trace is called only then); frames
    # entered meanwhile are not traced.
    sys.settrace(_no_trace)


def _no_trace(frame, event, arg):
    return None


def _again(signum: int) -> None:
    if _ARMED:
        _thread.interrupt_main(signum)


#: Threads other than the main one inside :func:`armed` (dask workers that are threads
#: of this process), and whether the page is to be cleared when the last one leaves.
_others = 0
_clear_when_alone = False
_others_lock = threading.Lock()


@contextlib.contextmanager
def armed():
    """Let the kernels run inside see a Ctrl-C (:func:`stopped`); raise KeyboardInterrupt
    on leaving if one arrived, since a kernel it stopped returned an incomplete result.

    Only the main thread arms (the wakeup fd is the main thread's); nested uses share
    the outer one.  A thread that did not arm still raises if the main thread's page
    shows a SIGINT: its kernels read the same page.  When the main thread leaves while
    such threads are still inside (its wait for them interrupted), the page keeps the
    SIGINT until the last of them leaves, so that their kernels stop too rather than
    run their cells to the end.  The wakeup fd in place before (an asyncio loop's,
    say) is restored and given the signals that arrived meanwhile.
    """
    global _others, _clear_when_alone
    depth = getattr(_state, "depth", 0)
    main = threading.current_thread() is threading.main_thread()
    if depth or not main or _BROKEN:
        other = not depth and not main
        if other:
            with _others_lock:
                _others += 1
        _state.depth = depth + 1
        try:
            yield
        finally:
            _state.depth = depth
            if other:
                with _others_lock:
                    seen = signal.SIGINT in bytes(_buf[:SLOTS])
                    _others -= 1
                    if _others == 0 and _clear_when_alone:
                        _clear()
                        _clear_when_alone = False
        if other:
            if seen:
                raise KeyboardInterrupt
        elif not depth and signal.SIGINT in bytes(_buf[:SLOTS]):
            raise KeyboardInterrupt
        return
    with _others_lock:  # a fresh window: an earlier one's pending clear is moot
        _clear()
        _clear_when_alone = False
    handler = signal.getsignal(signal.SIGINT)
    if handler is signal.default_int_handler:
        signal.signal(signal.SIGINT, _deferred_in_callbacks)
    prev = signal.set_wakeup_fd(_fd, warn_on_full_buffer=False)
    global _ARMED
    _state.depth, _ARMED = 1, True
    try:
        yield
    finally:
        _state.depth, _ARMED = 0, False
        if sys.gettrace() is _no_trace:  # a deferred interrupt never reached its frame
            sys.settrace(None)
        signal.set_wakeup_fd(prev)
        if handler is signal.default_int_handler:
            signal.signal(signal.SIGINT, handler)
        got = _written()
        with _others_lock:
            if _others and signal.SIGINT in got:
                # other threads' kernels still running: they stop on the page, and the
                # last of them to leave clears it
                os.lseek(_fd, 0, os.SEEK_SET)
                _clear_when_alone = True
            else:
                _clear()
        if got and prev >= 0:
            with contextlib.suppress(OSError):
                os.write(prev, got)
    if signal.SIGINT in got:
        raise KeyboardInterrupt
