# cython: language_level=3
"""The eager VM's issue path, compiled (issue 18): the same records and rules as the
Python reference in ``actorflow/eager/`` (``blob.py``, ``instruction.py``, ``deps.py``,
``chain.py``, ``issue.py``, ``fastcall.py``, ``worker.py``), in C.

- ``Blob``, ``Instruction``, ``Step``: the VM's records (the Python names, so the VM's
  Python shell and the asynchronous device streams read them unchanged);
- ``link``: read/write dependencies (RAW, WAR, WAW) on blobs;
- ``StreamRt``: a synchronous stream's FIFO (an intrusive list under a mutex) and its
  worker, which waits without the GIL and takes it to run a Python kernel; a thread that
  waits for the stream's work runs its queue itself when the worker is idle;
- ``VMState``: a VM's issue side: submit (link + FIFO), fusion, batched releases, counters;
- ``IssuePlan.run``: one op's blobs, step, instruction (or fused into the last one);
- ``FastCall``: a functional op's cached call: key, lookup, run, in one C call.

Imports nothing of actorflow (the arrows): the Python side hands in what it must call
(``configure``).
"""

cimport cython
from cpython.object cimport PyObject, PyObject_Call
from cpython.ref cimport Py_DECREF
from cpython.object cimport PyTypeObject

import threading
import traceback

cdef extern from "eager_wake.h" nogil:
    ctypedef struct af_wake:
        int sleeping
    void af_wake_init(af_wake *w)
    void af_wake_destroy(af_wake *w)
    void af_wake_wait(af_wake *w, const long *ready, double seconds)
    void af_wake_kick(af_wake *w)

cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_mutex_t:
        pass
    int pthread_mutex_init(pthread_mutex_t *m, void *attr)
    int pthread_mutex_lock(pthread_mutex_t *m)
    int pthread_mutex_trylock(pthread_mutex_t *m)
    int pthread_mutex_unlock(pthread_mutex_t *m)
    int pthread_mutex_destroy(pthread_mutex_t *m)

cdef extern from *:
    """
    static pthread_mutex_t *af_wake_mu(af_wake *w) { return &w->mu; }
    """
    pthread_mutex_t *af_wake_mu(af_wake *w) nogil

cdef extern from "Python.h":
    ctypedef struct PyFrameObject:
        pass
    PyFrameObject *PyEval_GetFrame()
    int PyFrame_GetLasti(PyFrameObject *f)

cdef extern from *:
    """
    static PyObject *af_frame_code(PyFrameObject *f) { return (PyObject *)PyFrame_GetCode(f); }
    static PyObject *af_frame_back(PyFrameObject *f) { return (PyObject *)PyFrame_GetBack(f); }
    """
    object af_frame_code(PyFrameObject *f)
    PyObject *af_frame_back(PyFrameObject *f)

NAME = "native"

cdef enum:  # (the Python reference's constants: deps.py, chain.py, vm.py)
    PRUNE_AT = 16
    MAX_CHAIN = 64
    RELEASE_BATCH = 32
    RELEASE_BYTES = 1 << 20

cdef long long _next_blob = 0
cdef long long _next_instr = 0

# what the Python side hands in (configure): meta_of(shape, dtype, device), caller_where()
cdef object _meta_of = None
cdef object _act_record = None
cdef object _tensor_type = None
cdef object _hook = None
cdef object _EMPTY = ()


cdef dict _inside = {}  # code object -> is it actorflow's own code (shared with Python)
cdef str _pkg_dir = "/"
cdef object _NOSCALAR = object()
cdef dict _FORMS = {None: -1, "t": 0, "t0": 1, "tt": 2, "ts": 3, "st": 4}
cdef dict _UNSAFE = {"casting": "unsafe"}


def configure(meta_of, caller_where, act_record, inside=None, pkg_dir=None):
    """What the Python side hands in: ``meta_of(shape, dtype, device)``, the Python
    ``caller_where`` (for Python plans), the trace's act record class, and the code
    objects known to be actorflow's (``inside``: code -> bool) under ``pkg_dir``."""
    global _meta_of, _act_record, _inside, _pkg_dir
    _meta_of, _act_record = meta_of, act_record
    if inside is not None:
        _inside, _pkg_dir = inside, pkg_dir


