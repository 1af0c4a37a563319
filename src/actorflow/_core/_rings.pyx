# cython: language_level=3
"""Shared-memory rings between the unit processes of a machine, from Python.

A thin wrapper over the C headers the native unit loop includes (``ring_segment.h``,
``ring_inbox.h``, ``ring_outlet.h``): the node creates one ``RingSegment`` per reading
process (its doorbell and one ring per writer), mode 0600, named after the run; readers
open its ``inbox()``, writers an ``outlet(i)``.  Python uses it for tests, benches and the
Python core; the native loop takes the C structs (``_rings.pxd``).

Every wait is bounded (``WaitTimeout`` naming the segment, the ring and the peer's pid and
whether it still lives), returns on signals (Ctrl-C raises here within a slice), and
releases the GIL.  Objects refuse to work in a process other than the one that made them
(a fork child must attach anew).
"""

from cpython.exc cimport PyErr_CheckSignals
from libc.errno cimport EBADF, EBUSY, EINTR, EINVAL, ENOMEM, EPROTO, ETIMEDOUT
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport strerror

import os
import re

from actorflow.errors import TransportError, WaitTimeout

SHM_DIR = "/dev/shm"
DOORBELLS = {"futex": DOORBELL_FUTEX, "eventfd": DOORBELL_EVENTFD}
_KIND_NAMES = {v: k for k, v in DOORBELLS.items()}
_NAME_RE = re.compile(r"^actorflow[A-Za-z0-9_.-]{1,200}$")
_SLICE_NS = 100_000_000  # a wait looks at Python's signals at least this often
MAX_RECORD = RING_MAX_RECORD
MAX_CAPACITY = RING_MAX_CAPACITY
VERSION = RING_SEG_VERSION

if ring_owner_init() != 0:
    raise ImportError("actorflow._core._rings: pthread_atfork failed")


class RingError(TransportError):
    """A ring segment that cannot be made, refused on attach, or found corrupted."""


def _path(str name) -> str:
    if not _NAME_RE.match(name):
        raise RingError(f"ring segment name {name!r}: expected 'actorflow' followed by 1 to "
                        "200 letters, digits, '_', '.' or '-' (the launcher removes leftovers "
                        "by that prefix)")
    return os.path.join(SHM_DIR, name)


cdef int _alive(int32_t pid):
    return ring_pid_alive(pid)


cdef str _who(int32_t pid):
    if pid <= 0:
        return "no process holds the other end"
    return f"pid {pid} ({'alive' if _alive(pid) else 'gone'})"


cdef int64_t _deadline(double timeout) except? -1:
    if timeout < 0:
        raise ValueError(f"timeout {timeout}: expected seconds >= 0")
    return ring_now_ns() + <int64_t>(timeout * 1e9)


