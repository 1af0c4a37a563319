# cython: language_level=3
"""The compiled unit core: ``protocol.unit_core.UnitCore`` over the C state machines.

Built from the plan as tables (``build.pxi``: every kind's row from its task's descs and
attrs), driven with message records, answering with the same actions, in the same order, as
``PyUnitCore`` (the differential test holds both to it).  ``actorflow._core`` imports
nothing of actorflow but ``errors``: the caller hands in the ``Msg``/``Act``/``Exit``
classes to build actions with.

A core belongs to the process that made it: used from another one (after a fork) it
refuses, instead of acting on a copy of state that another process owns.

The core can also run its unit's whole loop (``loop.pxi``: ``run``), with the GIL released
except to run a Python kernel; then other threads put messages in its ``inbox`` and read
its state under its mutex.
"""

import os

from libc.errno cimport EINTR, EPROTO, ETIMEDOUT
from libc.stdint cimport uint32_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memset
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer

from actorflow.errors import ProtocolError

include "core_defs.pxi"
include "build.pxi"


cdef class NativeUnitCore:
    """One unit's actors in C: ``push`` a drain of messages, ``completed`` acts, read
    ``blocked_on``; the same contract as ``protocol.unit_core.PyUnitCore``."""

    cdef af_unit u
    cdef pthread_mutex_t mu     # guards u and tr between the loop and other threads
    cdef pthread_mutex_t wmu    # keeps one unit's trace chunks in order in its file
    cdef af_inbox inbox         # records from other threads (the native loop's source)
    cdef af_trace tr            # the native loop's trace (flight ring or packed events)
    cdef af_runplan *plans      # per actor: how the native loop runs its acts
    cdef list py_runs           # per actor: (executor, host, act object) for Python kernels
    cdef dict slot_lists        # (actor, slots key) -> (reads, writes) lists, made once
    cdef readonly str name
    cdef readonly int pid
    cdef object Msg, Act, Exit
    cdef object ring, timed
    cdef list labels_py
    cdef list kinds_py

    def __cinit__(self):
        memset(&self.u, 0, sizeof(af_unit))
        memset(&self.inbox, 0, sizeof(af_inbox))
        memset(&self.tr, 0, sizeof(af_trace))
        self.plans = NULL
        self.tr.fd = -1
        if (pthread_mutex_init(&self.mu, NULL) or pthread_mutex_init(&self.wmu, NULL)
                or af_inbox_init(&self.inbox)):
            raise MemoryError()

    def __init__(self, tasks, producer_of, str name="unit", recorder=None, classes=None):
        if classes is None:
            raise ProtocolError("NativeUnitCore needs the (Msg, Act, Exit) classes")
        self.Msg, self.Act, self.Exit = classes
        self.name = name
        self.pid = os.getpid()
        self.ring = recorder.ring if recorder is not None else None
        self.timed = recorder if recorder is not None and recorder.timed else None
        self.u.trace = 1 if (self.ring is not None or self.timed is not None) else 0
        tasks = list(tasks)
        self.labels_py = [t.label for t in tasks]
        self.kinds_py = []
        self.py_runs = [None] * len(tasks)
        self.slot_lists = {}
        build_unit(&self.u, tasks, producer_of, self.kinds_py)
        self.plans = <af_runplan *>zalloc(self.u.n, sizeof(af_runplan))

    def __dealloc__(self):
        if self.plans != NULL:
            for i in range(self.u.n):
                af_runplan_free(&self.plans[i])
            free(self.plans)
        af_unit_free(&self.u)
        af_trace_free(&self.tr)
        af_inbox_free(&self.inbox)
        pthread_mutex_destroy(&self.mu)
        pthread_mutex_destroy(&self.wmu)

    cdef void _lock(self):
        """Take the core's mutex; wait for it with the GIL released only when the loop
        holds it (a plain lock would hand the GIL around on every call)."""
        if pthread_mutex_trylock(&self.mu) == 0:
            return
        with nogil:
            pthread_mutex_lock(&self.mu)

    cdef int _mine(self) except -1:
        if os.getpid() != self.pid:
            raise ProtocolError(
                f"{self.name}: this core belongs to process {self.pid} and was used from "
                f"process {os.getpid()} (a core object does not cross a fork)")
        return 0

    @property
    def live(self):
        return self.u.live

    @property
    def busy(self):
        return self.u.local.len > 0 or self.u.pushed.len > 0

    def hosts(self, long long task_id):
        return af_unit_find(&self.u, task_id) >= 0

    def push(self, msgs):
        """Queue ``msgs``; handle queued messages until one starts an act."""
        self._mine()
        cdef list items = list(msgs)
        cdef int32_t n = len(items)
        cdef af_msg *recs = <af_msg *>malloc(<size_t>(n if n else 1) * sizeof(af_msg))
        if recs == NULL:
            raise MemoryError()
        cdef int rc
        try:
            for i in range(n):
                to_record(items[i], &recs[i])
            self._lock()
            self.u.out.n = 0
            self.u.seen.n = 0
            rc = af_unit_push(&self.u, recs, n)
        finally:
            free(recs)
        try:
            return self._actions(rc)
        finally:
            pthread_mutex_unlock(&self.mu)

    def completed(self, acts):
        """The stream finished ``acts``: their READYs/ACKs, then queued messages."""
        self._mine()
        cdef int started = 0
        cdef int rc = 0
        done = [(a.task_id, a.act_id) for a in acts]
        self._lock()
        try:
            self.u.out.n = 0
            self.u.seen.n = 0
            for task_id, act_id in done:
                rc = af_unit_done(&self.u, task_id, act_id, &started)
                if rc:
                    break
            if rc == 0:
                rc = af_unit_run(&self.u, started)
            return self._actions(rc)
        finally:
            pthread_mutex_unlock(&self.mu)

    cdef list _actions(self, int rc):
        if self.u.trace:
            self._record()
        if rc:
            self._raise()
        cdef list out = []
        cdef af_action *x
        for i in range(self.u.out.n):
            x = &self.u.out.a[i]
            if x.kind == AF_A_MSG:
                out.append(self._msg(&x.msg))
            elif x.kind == AF_A_ACT:
                out.append(self._act(&self.u.actors[x.actor], &self.u.actors[x.actor].pool[x.act]))
            else:
                out.append(self.Exit(self.u.actors[x.actor].task_id))
        return out

    cdef int _raise(self) except -1:
        text = (<bytes>self.u.err.text).decode("utf-8", "replace")
        if self.u.err_unit == 1:
            text = f"{self.name} {text}"
        elif self.u.err_unit == 2:
            text = f"{self.name}: {text}"
        self.u.err_unit = 0
        raise ProtocolError(text)

    cdef int _record(self) except -1:
        """Hand what the C core saw to the recorder, in order (trace hooks): the core's own
        trace when it keeps one (``trace_flight``), else the Python recorder's hooks."""
        cdef af_action *x
        if self.tr.mode != AF_TR_NONE:
            return record_seen(self)
        timed, ring = self.timed, self.ring
        for i in range(self.u.seen.n):
            x = &self.u.seen.a[i]
            if timed is not None:
                if x.act == 0:
                    timed.recv(self._msg(&x.msg))
                else:
                    timed.send(self._msg(&x.msg))
            elif x.act != 2:  # the flight ring: received, and sent to other units
                ring(self._msg(&x.msg))
        self.u.seen.n = 0
        return 0

    cdef object _msg(self, const af_msg *m):
        return self.Msg(m.type, m.src, m.dst, m.desc, m.slot, m.piece, m.seq, m.msg_id, m.cmd,
                        m.aux)

    cdef object _act(self, af_actor *a, af_act *x):
        reads = [(x.rw[i].desc, x.rw[i].slot) for i in range(x.nreads)]
        writes = [(x.rw[x.nreads + i].desc, x.rw[x.nreads + i].slot) for i in range(x.nwrites)]
        return self.Act(a.task_id, x.act_id, x.piece, reads, writes, act_info(x))

    # -- the native loop (loop.pxi) ---------------------------------------------------------
    def task_ids(self):
        return [self.u.actors[i].task_id for i in range(self.u.n)]

    def put(self, msg):
        """Queue ``msg`` for this unit's native loop (from any thread; the inbox's lock is
        only ever held for a copy, so the GIL stays with the caller)."""
        cdef af_msg r
        to_record(msg, &r)
        if af_inbox_put(&self.inbox, &r, 1):
            raise ProtocolError(f"{self.name}: its inbox cannot take more messages")

    @property
    def acts_started(self):
        """Acts this unit's actors started (read without the core's lock: a progress
        counter, not a consistent state)."""
        n = 0
        for i in range(self.u.n):
            n += self.u.actors[i].acts
        return n

    def waiting(self):
        """Take the messages waiting in the inbox (a loop that is not running)."""
        cdef af_ring out
        af_ring_init(&out, sizeof(af_msg))
        try:
            n = af_inbox_take(&self.inbox, &out, 0)
            return [self._msg(<af_msg *>af_ring_at(&out, i)) for i in range(n)]
        finally:
            af_ring_free(&out)

    def set_spin(self, long long ns):
        """Spin up to ``ns`` for a record before the loop sleeps (0: never; worth it only
        while the process has a core per busy thread)."""
        self.inbox.spin_ns = ns

    def stop_loop(self):
        """End the native loop at its next wake-up (from any thread)."""
        with nogil:
            af_inbox_signal(&self.inbox, 1)

    def poke(self):
        """Wake the native loop once, without a message (from any thread)."""
        with nogil:
            af_inbox_signal(&self.inbox, 0)

    def plan_noop(self, long long task_id):
        """Acts of this task move no data: the loop runs them without the GIL."""
        self.plans[self._index(task_id)].mode = AF_RUN_NOOP

    def plan_python(self, long long task_id, executor, host, act):
        """Acts of this task run ``executor(host, act)`` with the GIL (``act`` is reused:
        its fields are set before each call)."""
        i = self._index(task_id)
        self.plans[i].mode = AF_RUN_PY
        self.py_runs[i] = (executor, host, act)

    def plan_copy(self, long long task_id, copies):
        """Acts of this task copy host regsts: ``copies`` = [(src desc, dst desc, nbytes,
        [address per src slot], [address per dst slot])], run as memcpy without the GIL."""
        cdef af_runplan *p = &self.plans[self._index(task_id)]
        cdef af_copy *c
        af_runplan_free(p)
        p.copies = <af_copy *>zalloc(len(copies), sizeof(af_copy))
        p.ncopies = len(copies)
        for j, (src_desc, dst_desc, nbytes, srcs, dsts) in enumerate(copies):
            c = &p.copies[j]
            c.src_desc, c.dst_desc, c.nbytes = src_desc, dst_desc, nbytes
            c.src = <char **>zalloc(len(srcs), sizeof(char *))
            c.dst = <char **>zalloc(len(dsts), sizeof(char *))
            c.nsrc, c.ndst = len(srcs), len(dsts)
            for k, addr in enumerate(srcs):
                c.src[k] = <char *><size_t>addr
            for k, addr in enumerate(dsts):
                c.dst[k] = <char *><size_t>addr
        p.mode = AF_RUN_COPY

    def plan_mode(self, long long task_id):
        """``python``, ``noop`` or ``copy``: how the native loop runs this task's acts."""
        return ("python", "noop", "copy")[self.plans[self._index(task_id)].mode]

    cdef int32_t _index(self, long long task_id) except -1:
        i = af_unit_find(&self.u, task_id)
        if i < 0:
            raise ProtocolError(f"{self.name} does not host task {task_id}")
        return i

    def trace_flight(self, int size):
        """The native loop keeps the unit's last ``size`` messages (the flight recorder)."""
        _trace_init(self, AF_TR_FLIGHT, size, 0)

    def trace_timed(self, long long flush_events, bint tsc=False):
        """The native loop packs every event as int64 words (trace/packed.py); ``tsc``:
        stamped with the invariant TSC, turned into CLOCK_MONOTONIC ns per chunk."""
        _trace_init(self, AF_TR_TIMED, 0, flush_events * 10, tsc)

    def trace_to_file(self, int fd, long long machine, long long thrd, names):
        """Sealed chunks go to the trace file open at ``fd`` (O_APPEND; the core writes on a
        duplicate of it) as the maps ``TraceWriter.write_packed`` writes for unit
        ``(machine, thrd)``; ``names``: command code -> name."""
        _trace_to_file(self, fd, machine, thrd, names)

    def trace_write(self, bint all=True):
        """Write the sealed chunks (``all``: and what the buffer holds) to the trace file;
        0, or the errno of the write that failed (later chunks were dropped)."""
        cdef int rc
        cdef int a = all
        if self.tr.mode != AF_TR_TIMED or self.tr.fd < 0:
            return 0
        with nogil:
            rc = af_trace_write(&self.tr, &self.mu, &self.wmu, a)
        return rc

    def trace_detach(self):
        """Write no more to the trace file (it is about to end); closes the duplicate."""
        with nogil:
            pthread_mutex_lock(&self.wmu)
        if self.tr.fd >= 0:
            os.close(self.tr.fd)
            self.tr.fd = -1
        pthread_mutex_unlock(&self.wmu)

    @property
    def trace_tsc(self):
        """Events are stamped with the TSC (turned into ns per chunk)."""
        return bool(self.tr.tsc)

    @property
    def trace_error(self):
        """The errno of a failed write to the trace file (0: none)."""
        return self.tr.werr

    def encode_chunk(self, bytes data, cmds):
        """The map one chunk of ``data`` (int64 words) with ``cmds`` ([word, code, aux]) is
        written as (tests compare it with ``msgpack.packb``)."""
        return _encode_chunk(self, data, cmds)

    def flight(self):
        """(count ever written, [(handed to an actor here?, header), ...] oldest first)."""
        self._lock()
        try:
            count, size = self.tr.fl_count, self.tr.fl_size
            first = max(0, count - size)
            return count, [(bool(self.tr.fl_recv[k % size]), self._msg(&self.tr.fl[k % size]))
                           for k in range(first, count)]
        finally:
            pthread_mutex_unlock(&self.mu)

    def take_trace(self):
        """The packed events so far, as chunks [(bytes, [[word, command, argument], ...])]
        (the sealed ones, then what the buffer holds); the buffer starts again empty."""
        return _take_trace(self)

    def peek_trace(self):
        """The packed events not yet taken, without taking them (for dumps)."""
        return _peek(self, &self.tr.w, &self.tr.nw, &self.tr.cmds, &self.tr.ncmds, True)

    def last_trace(self):
        """The chunk written to the trace file last (for dumps: the recent events)."""
        return _peek(self, &self.tr.prev.w, &self.tr.prev.nw, &self.tr.prev.cmds,
                     &self.tr.prev.ncmds, False)

    @property
    def flight_count(self):
        """Messages the flight ring ever took: changes whenever the unit made a step."""
        return self.tr.fl_count

    @property
    def trace_flushed(self):
        """Bytes of packed events taken or written so far."""
        return self.tr.taken_words * 8

    def trace_pending(self):
        """Bytes of packed events not yet taken."""
        n = self.tr.nw
        for i in range(self.tr.nsealed):
            n += self.tr.sealed[i].nw
        return n * 8

    def run(self, shell, NativeRouter router):
        """Run this unit until every actor exited, the loop is stopped, or ``shell.idle()``
        says so.  ``shell``: ``send(msg)`` (a destination without a native inbox),
        ``exited(task_id)``, ``idle() -> bool``, ``wait_ns() -> int``, ``flush_trace()``,
        ``finish()``.  The GIL is released but to call those and Python kernels."""
        self._mine()
        run_loop(self, shell, router)

    cdef int _run_py(self, int32_t i, af_act *x) except -1:
        executor, host, act = self.py_runs[i]
        key = (i, *[x.rw[k].slot for k in range(x.nreads + x.nwrites)])
        lists = self.slot_lists.get(key)
        if lists is None:
            lists = ([(x.rw[k].desc, x.rw[k].slot) for k in range(x.nreads)],
                     [(x.rw[x.nreads + k].desc, x.rw[x.nreads + k].slot)
                      for k in range(x.nwrites)])
            self.slot_lists[key] = lists
        act.act_id = x.act_id
        act.piece_id = x.piece
        act.reads, act.writes = lists
        act.info = act_info(x)
        executor(host, act)
        return 0

    def blocked_on(self):
        """Every actor's ``blocked_on()`` dict, in task order (as ``protocol.state``); safe
        from any thread while the native loop runs (under the core's mutex)."""
        self._mine()
        order = sorted(range(self.u.n), key=lambda j: self.u.actors[j].task_id)
        self._lock()
        try:
            return [blocked(&self.u.actors[i], self.labels_py[i]) for i in order]
        finally:
            pthread_mutex_unlock(&self.mu)