@cython.no_gc
@cython.freelist(64)
cdef class Where:
    """Where the user issued an op: code object + bytecode offset, formatted as
    file:line only when read (the compiled twin of ``eager.tensor.Where``)."""

    cdef public object code
    cdef public int lasti

    def __init__(self, code, int lasti):
        self.code, self.lasti = code, lasti

    @property
    def line(self):
        for start, end, line in self.code.co_lines():
            if start <= self.lasti < end and line is not None:
                return line
        return self.code.co_firstlineno

    def __getitem__(self, i):
        return (self.code.co_filename, self.line)[i]

    def __iter__(self):
        return iter((self.code.co_filename, self.line))

    def __eq__(self, other):
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, Where)) else other)

    def __hash__(self):
        return hash(tuple(self))

    def __repr__(self):
        return f"{self.code.co_filename}:{self.line}"


cdef object where_here():
    """The nearest Python frame outside actorflow, from the innermost one (C frames of
    this module have none), as a ``Where``."""
    cdef PyFrameObject *f = PyEval_GetFrame()
    cdef PyObject *back
    cdef object hold = None  # keeps the frame we stand on alive
    cdef Where w
    while f is not NULL:
        code = af_frame_code(f)
        known = _inside.get(code)
        if known is None:
            if len(_inside) > 10_000:
                _inside.clear()
            known = _inside[code] = code.co_filename.startswith(_pkg_dir)
        if not known:
            w = Where.__new__(Where)
            w.code = code
            w.lasti = PyFrame_GetLasti(f)
            return w
        back = af_frame_back(f)
        if back is NULL:
            return None
        hold = <object>back
        Py_DECREF(hold)
        f = <PyFrameObject *>back
    return None


def caller_where():
    """``where_here()`` from Python (tests)."""
    return where_here()


cdef class VMState


@cython.no_gc_clear  # its dealloc hands _blob to _vm; both must still be there
cdef class TensorBase:
    """The data slots of an eager local tensor; when it dies its blob goes back to the VM
    (``vm.release``: queued, released in batches), without a Python ``__del__``."""

    cdef public object _blob, _vm
    cdef VMState _state  # the native VM's issue side, when the compiled core made it

    def __dealloc__(self):
        vm, blob = self._vm, self._blob
        if vm is not None and blob is not None:
            try:
                if self._state is not None and self._state.vm is vm and type(blob) is Blob:
                    self._state._release(<Blob>blob)
                else:
                    vm.release(blob)
            except BaseException:  # interpreter teardown: modules may be half gone
                pass


def set_tensor_type(t):
    global _tensor_type
    _tensor_type = t


def set_issue_hook(fn):
    global _hook
    _hook = fn


# -- records ---------------------------------------------------------------------------------
@cython.no_gc  # (never in a cycle once its producer finished: keeps the GC off the hot path)
@cython.freelist(256)
@cython.no_gc_clear  # a tensor dying in the same garbage cycle still reads its blob's
# device and size in its own dealloc (vm.release): the collector must not None them first
cdef class Blob:
    """A tensor's data and its dependency bookkeeping (see ``eager/blob.py``)."""

    cdef public object shape, dtype, device, array, error, meta, producer, last_writer
    cdef public list readers
    cdef public Py_ssize_t nbytes
    cdef public long long id
    cdef public int prune_at
    cdef public bint dead
    cdef public long nreads  # reads ever issued (an instruction's, or a fused step's)
    cdef long chain_reads, last_step  # reads by steps of its own (fused) instruction

    def __init__(self, shape, dtype, device, array=None, nbytes=None, meta=None):
        global _next_blob
        _next_blob += 1
        self.id = _next_blob
        self.shape, self.dtype, self.device, self.array = shape, dtype, device, array
        self.meta = meta if meta is not None else _meta_of(shape, dtype, device)
        self.nbytes = self.meta.nbytes if nbytes is None else nbytes
        self.readers = []
        self.prune_at = PRUNE_AT

    def __repr__(self):
        return f"<blob {self.id} {self.shape} {self.dtype} on {self.device}>"


