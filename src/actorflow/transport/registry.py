"""Transport schemes by URI: ``inproc://``, ``ipc://``, ``tcp://`` over pyzmq, one registry.

Like dask's ``distributed/comm/registry.py``: one place to add a scheme.  A backend knows
how to bind and connect a socket for its addresses and how to make a fresh local address:

    get_backend("tcp://127.0.0.1:0").bind(sock, "tcp://127.0.0.1:0") -> "tcp://127.0.0.1:43121"
    local_address("ipc", "m0")        -> "ipc:///tmp/actorflow-m0-<pid>-<n>.ipc"
    get_backend("udp://x")            -> TransportError naming the known schemes

Every bind/connect error names the address and is raised ``from`` the ZeroMQ cause.
Sockets are made only by ``comm.py``; nothing above transport sees one.  All sockets of a
process share ``context()`` so ``inproc://`` works between them.
"""

from __future__ import annotations

import atexit
import os
import tempfile
import threading
from collections.abc import Callable

import zmq
import zmq.utils.garbage  # see ``at_exit``: pyzmq registers its exit hook now

from actorflow.errors import RegistryError, TransportError
from actorflow.registry import Registry

_CTX_LOCK = threading.Lock()
_IPC_MAX = 100  # sun_path is 108 bytes on Linux, less the scheme
_counter = iter(range(1 << 62))


_CONTEXTS: dict[str, zmq.Context] = {}


def libzmq_file() -> str:
    """The file through which pyzmq loaded libzmq (its backend extension): the compiled
    core finds libzmq's C functions there (``_core/_zq``: dlopen RTLD_NOLOAD + dlsym), so
    it drives the very sockets made here, with no second copy of libzmq."""
    try:
        from zmq.backend.cython import _zmq
    except ImportError as e:
        raise TransportError(f"pyzmq {zmq.__version__} has no Cython backend (the compiled "
                             "core drives pyzmq's libzmq through it)") from e
    return str(_zmq.__file__)


def context(plane: str = "data") -> zmq.Context:
    """The process-wide ZeroMQ context of ``plane`` ("data" or "control").

    Each context has its own I/O thread, so heartbeats and other control messages are not
    queued behind a busy data plane; ``inproc://`` endpoints only see their own context."""
    with _CTX_LOCK:
        ctx = _CONTEXTS.get(plane)
        if ctx is None:
            ctx = zmq.Context.instance() if plane == "data" else zmq.Context()
            _CONTEXTS[plane] = ctx
        return ctx


class Backend:
    """How one URI scheme binds, connects, and makes fresh local addresses."""

    scheme = ""

    def bind(self, sock: zmq.Socket, address: str) -> str:
        """Bind ``sock``; return the address peers should connect to."""
        try:
            sock.bind(address)
        except zmq.ZMQError as e:
            raise TransportError(f"cannot bind {address}: {e}") from e
        return address

    def connect(self, sock: zmq.Socket, address: str) -> None:
        try:
            sock.connect(address)
        except zmq.ZMQError as e:
            raise TransportError(f"cannot connect to {address}: {e}") from e

    def local_address(self, name: str) -> str:
        raise NotImplementedError


class InprocBackend(Backend):
    """Same process: ZeroMQ's in-memory pipes."""

    scheme = "inproc"

    def local_address(self, name: str) -> str:
        return f"inproc://actorflow-{name}-{os.getpid()}-{next(_counter)}"


class IpcBackend(Backend):
    """Same machine: Unix domain sockets, files under a temp directory."""

    scheme = "ipc"

    def bind(self, sock: zmq.Socket, address: str) -> str:
        path = address[len("ipc://"):]
        if len(path) > _IPC_MAX:
            raise TransportError(f"cannot bind {address}: ipc path longer than {_IPC_MAX} "
                                 "characters (set TMPDIR to a shorter directory)")
        return super().bind(sock, address)

    def local_address(self, name: str) -> str:
        d = tempfile.gettempdir()
        return f"ipc://{d}/actorflow-{name}-{os.getpid()}-{next(_counter)}.ipc"


