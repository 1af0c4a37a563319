# cython: language_level=3
"""libzmq driven from C on pyzmq's own sockets, with the GIL released.

``transport/`` makes, keys (CURVE) and configures the sockets as always, and says where
pyzmq's libzmq is; ``load(path)`` finds libzmq's functions there (``zq_api.h``: dlopen
RTLD_NOLOAD + dlsym; this module imports no zmq), and ``ZqSocket(handle, owner)`` sends
and receives whole multipart messages on a socket's handle (pyzmq's
``Socket.underlying``) with bounded waits (``zq_io.h``).  Frames of ``zero_copy_min``
bytes or more go out without a copy: the buffer is held until libzmq's I/O thread lets go
of it.

Every wait is bounded (``WaitTimeout`` naming the socket), returns on signals (they are
looked at here), and a socket refuses to work in a process other than the one that
wrapped it (libzmq sockets do not survive a fork).
"""

from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer
from cpython.exc cimport PyErr_CheckSignals
from libc.errno cimport EINTR, EMSGSIZE, ENOTSOCK, EPROTO, ETIMEDOUT
from libc.stdint cimport int64_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from actorflow._core._rings cimport (
    RingInbox,
    ring_now_ns,
    ring_owner_here,
    ring_owner_init,
    ring_owner_t,
    ring_owner_take,
)

import os
from collections import deque

from actorflow.errors import CommClosed, MalformedMessage, TransportError, WaitTimeout

if ring_owner_init() != 0:  # this module's own fork counter (each module has a copy)
    raise ImportError("actorflow._core._zq: pthread_atfork failed")

ZERO_COPY_MIN = 1024   # frames this big or bigger are sent without a copy
MAX_FRAMES = 1025      # the most frames one send or receive handles (a header + 1024)
cdef enum:
    _SMALL = 16        # frames handled without a malloc
_SLICE_NS = 100_000_000


def load(str path):
    """Resolve libzmq's functions from ``path``, a file this process already loaded
    (pyzmq's backend extension: ``transport.registry.libzmq_file()``); ``(library file,
    (major, minor, patch))``.  Idempotent.  ImportError naming a missing symbol."""
    cdef char err[1024]
    if zq_load(path.encode(), err, sizeof(err)) != 0:
        raise ImportError(f"actorflow._core._zq: {err.decode(errors='replace')}")
    cdef int a = 0, b = 0, c = 0
    ZQ.version(&a, &b, &c)
    return ZQ.libpath.decode(errors="replace"), (a, b, c)


def loaded() -> bool:
    return bool(ZQ.loaded)


cdef str _zmq_error(int e):
    return ZQ.strerror(e).decode(errors="replace")


cdef class Frame:
    """One received frame: its bytes stay in libzmq's message (no copy) while this lives."""

    cdef zq_msg_t msg
    cdef bint valid
    cdef Py_ssize_t shape[1]

    def __len__(self):
        return ZQ.msg_size(&self.msg) if self.valid else 0

    def __getbuffer__(self, Py_buffer *view, int flags):
        if not self.valid:
            raise ValueError("frame released")
        self.shape[0] = ZQ.msg_size(&self.msg)
        view.buf = ZQ.msg_data(&self.msg)
        view.len = self.shape[0]
        view.readonly = 1
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = self.shape
        view.strides = NULL
        view.suboffsets = NULL
        view.internal = NULL
        view.obj = self

    def __releasebuffer__(self, Py_buffer *view):
        pass

    @property
    def bytes(self) -> bytes:
        return bytes(memoryview(self))

    def __dealloc__(self):
        if self.valid:
            ZQ.msg_close(&self.msg)


cdef class _Held:
    """A sent buffer libzmq may still read: released once its counter drops to zero."""

    cdef Py_buffer view
    cdef bint has_view
    cdef zq_hold_t *hold

    def __dealloc__(self):
        if self.hold != NULL and zq_hold_live(self.hold) > 0:
            return  # still in libzmq's hands (interpreter exit): leave both alone
        free(self.hold)
        if self.has_view:
            PyBuffer_Release(&self.view)


_held = deque()   # _Held objects in flight, oldest first


def _reap(bint everything=False) -> int:
    """Drop the held buffers libzmq let go of; how many are still in flight."""
    cdef _Held h
    if everything:
        keep = [h for h in _held if zq_hold_live(h.hold) > 0]
        _held.clear()
        _held.extend(keep)
    else:
        while _held and zq_hold_live((<_Held>_held[0]).hold) == 0:
            _held.popleft()
    return len(_held)


def zero_copy_in_flight() -> int:
    """Buffers sent without a copy that libzmq still reads."""
    return _reap(True)


cdef int64_t _deadline(double timeout) except? -1:
    if timeout < 0:
        raise ValueError(f"timeout {timeout}: expected seconds >= 0")
    return ring_now_ns() + <int64_t>(timeout * 1e9)