cdef inline Blob _new_blob(tuple proto):
    """A blob of ``proto`` = (meta, shape, dtype, device, nbytes), read once per plan."""
    global _next_blob
    cdef Blob b = Blob.__new__(Blob)
    _next_blob += 1
    b.id = _next_blob
    b.meta, b.shape, b.dtype, b.device, b.nbytes = proto
    b.readers = []
    b.prune_at = PRUNE_AT
    return b


@cython.no_gc  # (it drops what it holds when done; the VM drops its streams' last ones)
@cython.freelist(256)
cdef class Instruction:
    """One unit of work of a stream (see ``eager/instruction.py``)."""

    cdef public object itype, stream, name, operand, where, error, deps
    cdef public tuple reads, writes  # (tuples: nothing for the GC to follow per op)
    cdef public long long id
    cdef public bint dispatched, started, done, fusable, waited
    cdef Instruction next_

    def __init__(self, itype, stream, name, operand, reads, writes, where):
        global _next_instr
        _next_instr += 1
        self.id = _next_instr
        self.itype, self.stream, self.name, self.operand = itype, stream, name, operand
        self.reads, self.writes, self.where = tuple(reads), tuple(writes), where
        self.deps = _EMPTY
        self.fusable = itype.fusable

    def describe(self):
        at = f" at {self.where[0]}:{self.where[1]}" if self.where else ""
        return f"instruction {self.id} '{self.name}' on {self.stream.label}{at}"

    def __repr__(self):
        return f"<{self.describe()}{' done' if self.done else ''}>"


@cython.no_gc  # (its instruction drops it when done, breaking blob -> producer -> step)
@cython.freelist(256)
cdef class Step:
    """One op of a compute instruction (see ``eager/chain.py``)."""

    cdef public object name, where, kernel, ufunc, form, ins, outs, attrs, scalar
    cdef public tuple reads, writes  # (tuples: untracked by the GC once it saw them)
    cdef object fn  # the element-wise function (None: looked up on the stream by name)
    cdef int fcode
    cdef public bint unsafe  # pass casting="unsafe" (the output's dtype needs it)

    def __init__(self, name, where, kernel, ufunc, ins, outs, attrs, reads, writes):
        self.name, self.where, self.kernel = name, where, kernel
        self.fcode = -1
        if ufunc is not None:
            self.ufunc, self.form = ufunc[0], ufunc[1]
            self.unsafe = len(ufunc) < 3 or ufunc[2]
            self.fcode = _FORMS[self.form]
            if self.fcode >= 3:
                self.scalar = attrs["scalar"]
        self.ins, self.outs, self.attrs = ins, outs, attrs
        self.reads, self.writes = tuple(reads), tuple(writes)

    @property
    def cast(self):
        """The ``casting=`` a Python runner passes (``eager/chain.py``), or None."""
        return "unsafe" if self.unsafe or self.fcode < 0 else None


# -- dependencies ----------------------------------------------------------------------------
cdef list link(Instruction instr):
    """RAW on each read's last writer; WAW and WAR on each write; the unfinished ones."""
    cdef list deps = None
    cdef Blob b
    cdef Instruction w, r
    cdef list readers
    for b in instr.reads:
        w = b.last_writer
        if w is not None and not w.done:
            if deps is None:
                deps = []
            deps.append(w)
        readers = b.readers
        if len(readers) >= b.prune_at:
            readers = [r for r in readers if not r.done]
            b.readers = readers
            b.prune_at = max(PRUNE_AT, 2 * len(readers))
        readers.append(instr)
        b.nreads += 1
    for b in instr.writes:
        w = b.last_writer
        if w is not None and not w.done:
            if deps is None:
                deps = []
            deps.append(w)
        for r in b.readers:
            if not r.done and r is not instr:
                if deps is None:
                    deps = []
                deps.append(r)
        if b.readers:
            b.readers = []
        b.last_writer = instr
    return deps


def py_link(Instruction instr):
    return link(instr) or []