cdef class RingSegment:
    """One mapped segment.  ``create`` (the node) or ``attach`` (a unit); ``unlink`` removes
    the file (the creator does, on every exit path); ``close`` unmaps once no inbox or
    outlet of it is open."""

    def __cinit__(self):
        self.seg.base = NULL

    @staticmethod
    def create(str name, int nrings, int capacity, int record_bytes, str doorbell="futex"):
        """A new segment ``/dev/shm/<name>`` (must not exist), mode 0600."""
        cdef RingSegment s = RingSegment.__new__(RingSegment)
        cdef char err[512]
        if doorbell not in DOORBELLS:
            raise RingError(f"doorbell {doorbell!r}: expected one of {sorted(DOORBELLS)}")
        if nrings < 0 or capacity < 0 or record_bytes < 0:
            raise RingError(f"ring segment {name}: negative geometry ({nrings} rings, "
                            f"capacity {capacity}, {record_bytes}-byte records)")
        path = _path(name).encode()
        cdef int e = ring_seg_create(&s.seg, path, nrings, capacity, record_bytes,
                                     DOORBELLS[doorbell], err, sizeof(err))
        if e:
            raise RingError(f"ring segment {name}: {err.decode(errors='replace')}") from \
                OSError(e, strerror(e).decode())
        s.name = name
        s.created = True
        ring_owner_take(&s.owner)
        return s

    @staticmethod
    def attach(str name, int nrings=0, int capacity=0, int record_bytes=0):
        """Map an existing segment, validated; a non-zero argument must match the file."""
        cdef RingSegment s = RingSegment.__new__(RingSegment)
        cdef char err[512]
        path = _path(name).encode()
        cdef int e = ring_seg_attach(&s.seg, path, nrings, capacity, record_bytes, err,
                                     sizeof(err))
        if e:
            raise RingError(f"refusing ring segment {name}: {err.decode(errors='replace')}") \
                from OSError(e, strerror(e).decode())
        s.name = name
        s.created = False
        ring_owner_take(&s.owner)
        return s

    cdef int _check(self) except -1:
        if self.seg.base == NULL:
            raise RingError(f"ring segment {self.name} is closed")
        if not ring_owner_here(&self.owner):
            raise RingError(f"ring segment {self.name} was mapped by pid {self.owner.pid}; "
                            f"this is pid {os.getpid()}, a fork of it: attach it again here")
        return 0

    @property
    def nrings(self) -> int:
        return self.seg.nrings

    @property
    def capacity(self) -> int:
        return self.seg.capacity

    @property
    def record_bytes(self) -> int:
        return self.seg.record_bytes

    @property
    def doorbell(self) -> str:
        return _KIND_NAMES.get(self.seg.doorbell_kind, "?")

    @property
    def size(self) -> int:
        return self.seg.bytes

    @property
    def closed(self) -> bool:
        return self.seg.base == NULL

    def producer_pid(self, int index) -> int:
        """The pid holding ring ``index``'s producing end (0: none)."""
        self._check()
        if not 0 <= index < <int>self.seg.nrings:
            raise RingError(f"ring segment {self.name} has rings 0..{self.seg.nrings - 1}, "
                            f"not {index}")
        return ring_seg_ctl(&self.seg, index).producer_pid

    def consumer_pid(self, int index) -> int:
        self._check()
        if not 0 <= index < <int>self.seg.nrings:
            raise RingError(f"ring segment {self.name} has rings 0..{self.seg.nrings - 1}, "
                            f"not {index}")
        return ring_seg_ctl(&self.seg, index).consumer_pid

    def inbox(self, int eventfd=-1, double spin_us=0.0, int procs=0):
        """The consuming end of every ring (one reader per segment).  ``eventfd``: the
        doorbell's fd for an eventfd segment; ``spin_us`` with ``procs`` (the machine's
        processes running at once): spin before sleeping only while procs <= cores."""
        self._check()
        return RingInbox._open(self, eventfd, spin_us, procs)

    def outlet(self, int index, int eventfd=-1, double spin_us=0.0, int procs=0):
        """The producing end of ring ``index`` (one writer per ring)."""
        self._check()
        return RingOutlet._open(self, index, eventfd, spin_us, procs)

    def unlink(self) -> None:
        """Remove the file (idempotent; mappings stay valid until closed)."""
        if not self.created:
            raise RingError(f"ring segment {self.name}: only its creator unlinks it")
        try:
            os.unlink(_path(self.name))
        except FileNotFoundError:
            pass

    def close(self) -> None:
        """Unmap now, or when the last open inbox/outlet of it closes."""
        self.closing = True
        self._unmap_if_unused()

    cdef void _unmap_if_unused(self):
        if self.closing and self.ends == 0 and self.seg.base != NULL:
            if ring_owner_here(&self.owner):
                ring_seg_unmap(&self.seg)
            else:
                self.seg.base = NULL  # a fork's copy: the mapping is the child's own, leave it

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.created and ring_owner_here(&self.owner):
            self.unlink()
        self.close()

    def __dealloc__(self):
        # ends hold a reference, so no inbox/outlet can outlive the mapping
        if self.seg.base != NULL:
            ring_seg_unmap(&self.seg)

    def __repr__(self):
        return (f"RingSegment({self.name!r}, {self.seg.nrings} rings x {self.seg.capacity} "
                f"records x {self.seg.record_bytes} B, {self.doorbell})")