class TcpBackend(Backend):
    """Between machines: ``tcp://host:port``; port 0 binds a free port and returns it."""

    scheme = "tcp"

    def bind(self, sock: zmq.Socket, address: str) -> str:
        host, sep, port = address[len("tcp://"):].rpartition(":")
        if not sep or (not port.isdigit() and port != "*"):
            raise TransportError(f"cannot bind {address}: expected tcp://HOST:PORT")
        if port in ("0", "*"):
            try:
                sock.bind(f"tcp://{host}:*")
            except zmq.ZMQError as e:
                raise TransportError(f"cannot bind {address}: {e}") from e
            ep = sock.getsockopt_string(zmq.LAST_ENDPOINT)
            return f"tcp://{host}:{ep.rpartition(':')[2]}"
        return super().bind(sock, address)

    def local_address(self, name: str) -> str:
        return "tcp://127.0.0.1:0"


BACKENDS: Registry[Backend] = Registry("transport scheme")
for _b in (InprocBackend(), IpcBackend(), TcpBackend()):
    BACKENDS.register(_b.scheme, _b)


def register_backend(backend: Backend) -> Backend:
    """Add a scheme (a second registration of one scheme is a ``RegistryError``)."""
    return BACKENDS.register(backend.scheme, backend)


def known_schemes() -> list[str]:
    return BACKENDS.names()


def get_backend(address: str) -> Backend:
    """The backend for ``address``'s scheme; unknown schemes list the known ones."""
    scheme, sep, _ = address.partition("://")
    if sep and scheme in BACKENDS:
        return BACKENDS.get(scheme)
    known = ", ".join(f"{s}://" for s in known_schemes())
    err = TransportError(f"address {address!r}: unknown transport scheme; known: {known}")
    raise err from RegistryError(f"unknown transport scheme '{scheme}'")


def local_address(scheme: str, name: str) -> str:
    """A fresh address of ``scheme`` on this host (``tcp`` gives port 0: bind resolves it)."""
    return get_backend(f"{scheme}://").local_address(name)


def tcp_address(host: str, port: int | str) -> str:
    """``tcp://HOST:PORT`` (IPv6 hosts bracketed): the one place tcp addresses are spelled."""
    h = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"tcp://{h}:{port}"


def shutdown(linger_ms: int = 5000) -> None:
    """At process exit: close every socket still open, giving unsent messages ``linger_ms``
    to leave (the process-wide context is otherwise never terminated, and a message still
    queued when the interpreter exits is lost).  Call only when no thread uses sockets."""
    with _CTX_LOCK:
        contexts = list(_CONTEXTS.values())
        _CONTEXTS.clear()
    for ctx in contexts:
        ctx.destroy(linger=linger_ms)


def end_plane(plane: str, timeout: float) -> bool:
    """Terminate the context of ``plane`` once its sockets are closed: returns True when
    libzmq has sent what they left queued (each socket's linger bounds that), False when
    ``timeout`` s passed first (the context is then left to the process's exit).  For a
    plane of one owner (a collective mesh), so no other thread's socket can hold it up."""
    from actorflow.transport.auth import stop_zap

    with _CTX_LOCK:
        ctx = _CONTEXTS.pop(plane, None)
    if ctx is None:
        return True
    stop_zap(ctx)  # its handler's sockets live on ctx too
    done = threading.Thread(target=ctx.term, name=f"actorflow-end-{plane}", daemon=True)
    done.start()
    done.join(timeout)
    return not done.is_alive()


def at_exit(hook: Callable[[], None]) -> None:
    """Run ``hook`` at interpreter exit *before* pyzmq stops its garbage collector.

    Zero-copy frames stay alive only in that collector's table, which its own exit hook
    clears; pyzmq registers it when ``zmq.utils.garbage`` is first imported (lazily, on the
    first zero-copy send) and exit hooks run last-registered first.  Importing it at the
    top of this module registers it before any hook of ours, so ``hook`` may still wait
    for frames to leave (``Comm.send_tracked``)."""
    atexit.register(hook)


def ipc_address(directory: str, name: str) -> str:
    """``ipc://DIRECTORY/NAME.ipc`` (a Unix socket file; bind checks the path's length)."""
    return f"ipc://{directory}/{name}.ipc"


def scheme_of(address: str) -> str:
    return address.partition("://")[0]


def another_port(address: str) -> str | None:
    """A fresh address on the same host as tcp ``address`` (port 0: bind picks one);
    ``None`` for schemes without ports."""
    scheme, _, rest = address.partition("://")
    if scheme != "tcp":
        return None
    return f"tcp://{rest.rpartition(':')[0]}:0"