# -- a synchronous stream and its worker --------------------------------------------------------
cdef class RunLock:
    """The stream's run lock (held while its instructions run), as a Python lock."""

    cdef pthread_mutex_t mu

    def __cinit__(self):
        pthread_mutex_init(&self.mu, NULL)

    def __dealloc__(self):
        pthread_mutex_destroy(&self.mu)

    def acquire(self, bint blocking=True):
        if not blocking:
            return pthread_mutex_trylock(&self.mu) == 0
        with nogil:
            pthread_mutex_lock(&self.mu)
        return True

    def release(self):
        pthread_mutex_unlock(&self.mu)


cdef class StreamRt:
    """One synchronous stream of the VM and its worker thread (see ``eager/worker.py``)."""

    cdef af_wake wk
    cdef long count  # FIFO length (under wk.mu)
    cdef long stopping
    cdef Instruction head, tail
    cdef public object vm, stype, stream, xp, kctx, last, current, unit, thread, label, empty
    cdef public dict names, ufuncs
    cdef public int index, track
    cdef public long long allocated, freed, allocs, frees, executed, reused
    cdef public RunLock run_lock
    cdef pthread_mutex_t *run_mu
    cdef public bint sync, native

    def __cinit__(self):
        af_wake_init(&self.wk)

    def __dealloc__(self):
        af_wake_destroy(&self.wk)

    def __init__(self, vm, stype, index, track, stream, kctx):
        self.vm, self.stype, self.index, self.track = vm, stype, index, track
        self.label = f"{stype.name}:{index}"
        self.stream, self.xp, self.kctx = stream, stream.xp, kctx
        self.empty = stream.xp.empty
        self.names, self.ufuncs = {}, {}
        self.run_lock = RunLock()
        self.run_mu = &self.run_lock.mu
        self.sync = self.native = True
        self.thread = threading.Thread(target=self._loop, name=f"actorflow-vm-{self.label}",
                                       daemon=True)
        self.thread.start()

    cdef void push(self, Instruction instr):
        pthread_mutex_lock(af_wake_mu(&self.wk))
        if self.tail is None:
            self.head = self.tail = instr
        else:
            self.tail.next_ = instr
            self.tail = instr
        self.count += 1
        af_wake_kick(&self.wk)
        pthread_mutex_unlock(af_wake_mu(&self.wk))

    cdef Instruction pop(self):
        cdef Instruction i
        pthread_mutex_lock(af_wake_mu(&self.wk))
        i = self.head
        if i is not None:
            self.head = i.next_
            i.next_ = None
            if self.head is None:
                self.tail = None
            self.count -= 1
            i.started = True
        pthread_mutex_unlock(af_wake_mu(&self.wk))
        return i

    cdef bint fuse_into(self, Instruction t, Step step):
        """Append ``step`` to ``t`` if no worker took ``t`` yet (the FIFO's mutex)."""
        cdef bint ok
        pthread_mutex_lock(af_wake_mu(&self.wk))
        ok = not t.started
        if ok:
            t.operand.append(step)
        pthread_mutex_unlock(af_wake_mu(&self.wk))
        return ok

    def put(self, Instruction instr):
        self.push(instr)

    def stop(self):
        pthread_mutex_lock(af_wake_mu(&self.wk))
        self.stopping = 1
        af_wake_kick(&self.wk)
        pthread_mutex_unlock(af_wake_mu(&self.wk))

    def queued(self):
        """The instructions waiting in the FIFO (a copy, for inspection)."""
        out = []
        cdef Instruction i = self.head
        while i is not None:
            out.append(i)
            i = i.next_
        return out

    def _loop(self):
        cdef long ready
        while True:
            with nogil:
                pthread_mutex_lock(af_wake_mu(&self.wk))
                ready = self.count | self.stopping
                if not ready:
                    af_wake_wait(&self.wk, &self.count, 0.5)
                pthread_mutex_unlock(af_wake_mu(&self.wk))
            # the GIL first, then the run lock: a thread that waits for this work (it holds
            # the GIL) runs it itself meanwhile (help_until), with no hand-off
            if pthread_mutex_trylock(self.run_mu) != 0:
                with nogil:
                    pthread_mutex_lock(self.run_mu)
            try:
                self._drain()
                if self.stopping and self.count == 0:
                    return
            finally:
                pthread_mutex_unlock(self.run_mu)

    cdef void _drain(self):
        cdef Instruction i
        while True:
            i = self.pop()
            if i is None:
                return
            self._run_here(i)

    def help_until(self, Instruction instr):
        """A thread waiting for ``instr`` runs the queue itself while the worker is idle."""
        cdef Instruction i
        if not instr.dispatched or pthread_mutex_trylock(self.run_mu) != 0:
            return
        try:
            while not instr.done:
                i = self.pop()
                if i is None:
                    return
                self._run_here(i)
        finally:
            pthread_mutex_unlock(self.run_mu)

    cdef void _run_here(self, Instruction instr) except *:
        cdef object vm = self.vm
        if instr.deps:
            for d in instr.deps:
                if not d.done:
                    vm.wait_internal(d, self)
        self.current = instr
        unit = self.unit
        if unit is not None:
            self.names[instr.id] = vm.trace_name(instr)
            unit.act_begin(_act_record(self.track, instr))
        try:
            try:
                if instr.fusable:
                    run_steps(instr, self)
                else:
                    if not instr.itype.own_inputs:
                        for b in instr.reads:
                            if b.error is not None:
                                for w in instr.writes:
                                    w.error = b.error
                                raise _Poisoned()
                    instr.itype.compute(instr, self)
            except _Poisoned:
                pass
            except Exception as e:
                vm.fail(instr, e, traceback.format_exc())
        except BaseException as e:  # e.g. Ctrl-C in a helping thread: fail, never hang
            vm.fail(instr, e, "interrupted while it ran")
            if threading.current_thread() is not self.thread:
                raise
        finally:
            self._finish(instr)

    cdef void _finish(self, Instruction instr):
        self.executed += 1
        unit = self.unit
        if unit is not None:
            unit.act_end(_act_record(self.track, instr))
        instr.operand = None
        instr.reads = instr.writes = _EMPTY
        instr.deps = _EMPTY
        instr.done = True
        if instr.waited:  # a thread waits for this one (set under the VM's cv)
            self.vm.on_done(instr)

    def join(self, timeout):
        self.thread.join(timeout)
        return not self.thread.is_alive()