cdef class RingInbox:
    """The reader's end: records from every ring of the segment."""

    @staticmethod
    cdef RingInbox _open(RingSegment seg, int efd, double spin_us, int procs):
        cdef RingInbox r = RingInbox.__new__(RingInbox)
        cdef int32_t holder = 0
        cdef int e = ring_inbox_open(&r.c, &seg.seg, efd, <int64_t>(spin_us * 1000), procs,
                                     &holder)
        if e == EBUSY:
            raise RingError(f"ring {r.c.bad_ring} of segment {seg.name} already has a reader: "
                            f"pid {holder}")
        if e == EBADF:
            raise RingError(f"ring segment {seg.name} rings an eventfd doorbell: pass the "
                            "reader's eventfd")
        if e == EPROTO:
            raise RingError(f"ring {r.c.bad_ring} of segment {seg.name} holds impossible "
                            "counters (corrupted, or written by something else)")
        if e:
            raise RingError(f"ring segment {seg.name}: cannot open the inbox: "
                            f"{strerror(e).decode()}")
        r.seg = seg
        r.is_open = True
        seg.ends += 1
        return r

    cdef int _check(self) except -1:
        if not self.is_open:
            raise RingError(f"the inbox of ring segment {self.seg.name} is closed")
        if not ring_owner_here(&self.c.owner):
            raise RingError(f"the inbox of ring segment {self.seg.name} belongs to pid "
                            f"{self.c.owner.pid}; this is pid {os.getpid()} (a fork): open the "
                            "segment again here")
        return 0

    cdef int _protocol_error(self) except -1:
        raise RingError(f"ring {self.c.bad_ring} of segment {self.seg.name} holds impossible "
                        f"counters (its writer, {_who(ring_inbox_producer_pid(&self.c, self.c.bad_ring))}, "
                        "corrupted it)")

    def producer_pid(self, int index) -> int:
        return self.seg.producer_pid(index)

    def writers(self) -> str:
        """Who holds each ring's producing end, for messages."""
        return ", ".join(f"ring {i}: {_who(ring_inbox_producer_pid(&self.c, i))}"
                         for i in range(self.c.seg.nrings))

    cdef int _wait(self, double timeout) except -1:
        """0 once a record waits; WaitTimeout after ``timeout`` s; signals looked at."""
        cdef int64_t deadline = _deadline(timeout)
        cdef int64_t until
        cdef int e
        while True:
            until = deadline if deadline - ring_now_ns() < _SLICE_NS else ring_now_ns() + _SLICE_NS
            with nogil:
                e = ring_inbox_wait(&self.c, until)
            if e == 0:
                return 0
            PyErr_CheckSignals()    # a KeyboardInterrupt raised by a handler leaves here
            if e == EPROTO:
                self._protocol_error()
            if e == ETIMEDOUT and ring_now_ns() >= deadline:
                raise WaitTimeout(f"waited {timeout:g} s for a record on ring segment "
                                  f"{self.seg.name} ({self.writers()})")
            if e != EINTR and e != ETIMEDOUT:
                raise RingError(f"waiting on ring segment {self.seg.name}: "
                                f"{strerror(e).decode()}")

    def wait(self, double timeout) -> None:
        """Return once a record waits (``WaitTimeout`` after ``timeout`` seconds)."""
        self._check()
        self._wait(timeout)

    def take(self, int max_records=256) -> list:
        """Up to ``max_records`` waiting records as ``(ring index, bytes)``; no wait."""
        self._check()
        if max_records <= 0:
            return []
        cdef uint32_t rb = self.c.seg.record_bytes
        cdef bytearray buf = bytearray(<Py_ssize_t>max_records * rb)
        cdef uint32_t[::1] origins = memoryview(bytearray(<Py_ssize_t>max_records * 4)).cast("I")
        cdef unsigned char *p = buf
        cdef int64_t n = ring_inbox_take(&self.c, p, max_records, &origins[0])
        if n < 0:
            self._protocol_error()
        return [(origins[i], bytes(buf[i * rb:(i + 1) * rb])) for i in range(n)]

    def recv(self, double timeout, int max_records=256) -> list:
        """Wait for records (bounded), then take what waits: ``[(ring index, bytes)]``."""
        self._check()
        self._wait(timeout)
        return self.take(max_records)

    def take_into(self, unsigned char[::1] out, uint32_t[::1] origins=None) -> int:
        """Copy waiting records into ``out`` (a multiple of the record size) with no wait;
        the count.  ``origins``: each record's ring index."""
        self._check()
        cdef uint32_t rb = self.c.seg.record_bytes
        cdef Py_ssize_t room = out.shape[0] // rb
        if origins is not None and origins.shape[0] < room:
            room = origins.shape[0]
        if room == 0:
            return 0
        cdef int64_t n = ring_inbox_take(&self.c, &out[0], <uint32_t>room,
                                         &origins[0] if origins is not None else NULL)
        if n < 0:
            self._protocol_error()
        return n

    def arm(self) -> bool:
        """Arm the doorbell before sleeping in your own poll (eventfd + sockets); False
        when records already wait (do not sleep).  Call ``disarm`` after the poll."""
        self._check()
        cdef int r = ring_inbox_arm(&self.c)
        if r < 0:
            self._protocol_error()
        return r == 0

    def disarm(self) -> None:
        self._check()
        ring_inbox_disarm(&self.c)

    @property
    def sleeps(self) -> int:
        """Times this reader slept on its doorbell."""
        return self.c.sleeps

    @property
    def spin_hits(self) -> int:
        return self.c.spin.hits

    @property
    def spin_budget_us(self) -> float:
        """The spin allowed by the policy (0 when processes outnumber cores)."""
        return self.c.spin.max_ns / 1000.0

    def close(self) -> None:
        """Give up the reader's claims (idempotent; a fork's copy just forgets them)."""
        if not self.is_open:
            return
        self.is_open = False
        ring_inbox_close(&self.c)
        self.seg.ends -= 1
        self.seg._unmap_if_unused()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __dealloc__(self):
        if self.is_open:
            ring_inbox_close(&self.c)


