# cython: language_level=3
"""The compiled unit core: ``protocol.unit_core.UnitCore`` over the C state machines.

Built from the plan as tables (``build.pxi``: every kind's row from its task's descs and
attrs), driven with message records, answering with the same actions, in the same order, as
``PyUnitCore`` (the differential test holds both to it).  ``actorflow._core`` imports
nothing of actorflow but ``errors``: the caller hands in the ``Msg``/``Act``/``Exit``
classes to build actions with.

A core belongs to the process that made it: used from another one (after a fork) it
refuses, instead of acting on a copy of state that another process owns.
"""

import os

from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memset

from actorflow.errors import ProtocolError

include "core_defs.pxi"
include "build.pxi"


cdef class NativeUnitCore:
    """One unit's actors in C: ``push`` a drain of messages, ``completed`` acts, read
    ``blocked_on``; the same contract as ``protocol.unit_core.PyUnitCore``."""

    cdef af_unit u
    cdef readonly str name
    cdef readonly int pid
    cdef object Msg, Act, Exit
    cdef object ring, timed
    cdef list labels_py
    cdef list kinds_py

    def __cinit__(self):
        memset(&self.u, 0, sizeof(af_unit))

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
        build_unit(&self.u, tasks, producer_of, self.kinds_py)

    def __dealloc__(self):
        af_unit_free(&self.u)

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
            self.u.out.n = 0
            self.u.seen.n = 0
            rc = af_unit_push(&self.u, recs, n)
        finally:
            free(recs)
        return self._actions(rc)

    def completed(self, acts):
        """The stream finished ``acts``: their READYs/ACKs, then queued messages."""
        self._mine()
        cdef int started = 0
        cdef int rc = 0
        self.u.out.n = 0
        self.u.seen.n = 0
        for a in acts:
            rc = af_unit_done(&self.u, a.task_id, a.act_id, &started)
            if rc:
                break
        if rc == 0:
            rc = af_unit_run(&self.u, started)
        return self._actions(rc)

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

    cdef void _record(self):
        """Hand what the C core saw to the recorder, in order (trace hooks)."""
        cdef af_action *x
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

    cdef object _msg(self, const af_msg *m):
        return self.Msg(m.type, m.src, m.dst, m.desc, m.slot, m.piece, m.seq, m.msg_id, m.cmd,
                        m.aux)

    cdef object _act(self, af_actor *a, af_act *x):
        reads = [(x.rw[i].desc, x.rw[i].slot) for i in range(x.nreads)]
        writes = [(x.rw[x.nreads + i].desc, x.rw[x.nreads + i].slot) for i in range(x.nwrites)]
        return self.Act(a.task_id, x.act_id, x.piece, reads, writes, act_info(x))

    def blocked_on(self):
        """Every actor's ``blocked_on()`` dict, in task order (as ``protocol.state``)."""
        self._mine()
        return [blocked(&self.u.actors[i], self.labels_py[i])
                for i in sorted(range(self.u.n), key=lambda j: self.u.actors[j].task_id)]


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