class _Poisoned(Exception):
    pass


# -- running steps ----------------------------------------------------------------------------
_KEYWORD_OUT = frozenset({"maximum", "minimum"})  # numpy deprecates a positional out there


cdef inline bint _reusable(Blob b, Instruction instr, Py_ssize_t i):
    """Nothing can read ``b`` after step ``i``: its tensor died, the chain made it, every
    read of it ever issued is one of the chain's, and step ``i`` is the last of them
    (``eager/chain.py``; here counted at fusion time instead of per run)."""
    return b.dead and b.array is not None and b.producer is instr \
        and b.nreads == b.chain_reads and b.last_step == i


cdef void run_steps(Instruction instr, StreamRt host) except *:
    cdef list steps = instr.operand
    cdef Py_ssize_t n = len(steps), i
    for i in range(n):
        _run(instr, <Step>steps[i], host, n > 1, i)


cdef void _run(Instruction instr, Step st, StreamRt host, bint chain,
               Py_ssize_t i) except *:
    cdef Blob b, out
    cdef dict in_arrays, out_arrays
    for b in st.reads:
        if b.error is not None:
            for out in st.writes:
                out.error = b.error
            return
    try:
        if st.fcode >= 0:
            out = st.writes[0]
            b = st.reads[0]
            a0 = b.array
            fc = st.fcode
            a1 = (<Blob>st.reads[1]).array if fc == 2 else None
            arr = None
            if chain:
                for b in st.reads:
                    if b.meta is out.meta and _reusable(b, instr, i):
                        arr = b.array
                        b.array = None
                        host.freed += b.nbytes
                        host.frees += 1
                        host.reused += 1
                        break
            if arr is None:
                arr = host.empty(out.shape, out.dtype)
            out.array = arr
            host.allocated += out.nbytes
            host.allocs += 1
            f = st.fn
            if f is None:
                f = host.ufuncs.get(st.ufunc)
                if f is None:
                    f = host.ufuncs[st.ufunc] = getattr(host.xp, st.ufunc)
            if fc == 2:
                if st.ufunc in _KEYWORD_OUT:
                    if st.unsafe:
                        f(a0, a1, out=arr, casting="unsafe")
                    else:
                        f(a0, a1, out=arr)
                elif st.unsafe:
                    PyObject_Call(f, (a0, a1, arr), _UNSAFE)
                else:
                    f(a0, a1, arr)
            elif fc == 3:
                if st.unsafe:
                    PyObject_Call(f, (a0, st.scalar, arr), _UNSAFE)
                else:
                    f(a0, st.scalar, arr)
            elif fc == 4:
                if st.unsafe:
                    PyObject_Call(f, (st.scalar, a0, arr), _UNSAFE)
                else:
                    f(st.scalar, a0, arr)
            elif fc == 1:
                f(a0, 0, out=arr)
            else:
                f(a0, arr)
            return
        empty = host.xp.empty
        out_arrays = {}
        for k, ob in st.outs.items():
            out = ob
            out.array = a = empty(out.shape, out.dtype)
            out_arrays[k] = a
            host.allocated += out.nbytes
            host.allocs += 1
        in_arrays = {}
        for k, ib in st.ins.items():
            in_arrays[k] = (<Blob>ib).array
        ctx = host.kctx
        ctx.op_name = st.name
        st.kernel(ctx, in_arrays, out_arrays, st.attrs)
    except Exception as e:
        host.vm.fail(instr, e, traceback.format_exc(), st)