cdef class RingOutlet:
    """A writer's end: records into one ring of a reader's segment."""

    @staticmethod
    cdef RingOutlet _open(RingSegment seg, int index, int efd, double spin_us, int procs):
        cdef RingOutlet r = RingOutlet.__new__(RingOutlet)
        cdef int32_t holder = 0
        if not 0 <= index < <int>seg.seg.nrings:
            raise RingError(f"ring segment {seg.name} has rings 0..{seg.seg.nrings - 1}, "
                            f"not {index}")
        cdef int e = ring_outlet_open(&r.c, &seg.seg, index, efd, <int64_t>(spin_us * 1000),
                                      procs, &holder)
        if e == EBUSY:
            raise RingError(f"ring {index} of segment {seg.name} already has a writer: "
                            f"pid {holder}")
        if e == EBADF:
            raise RingError(f"ring segment {seg.name} rings an eventfd doorbell: pass the "
                            "reader's eventfd")
        if e == EPROTO:
            raise RingError(f"ring {index} of segment {seg.name} holds impossible counters "
                            "(corrupted, or written by something else)")
        if e:
            raise RingError(f"ring {index} of segment {seg.name}: cannot open the outlet: "
                            f"{strerror(e).decode()}")
        r.seg = seg
        r.is_open = True
        seg.ends += 1
        return r

    cdef int _check(self) except -1:
        if not self.is_open:
            raise RingError(f"the outlet to ring {self.c.index} of segment {self.seg.name} "
                            "is closed")
        if not ring_owner_here(&self.c.owner):
            raise RingError(f"the outlet to ring {self.c.index} of segment {self.seg.name} "
                            f"belongs to pid {self.c.owner.pid}; this is pid {os.getpid()} (a "
                            "fork): open the segment again here")
        return 0

    @property
    def index(self) -> int:
        return self.c.index

    @property
    def record_bytes(self) -> int:
        return self.c.ring.record_bytes

    @property
    def capacity(self) -> int:
        return self.c.ring.capacity

    @property
    def consumer_pid(self) -> int:
        return ring_outlet_consumer_pid(&self.c) if self.is_open else 0

    @property
    def wakes(self) -> int:
        """Doorbell system calls made (the reader was asleep)."""
        return self.c.wakes

    @property
    def full_waits(self) -> int:
        """Times a send found the ring full and slept for room."""
        return self.c.full_waits

    @property
    def spin_budget_us(self) -> float:
        return self.c.spin.max_ns / 1000.0

    cdef Py_ssize_t _count(self, Py_ssize_t nbytes) except -1:
        cdef uint32_t rb = self.c.ring.record_bytes
        if nbytes % rb:
            raise RingError(f"ring {self.c.index} of segment {self.seg.name} carries "
                            f"{rb}-byte records; got {nbytes} bytes")
        return nbytes // rb

    def try_send(self, const unsigned char[::1] records) -> int:
        """Push what fits now (no wait); the number of records pushed."""
        self._check()
        cdef Py_ssize_t n = self._count(records.shape[0])
        if n == 0:
            return 0
        cdef int64_t m = ring_outlet_push(&self.c, &records[0], <uint32_t>n)
        if m < 0:
            raise RingError(f"ring {self.c.index} of segment {self.seg.name} holds impossible "
                            f"counters (its reader, {_who(ring_outlet_consumer_pid(&self.c))}, "
                            "corrupted it)")
        return m

    def send(self, const unsigned char[::1] records, double timeout) -> None:
        """Push every record (one or several, back to back), waiting for room when the ring
        is full; ``WaitTimeout`` naming the ring and its reader after ``timeout`` s."""
        self._check()
        cdef Py_ssize_t n = self._count(records.shape[0])
        if n == 0:
            return
        cdef const unsigned char *p = &records[0]
        # the common case first: room now, no clock and no GIL hand-off
        cdef int64_t m = ring_outlet_push(&self.c, p, <uint32_t>n)
        if m == n:
            return
        if m < 0:
            raise RingError(f"ring {self.c.index} of segment {self.seg.name} holds impossible "
                            f"counters (its reader, {_who(ring_outlet_consumer_pid(&self.c))}, "
                            "corrupted it)")
        cdef int64_t deadline = _deadline(timeout)
        cdef int64_t until
        cdef uint32_t done = <uint32_t>m, sent = 0
        cdef uint32_t rb = self.c.ring.record_bytes
        cdef int e
        while done < n:
            until = deadline if deadline - ring_now_ns() < _SLICE_NS else ring_now_ns() + _SLICE_NS
            with nogil:
                e = ring_outlet_send(&self.c, p + <size_t>done * rb, <uint32_t>(n - done),
                                     until, &sent)
            done += sent
            if e == 0:
                continue
            PyErr_CheckSignals()
            if e == EPROTO:
                raise RingError(f"ring {self.c.index} of segment {self.seg.name} holds "
                                f"impossible counters (its reader, "
                                f"{_who(ring_outlet_consumer_pid(&self.c))}, corrupted it)")
            if e == ETIMEDOUT and ring_now_ns() >= deadline:
                raise WaitTimeout(
                    f"waited {timeout:g} s for room in ring {self.c.index} of segment "
                    f"{self.seg.name} ({self.c.ring.capacity} records full, {n - done} of "
                    f"{n} not sent; reader {_who(ring_outlet_consumer_pid(&self.c))})")
            if e != EINTR and e != ETIMEDOUT:
                raise RingError(f"sending on ring {self.c.index} of segment {self.seg.name}: "
                                f"{strerror(e).decode()}")

    def close(self) -> None:
        if not self.is_open:
            return
        self.is_open = False
        ring_outlet_close(&self.c)
        self.seg.ends -= 1
        self.seg._unmap_if_unused()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __dealloc__(self):
        if self.is_open:
            ring_outlet_close(&self.c)


