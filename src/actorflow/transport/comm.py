"""Comm and Listener: the only way above transport to move a header and frames.

Like dask's ``distributed/comm/core.py``: a layer, not a set of sockets.  A ``Listener``
binds an address of any registered scheme and receives from many peers; a ``Comm``
connects to one listener.  Two shapes, named by pattern:

    inbox = listen("tcp://127.0.0.1:0")                   # "pull": one-way, many senders
    out = connect(inbox.address)                          # "push": FIFO to that inbox
    out.send(KIND, {"any": "msgpack"}, [("x", array)])    # arrays go as zero-copy frames
    m = inbox.recv(timeout=1.0)                           # Message(kind, body, metas, frames)
    m.arrays()                                            # {"x": copy of array}

    server = listen(addr, "router"); client = connect(addr, "dealer")   # request/reply:
    m = server.recv(1.0); server.send(m.peer, KIND, body)              # m.peer: who asked

Every listener and comm is given a ``Security`` (the authentication hook, applied to the
socket before bind/connect) and ``Limits`` (checked on every receive, ``MalformedMessage``
naming the peer address on a breach).  ``recv`` returns ``None`` when ``timeout`` passes:
the caller's error names what it waited for.  ``CommLike``/``ListenerLike`` are the typing
protocols the layers above program against.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

import numpy as np
import zmq

from actorflow.errors import CommClosed, MalformedMessage, TransportError
from actorflow.registry import Registry
from actorflow.transport import codec
from actorflow.transport.limits import DEFAULT_LIMITS, Limits
from actorflow.transport.registry import context, get_backend
from actorflow.transport.security import NO_SECURITY, Security, default_security

_MORE = zmq.RCVMORE
_SNDMORE = zmq.SNDMORE


class Message(NamedTuple):
    """One received message; ``frames`` are zero-copy buffers valid while referenced."""

    kind: int
    body: Any
    metas: list | None
    frames: list
    peer: bytes | None = None  # the sender's identity on a "router" listener

    def arrays(self) -> dict[str, np.ndarray]:
        """The blobs as fresh arrays owned by the caller."""
        return codec.arrays_of(self.metas, self.frames)

    def views(self) -> dict[str, np.ndarray]:
        """The blobs as read-only arrays over the received frames (no copy)."""
        return codec.views_of(self.metas, self.frames)

    def copy_into(self, dst: dict[str, np.ndarray], where: str | Callable[[], str]) -> None:
        """Write the blobs into preallocated arrays (receive buffers, regst slots)."""
        codec.copy_into(self.metas or [], self.frames, dst, where)


class CommLike(Protocol):
    """A connected endpoint (what ``connect`` returns)."""

    address: str

    def send(self, kind: int, body: Any, arrays: Iterable[tuple[str, np.ndarray]] = (),
             copy: bool = False) -> None: ...

    def send_head(self, head: bytes) -> None: ...

    def recv(self, timeout: float | None = None) -> Message | None: ...

    def close(self, linger_ms: int = 0) -> None: ...


class ListenerLike(Protocol):
    """A bound endpoint receiving from many peers (what ``listen`` returns)."""

    address: str

    def recv(self, timeout: float | None = None) -> Message | None: ...

    def send(self, peer: bytes, kind: int, body: Any,
             arrays: Iterable[tuple[str, np.ndarray]] = ()) -> None: ...

    def close(self, linger_ms: int = 0) -> None: ...


# pattern -> (zmq socket type, can receive, receives with a peer identity)
LISTEN_PATTERNS: Registry[tuple[int, bool]] = Registry("listener pattern")
LISTEN_PATTERNS.register("pull", (zmq.PULL, False))
LISTEN_PATTERNS.register("router", (zmq.ROUTER, True))
CONNECT_PATTERNS: Registry[tuple[int, bool]] = Registry("comm pattern")
CONNECT_PATTERNS.register("push", (zmq.PUSH, False))
CONNECT_PATTERNS.register("dealer", (zmq.DEALER, True))


class _Endpoint:
    """What listeners and comms share: one socket, its limits, receive and send."""

    def __init__(self, sock: zmq.Socket, address: str, limits: Limits, name: str,
                 routed: bool) -> None:
        self._sock = sock
        self.address = address
        self.limits = limits
        self.name = name or address
        self._routed = routed  # frames start with the peer identity (router)
        self._lock = threading.Lock()
        self._rcvtimeo = -2
        self.closed = False
        self.rejected = 0  # messages refused by the limits or the codec
        self.send_timeout: float | None = None  # s a send may wait for room (Comm)

    @property
    def handle(self) -> int:
        """The libzmq socket's address, for the compiled core's C driver (``_core/_zq``),
        which sends and receives on it with the GIL released while this endpoint keeps it
        open.  Not for Python: nothing above transport touches a socket."""
        if self.closed:
            raise CommClosed(f"{self.name}: closed ({self.address})")
        return int(self._sock.underlying)

    @property
    def send_lock(self) -> threading.Lock:
        """Held around every send on this endpoint; the C driver's sends on ``handle``
        take it too, so threads sharing the endpoint never interleave frames."""
        return self._lock

    # -- receiving ----------------------------------------------------------------------
    def poll(self, timeout: float) -> bool:
        """True when a message is waiting (within ``timeout`` seconds)."""
        try:
            return bool(self._sock.poll(int(timeout * 1000)))
        except zmq.ZMQError as e:
            raise self._closed_error("poll", e) from e

    def recv(self, timeout: float | None = None) -> Message | None:
        """The next message, or ``None`` after ``timeout`` seconds (``None``: wait forever)."""
        ms = -1 if timeout is None else int(timeout * 1000)
        sock = self._sock
        if ms == 0 and not self._routed:  # a poll for what already waits: no option change
            try:
                head = sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return None
            except zmq.ZMQError as e:
                raise self._closed_error("receive", e) from e
            return self._finish(None, head)
        if ms != self._rcvtimeo:
            try:
                sock.setsockopt(zmq.RCVTIMEO, ms)
            except zmq.ZMQError as e:
                raise self._closed_error("receive", e) from e
            self._rcvtimeo = ms
        try:
            if self._routed:
                peer: bytes | None = sock.recv()
                head = sock.recv()
            else:
                peer, head = None, sock.recv()
        except zmq.Again:
            return None
        except zmq.ZMQError as e:
            raise self._closed_error("receive", e) from e
        return self._finish(peer, head)

    def _finish(self, peer: bytes | None, head: bytes) -> Message | None:
        """Decode a received header and take the frames it lists (limits checked)."""
        sock = self._sock
        limits = self.limits
        if len(head) > limits.max_frame_bytes:
            self._reject(f"a {len(head)}-byte header frame exceeds the largest frame of "
                         f"{limits.max_frame_bytes} bytes", peer)
        try:
            kind, body, metas = codec.decode_head(head, self._source(peer))
        except MalformedMessage:
            self._drain()
            self.rejected += 1
            raise
        if not metas:
            # no RCVMORE check here: it costs as much as the receive itself on the hot path;
            # stray frames after a header-only message are rejected by the next receive
            return Message(kind, body, None, [], peer)
        n = len(metas)
        if n > limits.max_frames:
            self._reject(f"the header lists {n} blobs, more than the {limits.max_frames} "
                         "frames a message may carry", peer)
        frames = []
        for i in range(n):
            if not sock.getsockopt(_MORE):
                self._reject(f"the header lists {n} blobs but {i} frames arrived", peer)
            f = sock.recv(copy=False)
            if len(f) > limits.max_frame_bytes:
                self._reject(f"frame {i + 1} of {len(f)} bytes exceeds the largest frame "
                             f"of {limits.max_frame_bytes} bytes", peer)
            frames.append(f)
        if sock.getsockopt(_MORE):
            self._reject(f"the header lists {n} blobs but more frames follow", peer)
        return Message(kind, body, metas, frames, peer)

    def _source(self, peer: bytes | None) -> str:
        return f"peer {peer!r} of {self.name}" if peer is not None else f"a peer of {self.name}"

    def _drain(self) -> None:
        sock = self._sock
        while sock.getsockopt(_MORE):
            sock.recv(copy=False)

    def _reject(self, why: str, peer: bytes | None) -> None:
        self._drain()
        self.rejected += 1
        raise MalformedMessage(f"{self._source(peer)}: message rejected: {why}")

    # -- sending ------------------------------------------------------------------------
    def _send_frames(self, frames: list, copy: bool, peer: bytes | None = None) -> None:
        sock = self._sock
        last = len(frames) - 1
        with self._lock:
            try:
                if peer is not None:
                    sock.send(peer, _SNDMORE)
                if last == 0:
                    sock.send(frames[0])
                    return
                sock.send(frames[0], _SNDMORE)
                for i in range(1, last + 1):
                    sock.send(frames[i], 0 if i == last else _SNDMORE, copy=copy)
            except zmq.ZMQError as e:
                raise self._closed_error("send", e) from e

    def _closed_error(self, what: str, e: zmq.ZMQError) -> TransportError:
        if self.closed or e.errno == zmq.ENOTSOCK:
            return CommClosed(f"{self.name}: {what} on a closed endpoint ({self.address})")
        if e.errno == zmq.EAGAIN and what == "send":  # flow control: the queue stayed full
            return TransportError(
                f"{self.name}: {self.address} took no message for "
                f"{self.send_timeout or 0:g}s (its queue stayed full: "
                "the receiver is stuck or far too slow)")
        return TransportError(f"{self.name}: {what} at {self.address} failed: {e}")

    def close(self, linger_ms: int = 0) -> None:
        """Close the socket; ``linger_ms`` bounds how long unsent messages may flush."""
        with self._lock:
            if not self.closed:
                self.closed = True
                self._sock.close(linger=linger_ms)


class Listener(_Endpoint):
    """A bound socket receiving from many peers ("pull", or "router" to also reply)."""

    def __init__(self, address: str, pattern: str = "pull", *,
                 security: Security = NO_SECURITY, limits: Limits = DEFAULT_LIMITS,
                 name: str = "", plane: str = "data", queue: int = 0) -> None:
        """``queue``: messages that may wait here (0: unbounded, as the actor protocol bounds
        what is in flight); a bound makes senders with a bound of their own wait."""
        kind, routed = LISTEN_PATTERNS.get(pattern)
        sock = context(plane).socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVHWM, queue)
        self.security = security
        try:
            security.configure_listener(sock)
            bound = get_backend(address).bind(sock, address)
        except BaseException:
            sock.close(linger=0)
            raise
        super().__init__(sock, bound, limits, name or f"listener {bound}", routed)
        self.pattern = pattern
        self.addresses = [bound]

    def also_listen(self, address: str) -> str:
        """Receive on a second address too (say ``ipc://`` beside ``tcp://``)."""
        bound = get_backend(address).bind(self._sock, address)
        self.addresses.append(bound)
        return bound

    def send(self, peer: bytes, kind: int, body: Any,
             arrays: Iterable[tuple[str, np.ndarray]] = ()) -> None:
        """Reply to ``peer`` (a ``Message.peer``) on a "router" listener."""
        if not self._routed:
            raise TransportError(f"{self.name}: a '{self.pattern}' listener cannot send")
        self._send_frames(codec.encode(kind, body, arrays), False, peer)


class Comm(_Endpoint):
    """A socket connected to one listener ("push": send only; "dealer": both ways)."""

    def __init__(self, address: str, pattern: str = "push", *,
                 security: Security = NO_SECURITY, limits: Limits = DEFAULT_LIMITS,
                 name: str = "", linger_ms: int = 2000, plane: str = "data",
                 queue: int = 0, send_timeout: float | None = None) -> None:
        """``queue``: messages that may wait to be sent (0: unbounded, as the protocol or a
        reply bounds what is in flight); with a bound, ``send`` waits for room -- flow
        control -- for at most ``send_timeout`` s, then raises ``TransportError``."""
        kind, _ = CONNECT_PATTERNS.get(pattern)
        sock = context(plane).socket(kind)
        sock.setsockopt(zmq.SNDHWM, queue)
        if send_timeout is not None:
            sock.setsockopt(zmq.SNDTIMEO, max(1, int(send_timeout * 1000)))
        sock.setsockopt(zmq.LINGER, linger_ms)
        self.security = security
        try:
            security.configure_comm(sock)
            get_backend(address).connect(sock, address)
        except BaseException:
            sock.close(linger=0)
            raise
        super().__init__(sock, address, limits, name or f"comm to {address}", False)
        self.pattern = pattern
        self.send_timeout = send_timeout

    def send(self, kind: int, body: Any, arrays: Iterable[tuple[str, np.ndarray]] = (),
             copy: bool = False) -> None:
        """One message; ``copy=False`` sends array frames by reference (keep them unchanged
        until sent), ``copy=True`` copies them once into the socket's messages."""
        self._send_frames(codec.encode(kind, body, arrays), copy)

    def send_tracked(self, kind: int, body: Any,
                     arrays: Iterable[tuple[str, np.ndarray]] = ()) -> zmq.MessageTracker:
        """Like ``send``; the tracker is ``done`` once libzmq let go of the message's last
        frame, i.e. wrote it out, so (a comm being FIFO) every message sent before it
        left too.  The last frame goes by reference even when small, so it is tracked."""
        frames = codec.encode(kind, body, arrays)
        last = zmq.Frame(frames[-1], copy=False, track=True)
        tracker = last.tracker
        frames[-1] = last
        del last  # only libzmq's reference may keep the frame alive, or it is never done
        self._send_frames(frames, False)
        return tracker

    def send_frames(self, frames: list, copy: bool = False) -> None:
        """Frames already made by ``codec.encode``."""
        self._send_frames(frames, copy)

    def send_head(self, head: bytes) -> None:
        """A message of one frame made by ``codec.encode_head`` (the hot path)."""
        with self._lock:
            try:
                self._sock.send(head)
            except zmq.ZMQError as e:
                raise self._closed_error("send", e) from e

    def recv(self, timeout: float | None = None) -> Message | None:
        if self.pattern == "push":
            raise TransportError(f"{self.name}: a 'push' comm cannot receive")
        return super().recv(timeout)


def listen(address: str, pattern: str = "pull", *, security: Security | None = None,
           limits: Limits | None = None, name: str = "", plane: str = "data",
           queue: int = 0) -> Listener:
    """Bind ``address`` (any registered scheme; ``tcp://HOST:0`` picks a free port).
    ``plane="control"`` puts the socket on the control plane's own I/O thread."""
    return Listener(address, pattern, security=security or default_security(),
                    limits=limits or DEFAULT_LIMITS, name=name, plane=plane, queue=queue)


def connect(address: str, pattern: str = "push", *, security: Security | None = None,
            limits: Limits | None = None, name: str = "", linger_ms: int = 2000,
            plane: str = "data", queue: int = 0, send_timeout: float | None = None) -> Comm:
    """Connect to a listener at ``address`` (connecting does not wait for it to exist);
    ``queue``/``send_timeout``: flow control (see ``Comm``)."""
    return Comm(address, pattern, security=security or default_security(),
                limits=limits or DEFAULT_LIMITS, name=name, linger_ms=linger_ms, plane=plane,
                queue=queue, send_timeout=send_timeout)