# -- the issue side of a VM -------------------------------------------------------------------
cdef class VMState:
    """A native VM's issue side (the Python ``VirtualMachine`` is its shell)."""

    cdef public object vm
    cdef public long long issued, ops, release_bytes
    cdef public bint fuse, closed  # (closed: mirrored by the VM's ``closed`` setter)
    cdef public object releases  # the VM's deque of blobs whose tensors died

    def __init__(self, vm, releases, bint fuse):
        self.vm, self.releases, self.fuse = vm, releases, fuse

    cpdef submit_one(self, Instruction i):
        """Link ``i`` and put it on its stream (atomic under the GIL: no Python runs)."""
        cdef list deps = link(i)
        cdef list other
        s = i.stream
        if deps is not None:
            other = None
            for d in deps:
                if (<Instruction>d).stream is not s:
                    if other is None:
                        other = []
                    other.append(d)
            if other is not None:
                i.deps = tuple(other)
        i.dispatched = True
        if type(s) is StreamRt:
            (<StreamRt>s).push(i)
            (<StreamRt>s).last = i
        else:  # an asynchronous device stream keeps the Python worker
            s.put(i)
            s.last = i
        self.issued += 1
        self.ops += 1

    def submit(self, instrs):
        for i in instrs:
            self.submit_one(i)

    cdef Instruction try_fuse(self, StreamRt s, Step step):
        cdef Instruction t = s.last
        cdef Instruction w
        cdef Blob b
        cdef bint chained = False
        if step.ufunc is None or t is None or not t.fusable or t.started \
                or len(t.operand) >= MAX_CHAIN:
            return None
        for b in step.reads:
            w = b.last_writer
            if w is t:
                chained = True
            elif w is not None and not w.done and w.stream is not s:
                return None
        if not chained:
            return None
        # The records first, the step last: a decref below may run Python code (a
        # finalizer) and let the worker take the GIL, pop ``t`` and run it; the step
        # joins only if ``t`` is still queued then (``fuse_into``, under the FIFO's
        # mutex), else all of this is undone and the step gets an instruction of its own.
        # (Meanwhile the counts only make a reuse look impossible, never possible.)
        n = len(t.operand)  # this step's index in the chain
        old_reads, old_writes, old_name = t.reads, t.writes, t.name
        saved = []
        for b in step.reads:
            if b.last_writer is not t:
                t.reads = t.reads + (b,)
            elif b.producer is t:
                saved.append((b, b.chain_reads, b.last_step))
                b.chain_reads += 1
                b.last_step = n
            b.readers.append(t)
            b.nreads += 1
        for b in step.writes:
            b.last_writer = b.producer = t
        t.writes = t.writes + step.writes
        if n == 1:
            t.name = f"{(<Step>t.operand[0]).name} (+ fused ops)"
        if s.fuse_into(t, step):
            return t
        for b in step.reads:
            b.readers.remove(t)
            b.nreads -= 1
        for item in reversed(saved):
            b = item[0]
            b.chain_reads, b.last_step = item[1], item[2]
        for b in step.writes:
            b.last_writer = b.producer = None
        if t.done:  # (finished meanwhile: it already dropped what it held)
            t.reads = t.writes = _EMPTY
        else:
            t.reads, t.writes, t.name = old_reads, old_writes, old_name
        return None

    cpdef submit_step(self, itype, stream, Step step):
        """One op step: fused into the stream's last instruction, or an instruction."""
        cdef Instruction instr = None
        cdef Blob b
        if self.closed:
            self.vm.submit([])  # raises, naming why
        self.ops += 1
        if self.fuse and type(stream) is StreamRt:
            instr = self.try_fuse(<StreamRt>stream, step)
        if instr is None:
            instr = Instruction.__new__(Instruction)
            global _next_instr
            _next_instr += 1
            instr.id = _next_instr
            instr.itype, instr.stream, instr.name = itype, stream, step.name
            instr.operand = [step]
            instr.reads, instr.writes = step.reads, step.writes
            instr.where = step.where
            instr.deps = _EMPTY
            instr.fusable = True
            for b in step.writes:
                b.producer = instr
            self.submit_one(instr)
            self.ops -= 1
        if len(self.releases) >= RELEASE_BATCH or self.release_bytes >= RELEASE_BYTES:
            self.vm._flush_releases()
        return instr

    def release(self, Blob blob):
        """The last tensor of ``blob`` died: queue it (batched into release instructions)."""
        self._release(blob)

    cdef void _release(self, Blob blob) except *:
        if self.closed:
            return
        blob.dead = True
        self.releases.append(blob)
        self.release_bytes += blob.nbytes
        if len(self.releases) >= RELEASE_BATCH or self.release_bytes >= RELEASE_BYTES:
            lock = self.vm.lock
            if lock.acquire(False):
                try:
                    self.vm._flush_releases()
                finally:
                    lock.release()