cdef class RingCheck:
    """The checks a record from a ring passes before a state machine sees it
    (``ring_check.h``): built once from the machine's plan facts, then ``problem(record,
    ring)`` says why a record is refused (None: it may be handled).  The native loop uses
    the C struct (``RingCheck.c``) directly.

    ``units``: task -> thrd of every task of the machine; ``descs``: (desc id, producer
    task, register_num, consumer tasks) of every desc they touch; ``me``: the reading unit;
    ``writers``: the unit writing each ring of its segment."""

    def __cinit__(self):
        self.tasks = NULL
        self.thrds = NULL
        self.descs = NULL
        self.consumers = NULL
        self.writers = NULL

    def __init__(self, units, descs, int me, writers):
        tasks = sorted((int(t), int(u)) for t, u in dict(units).items())
        ds = sorted((int(i), int(p), int(r), sorted(int(x) for x in cs))
                    for i, p, r, cs in descs)
        ws = [int(w) for w in writers]
        ncons = sum(len(d[3]) for d in ds)
        self.tasks = <int64_t *>malloc((len(tasks) + 1) * sizeof(int64_t))
        self.thrds = <int32_t *>malloc((len(tasks) + 1) * sizeof(int32_t))
        self.descs = <ring_desc_t *>malloc((len(ds) + 1) * sizeof(ring_desc_t))
        self.consumers = <int64_t *>malloc((ncons + 1) * sizeof(int64_t))
        self.writers = <int32_t *>malloc((len(ws) + 1) * sizeof(int32_t))
        if not (self.tasks and self.thrds and self.descs and self.consumers and self.writers):
            raise MemoryError()
        cdef Py_ssize_t i, k = 0
        for i, (t, u) in enumerate(tasks):
            self.tasks[i] = t
            self.thrds[i] = u
        for i, (did, prod, rn, cs) in enumerate(ds):
            if rn < 1:
                raise RingError(f"regst desc {did}: register_num {rn} < 1")
            self.descs[i].id = did
            self.descs[i].producer = prod
            self.descs[i].register_num = rn
            self.descs[i].first = k
            self.descs[i].count = len(cs)
            for x in cs:
                self.consumers[k] = x
                k += 1
        for i, w in enumerate(ws):
            self.writers[i] = w
        self.c.tasks, self.c.thrds, self.c.ntasks = self.tasks, self.thrds, len(tasks)
        self.c.descs, self.c.ndescs, self.c.consumers = self.descs, len(ds), self.consumers
        self.c.me, self.c.writers, self.c.nwriters = me, self.writers, len(ws)

    def problem(self, const unsigned char[::1] record, int ring):
        """Why the 64-byte ``record`` from ring ``ring`` is refused, or None."""
        cdef char why[256]
        if record.shape[0] != 64:
            raise RingError(f"a record is 64 bytes, got {record.shape[0]}")
        if ring < 0:
            return f"ring {ring} does not exist"
        if ring_check_record(&self.c, <const af_msg *>&record[0], ring, why, sizeof(why)):
            return why.decode(errors="replace")
        return None

    def __dealloc__(self):
        free(self.tasks)
        free(self.thrds)
        free(self.descs)
        free(self.consumers)
        free(self.writers)