cdef class ZqSocket:
    """A libzmq socket driven from C: ``send`` / ``recv`` whole multipart messages.

    ``handle``: the socket's address (pyzmq's ``Socket.underlying``); ``owner``: what keeps
    the socket open (a transport endpoint or the pyzmq socket: anything with ``closed``),
    looked at before every call; ``name`` goes into every error."""

    cdef void *handle
    cdef object sock
    cdef readonly str name
    cdef ring_owner_t owner

    def __init__(self, size_t handle, object owner, str name=""):
        if not ZQ.loaded:
            raise TransportError("actorflow._core._zq: libzmq's functions are not loaded "
                                 "(call load(transport.registry.libzmq_file()) first)")
        if handle == 0:
            raise TransportError(f"ZqSocket {name!r}: a null socket handle")
        if owner.closed:
            raise CommClosed(f"socket {name or hex(handle)} is closed")
        self.sock = owner
        self.handle = <void *>handle
        self.name = name or f"zmq socket {handle:#x}"
        ring_owner_take(&self.owner)

    cdef int _check(self) except -1:
        if not ring_owner_here(&self.owner):
            raise TransportError(f"{self.name} was wrapped by pid {self.owner.pid}; this is "
                                 f"pid {os.getpid()} (a fork): sockets do not cross a fork")
        if self.sock.closed:
            raise CommClosed(f"{self.name} is closed")
        return 0

    cdef int _fail(self, int e, str doing) except -1:
        if e == ZQ_ETERM or e == ENOTSOCK:
            raise CommClosed(f"{doing} on {self.name}: {_zmq_error(e)}")
        raise TransportError(f"{doing} on {self.name}: {_zmq_error(e)}") from \
            OSError(e, _zmq_error(e))

    def send(self, frames, double timeout, Py_ssize_t zero_copy_min=ZERO_COPY_MIN) -> None:
        """Send one message of ``frames`` (bytes-like, contiguous); frames of
        ``zero_copy_min`` bytes or more without a copy.  ``WaitTimeout`` when there is no
        room (HWM reached, no peer) for ``timeout`` seconds."""
        self._check()
        if not isinstance(frames, (list, tuple)):
            frames = list(frames)
        cdef Py_ssize_t n = len(frames)
        if n == 0 or n > MAX_FRAMES:
            raise TransportError(f"send on {self.name}: {n} frames; expected 1 to {MAX_FRAMES}")
        if _held:
            _reap()
        cdef zq_frame_t fr_small[_SMALL]
        cdef Py_buffer views_small[_SMALL]
        cdef zq_frame_t *fr = fr_small
        cdef Py_buffer *views = views_small
        if n > _SMALL:
            fr = <zq_frame_t *>malloc(n * sizeof(zq_frame_t))
            views = <Py_buffer *>malloc(n * sizeof(Py_buffer))
            if fr == NULL or views == NULL:
                free(fr)
                free(views)
                raise MemoryError()
        cdef Py_ssize_t i, got = 0
        cdef list held = None
        cdef _Held h
        cdef uint32_t sent = 0
        cdef int e = 0
        cdef int64_t deadline, until
        try:
            for i in range(n):
                PyObject_GetBuffer(frames[i], &views[i], PyBUF_ANY_CONTIGUOUS)
                got += 1
                fr[i].data = views[i].buf
                fr[i].len = views[i].len
                fr[i].hold = NULL
                if views[i].len >= zero_copy_min:
                    h = _Held.__new__(_Held)
                    h.hold = zq_hold_new()
                    if h.hold == NULL:
                        raise MemoryError()
                    fr[i].hold = h.hold
                    if held is None:
                        held = [None] * n
                    held[i] = h
            # the common case first: room now, no wait, no clock, the GIL kept (it would
            # cost more to give up than the call takes)
            e = zq_send_frames(self.handle, fr, <uint32_t>n, 0, &sent)
            if e == ETIMEDOUT:
                deadline = _deadline(timeout)
                while True:
                    until = deadline if deadline - ring_now_ns() < _SLICE_NS else ring_now_ns() + _SLICE_NS
                    with nogil:
                        e = zq_send_frames(self.handle, fr, <uint32_t>n, until, &sent)
                    if e == 0:
                        break
                    if sent == 0:   # between messages: a signal may end the send here
                        PyErr_CheckSignals()
                    if e == ETIMEDOUT and ring_now_ns() >= deadline:
                        if sent == 0:
                            raise WaitTimeout(f"waited {timeout:g} s to send on {self.name} "
                                              "(no room: its high-water mark is reached or no "
                                              "peer is connected)")
                        deadline = ring_now_ns() + 10 * _SLICE_NS  # finish a started message
                    elif e != EINTR and e != ETIMEDOUT:
                        self._fail(e, "send")
            elif e != 0:
                self._fail(e, "send")
        finally:
            for i in range(got):
                h = held[i] if held is not None else None
                if h is None:
                    PyBuffer_Release(&views[i])
                else:
                    h.view = views[i]     # released by the holder once libzmq is done
                    h.has_view = True
                    if zq_hold_live(h.hold) > 0:
                        _held.append(h)
            if fr != fr_small:
                free(fr)
                free(views)

    def recv(self, double timeout, int max_frames=64) -> list:
        """The next whole message as ``Frame`` objects (zero copy); ``WaitTimeout`` after
        ``timeout`` seconds; ``MalformedMessage`` for a message of more than ``max_frames``
        frames (taken and dropped)."""
        self._check()
        got = self._recv(timeout, max_frames)
        if got is None:
            raise WaitTimeout(f"waited {timeout:g} s for a message on {self.name}")
        return got

    def try_recv(self, int max_frames=64):
        """A message already waiting, or None."""
        self._check()
        return self._recv(0.0, max_frames)

    cdef object _recv(self, double timeout, int max_frames):
        """A whole message, or None after ``timeout`` s (0: only what waits now)."""
        if max_frames < 1 or max_frames > MAX_FRAMES:
            raise TransportError(f"recv on {self.name}: max_frames {max_frames}; expected 1 "
                                 f"to {MAX_FRAMES}")
        cdef zq_msg_t msgs_small[_SMALL]
        cdef zq_msg_t *msgs = msgs_small
        if max_frames > _SMALL:
            msgs = <zq_msg_t *>malloc(max_frames * sizeof(zq_msg_t))
            if msgs == NULL:
                raise MemoryError()
        cdef uint32_t got = 0, k, room = <uint32_t>max_frames
        cdef int e = 0
        cdef int64_t until, deadline = 0
        cdef Frame f
        try:
            e = zq_recv_frames(self.handle, msgs, room, &got, 0)  # what waits: no wait
            if (e == ETIMEDOUT or e == EINTR) and timeout > 0:
                deadline = _deadline(timeout)
            while e == ETIMEDOUT or e == EINTR:
                if deadline == 0 or ring_now_ns() >= deadline:
                    return None
                until = deadline if deadline - ring_now_ns() < _SLICE_NS else ring_now_ns() + _SLICE_NS
                with nogil:
                    e = zq_recv_frames(self.handle, msgs, room, &got, until)
                if e != 0:
                    PyErr_CheckSignals()
            if e == EMSGSIZE:
                zq_close_frames(msgs, got)
                got = 0
                raise MalformedMessage(f"a message of more than {max_frames} frames on "
                                       f"{self.name} (dropped)")
            if e != 0:
                zq_close_frames(msgs, got)
                got = 0
                self._fail(e, "receive")
            out = []
            for k in range(got):
                f = Frame.__new__(Frame)
                f.msg = msgs[k]     # the message moves into the frame (a 64-byte copy)
                f.valid = True
                out.append(f)
            got = 0
            return out
        finally:
            zq_close_frames(msgs, got)
            if msgs != msgs_small:
                free(msgs)

    def wait(self, bint writable, double timeout) -> bool:
        """True once the socket can receive (``writable``: send) within ``timeout``."""
        self._check()
        cdef int64_t deadline = _deadline(timeout)
        cdef int64_t until
        cdef int e
        cdef short ev = ZQ_POLLOUT if writable else ZQ_POLLIN
        while True:
            until = deadline if deadline - ring_now_ns() < _SLICE_NS else ring_now_ns() + _SLICE_NS
            with nogil:
                e = zq_wait(self.handle, ev, until)
            if e == 0:
                return True
            PyErr_CheckSignals()
            if e == ETIMEDOUT:
                if ring_now_ns() >= deadline:
                    return False
            elif e != EINTR:
                self._fail(e, "poll")