cdef class IssuePlan:
    """What an op's metas and attrs decide, and its per-call issue (see ``eager/issue.py``)."""

    cdef public object vm, expr, attrs, kernel, ufunc, itype, stream, wrap
    cdef public tuple in_names, outs
    cdef tuple protos  # per output: (name, (meta, shape, dtype, device, nbytes))
    cdef object op_type
    cdef public VMState state
    cdef int fcode
    cdef object fn  # the element-wise function, from the stream's array module

    def __init__(self, vm, expr, in_names, attrs, outs, itype, stream, wrap, ufunc=None):
        self.vm, self.expr, self.in_names, self.attrs, self.outs = vm, expr, in_names, attrs, outs
        self.kernel, self.ufunc = expr.opdef.kernel, ufunc
        self.itype, self.stream, self.wrap = itype, stream, wrap
        self.state = vm.state
        self.op_type = expr.op_type
        self.protos = tuple((name, (m, m.shape, m.dtype, m.device, m.nbytes)) for name, m in outs)
        self.fcode = _FORMS[self.ufunc[1]] if self.ufunc is not None else -1
        self.fn = getattr(stream.xp, self.ufunc[0]) if self.ufunc is not None \
            and type(stream) is StreamRt else None

    def run(self, tensors, attrs=None, where=None):
        return self._run(tensors, self.attrs if attrs is None else attrs,
                         where if where is not None else where_here(), _NOSCALAR)

    cdef object _run(self, object tensors, object attrs, object where, object scalar):
        cdef dict ins = None, outs = None
        cdef list reads = [], writes = []
        cdef Blob b
        cdef Py_ssize_t k = 0
        cdef bint generic = self.fcode < 0
        if generic:
            ins, outs = {}, {}
        for t in tensors:
            b = (<TensorBase>t)._blob if isinstance(t, TensorBase) else t._blob
            if generic:
                ins[self.in_names[k]] = b
            reads.append(b)
            k += 1
        for name, proto in self.protos:
            b = _new_blob(<tuple>proto)
            if generic:
                outs[name] = b
            writes.append(b)
        cdef Step st = Step.__new__(Step)
        st.name = self.op_type
        st.where = where
        st.kernel = self.kernel
        st.fcode = self.fcode
        if not generic:
            st.ufunc, st.form, st.unsafe = self.ufunc
            st.fn = self.fn
            if self.fcode >= 3:
                st.scalar = attrs["scalar"] if scalar is _NOSCALAR else scalar
        st.ins, st.outs, st.attrs = ins, outs, attrs
        st.reads, st.writes = tuple(reads), tuple(writes)
        self.state.submit_step(self.itype, self.stream, st)
        vm = self.vm
        cls = _tensor_type
        if len(writes) == 1:
            return _wrap(cls, writes[0], vm, self.state) if cls is not None \
                else self.wrap(writes[0], vm)
        return tuple(_wrap(cls, b, vm, self.state) if cls is not None else self.wrap(b, vm)
                     for b in writes)