cdef int to_record(object m, af_msg *r) except -1:
    try:
        r.type = m.type
        r.cmd = m.cmd
        r.flags = 0
        r.src = m.src
        r.dst = m.dst
        r.desc = m.regst_desc_id
        r.slot = m.slot
        r.piece = m.piece_id
        r.seq = m.seq
        r.msg_id = m.msg_id
        r.aux = m.aux
    except (OverflowError, TypeError) as e:
        raise ProtocolError(f"{m!r} does not fit a message record: {e}") from e
    return 0


cdef object act_info(af_act *x):
    k = x.info_kind
    if k == AF_INFO_ACC:
        return (bool(x.info[0]), bool(x.info[1]), x.info[2])
    if k == AF_INFO_REPEAT:
        return (bool(x.info[0]), x.info[1])
    if k == AF_INFO_ADMIT:
        return ("admit", x.info[1])
    if k == AF_INFO_RETURN:
        return ("return", x.info[1])
    if k == AF_INFO_CS:
        return x.info[0]
    return None


cdef list holders(af_produced *p):
    out = []
    cdef uint64_t bit
    for i in range(p.ncons):
        bit = (<uint64_t>1) << (i % 64)
        for s in range(p.register_num):
            if p.held[s * p.words + i // 64] & bit:
                out.append(p.consumers[i])
                break
    return out


_STATUS = ("running", "zombie", "exited")


cdef dict blocked(af_actor *a, str label):
    cdef af_consumed *c
    cdef af_produced *p
    inflight = sorted((a.pool[i].act_id, a.pool[i].piece) for i in range(a.npool)
                      if a.pool[i].used)
    s = {
        "task_id": a.task_id,
        "label": label,
        "kind": (<bytes>AF_KINDS[a.kind].name).decode(),
        "status": _STATUS[a.status],
        "acts": a.acts,
        "inflight": a.ninflight,
        "inputs_empty": [a.cons[i].desc for i in range(a.ncons)
                         if a.cons[i].ready.len == 0 and not a.cons[i].eord],
        "inputs_eord": [a.cons[i].desc for i in range(a.ncons) if a.cons[i].eord],
        "outputs_full": [{"regst_desc_id": a.prod[i].desc, "held_by": holders(&a.prod[i])}
                         for i in range(a.nprod) if a.prod[i].free_q.len == 0],
        "queued": {a.cons[i].desc: a.cons[i].ready.len for i in range(a.ncons)
                   if a.cons[i].ready.len},
        "inflight_pieces": [piece for _id, piece in inflight],
        "outputs_held": [{"regst_desc_id": a.prod[i].desc, "held_by": holders(&a.prod[i]),
                          "free": a.prod[i].free_q.len}
                         for i in range(a.nprod)
                         if a.prod[i].free_q.len != a.prod[i].register_num],
    }
    if a.kind in (AF_KIND_INPUT, AF_KIND_SOURCE, AF_KIND_WAIT_IDS):
        g = &a.k.gen
        s.update(budget=None if g.budget == AF_NONE else g.budget, pieces_made=g.pieces_made,
                 closed=bool(g.closed))
    elif a.kind == AF_KIND_LOCK:
        lk = &a.k.lock
        running = {lk.running[i].cs: lk.running[i].n for i in range(lk.nrunning)
                   if lk.running[i].n}
        c = &a.cons[lk.start]
        s.update(running=dict(sorted(running.items())),
                 waiting=[(<af_ready *>af_ring_at(&c.ready, i)).aux for i in range(c.ready.len)])
    return s


include "trace_io.pxi"
include "loop.pxi"
include "rx.pxi"
include "ring_loop.pxi"