# ---- floors: C loops for the transport bench (bench/transport_floor.py) ----------------

def pingpong(RingInbox inbox, RingOutlet outlet, long n, bint initiator, double timeout):
    """``n`` round trips of one record (the initiator sends first); GIL released.  Each
    wait is bounded by ``timeout``; a signal ends the loop (raised here)."""
    inbox._check()
    outlet._check()
    if inbox.seg.seg.record_bytes != outlet.c.ring.record_bytes:
        raise RingError("pingpong: the inbox and the outlet carry records of different sizes")
    cdef long done = 0
    cdef int e, step = 0
    cdef int64_t to = <int64_t>(timeout * 1e9)
    while done < n:
        with nogil:
            e = ring_bench_pingpong(&inbox.c, &outlet.c, n, initiator, to, &done, &step)
        if e == 0:
            break
        PyErr_CheckSignals()
        if e == ETIMEDOUT:
            raise WaitTimeout(f"pingpong: no reply within {timeout:g} s after {done} round "
                              f"trips (writers: {inbox.writers()})")
        if e != EINTR:
            raise RingError(f"pingpong on {inbox.seg.name}: {strerror(e).decode()}")
    return done


def stream_send(RingOutlet outlet, long n, int batch, double timeout):
    """Send ``n`` numbered records, ``batch`` per push; GIL released."""
    outlet._check()
    cdef long done = 0
    cdef int e
    cdef int64_t to = <int64_t>(timeout * 1e9)
    while done < n:
        with nogil:
            e = ring_bench_send(&outlet.c, n, batch, to, &done)
        if e == 0:
            break
        PyErr_CheckSignals()
        if e == ETIMEDOUT:
            raise WaitTimeout(f"stream_send: no room within {timeout:g} s after {done} records")
        if e != EINTR:
            raise RingError(f"stream_send on ring {outlet.c.index}: {strerror(e).decode()}")


def stream_recv(RingInbox inbox, long n, double timeout, long skip=0):
    """Receive ``n`` records numbered from 0 (checked in order); the monotonic ns at which
    record ``skip`` arrived and at which the last did."""
    inbox._check()
    cdef long done = 0
    cdef int e
    cdef int64_t t_first = 0, t_last = 0
    cdef int64_t to = <int64_t>(timeout * 1e9)
    while done < n:
        with nogil:
            e = ring_bench_recv(&inbox.c, n, skip, to, &done, &t_first, &t_last)
        if e == 0:
            break
        PyErr_CheckSignals()
        if e == ETIMEDOUT:
            raise WaitTimeout(f"stream_recv: nothing within {timeout:g} s after {done} records")
        if e == EPROTO:
            raise RingError(f"stream_recv: record {done} out of order")
        if e != EINTR:
            raise RingError(f"stream_recv on {inbox.seg.name}: {strerror(e).decode()}")
    return t_first, t_last


def now_ns() -> int:
    return ring_now_ns()


def usable_cpus() -> int:
    return ring_usable_cpus()