def wait_any(RingInbox inbox, sockets, double timeout) -> tuple:
    """Wait for a record in ``inbox`` (an eventfd segment's) or a message on any of
    ``sockets`` (``ZqSocket``s), with one poll and the GIL released: ``(rings ready,
    sockets ready)``, both False after ``timeout`` seconds.  Signals are looked at."""
    inbox._check()
    cdef list socks = list(sockets)
    cdef Py_ssize_t n = len(socks), i
    if n > RING_ZQ_MAX_SOCKETS:
        raise TransportError(f"wait_any: {n} sockets; at most {RING_ZQ_MAX_SOCKETS}")
    cdef void *handles[RING_ZQ_MAX_SOCKETS]
    cdef ZqSocket z
    for i in range(n):
        z = socks[i]
        z._check()
        handles[i] = z.handle
    if inbox.c.efd < 0:
        raise TransportError(f"wait_any: the inbox of {inbox.seg.name} has a futex doorbell, "
                             "which poll cannot watch (make the segment with an eventfd)")
    cdef int64_t deadline = _deadline(timeout)
    cdef int64_t until
    cdef int e, ready = 0
    while True:
        until = deadline if deadline - ring_now_ns() < _SLICE_NS else ring_now_ns() + _SLICE_NS
        with nogil:
            e = ring_zq_wait(&inbox.c, handles, <int>n, until, &ready)
        if e == 0:
            return bool(ready & RING_ZQ_RINGS), bool(ready & RING_ZQ_SOCKETS)
        PyErr_CheckSignals()
        if e == ETIMEDOUT:
            if ring_now_ns() >= deadline:
                return False, False
        elif e == EPROTO:
            inbox._protocol_error()
        elif e != EINTR:
            raise TransportError(f"waiting on {inbox.seg.name} and {n} sockets: "
                                 f"{_zmq_error(e)}")