cdef inline object _wrap(object cls, object blob, object vm, VMState state):
    cdef TensorBase tb
    t = (<PyTypeObject *>cls).tp_new(cls, <PyObject *>_EMPTY, NULL)
    if isinstance(t, TensorBase):
        tb = t
        tb._blob = blob
        tb._vm = vm
        tb._state = state
    else:
        t._blob = blob
        t._vm = vm
    return t


# -- the functional fast path -------------------------------------------------------------------
@cython.freelist(64)
cdef class FastPlan:
    cdef public object iplan, scalar_attr, scalar_pos, scalar_conv
    cdef public tuple positions

    def __init__(self, iplan, positions, scalar_attr, scalar_pos, scalar_conv):
        self.iplan, self.positions = iplan, tuple(positions)
        self.scalar_attr, self.scalar_pos, self.scalar_conv = scalar_attr, scalar_pos, scalar_conv


cdef tuple call_key(tuple args, dict kwargs):
    cdef list key = []
    cdef object tt = _tensor_type
    cdef object b
    for a in args:
        t = type(a)
        key.append(t)
        if t is tt:
            b = (<TensorBase>a)._blob if isinstance(a, TensorBase) else a._blob
            key.append((<Blob>b).meta if type(b) is Blob else b.meta)
        elif t is not float:
            key.append(a)
    if kwargs:
        for name, a in kwargs.items():
            t = type(a)
            key.append(name)
            key.append(t)
            if t is tt:
                key.append(a._blob.meta)
            elif t is not float:
                key.append(a)
    return tuple(key)


def py_call_key(tensor_type, args, kwargs):
    set_tensor_type(tensor_type)
    k = call_key(tuple(args), dict(kwargs))
    hash(k)
    return k


cdef class FastCall:
    """Base of functional ops: the cached plan of these argument types and metas, else
    ``self._slow(key, args, kwargs)`` (the whole way, which leaves a plan)."""

    cdef public dict _fast

    def __call__(self, *args, **kwargs):
        cdef tuple key = call_key(args, kwargs)
        cdef FastPlan plan
        cdef IssuePlan ip
        try:
            found = self._fast.get(key) if self._fast is not None else None
        except TypeError:  # an unhashable argument: no fast path for this call
            return self._slow(None, args, kwargs)
        if found is None:
            return self._slow(key, args, kwargs)
        plan = found
        iplan = plan.iplan
        if (iplan.state.closed if type(iplan) is IssuePlan else iplan.vm.closed):
            return self._slow(key, args, kwargs)
        ts = [args[p] if type(p) is int else kwargs[p] for p in plan.positions]
        attrs = iplan.attrs
        scalar = _NOSCALAR
        if plan.scalar_attr is not None:
            p = plan.scalar_pos
            v = args[p] if type(p) is int else kwargs[p]
            scalar = v if plan.scalar_conv is None else plan.scalar_conv(v)
        if type(iplan) is IssuePlan:
            ip = iplan
            if scalar is not _NOSCALAR and (ip.fcode < 3 or _hook is not None):
                attrs = dict(attrs)
                attrs[plan.scalar_attr] = scalar
            out = ip._run(ts, attrs, where_here(), scalar)
        else:
            if scalar is not _NOSCALAR:
                attrs = dict(attrs)
                attrs[plan.scalar_attr] = scalar
            out = iplan.run(ts, attrs, where_here())
        if _hook is not None:
            _hook(iplan.expr, dict(zip(iplan.in_names, ts)), attrs, out)
        return out
