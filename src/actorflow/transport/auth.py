"""Authentication of every socket of a run: ZeroMQ CURVE with one key pair made per run.

A run's ``ClusterKey`` is a CURVE key pair that every process of the run holds and nobody
else does.  Every listening socket is a CURVE server with the run's secret key and a ZAP
handler that admits only the run's public key; every connecting socket uses the same key
pair as its client key.  A peer without the key cannot finish the CURVE handshake (it
needs the server key to encrypt its HELLO, and the ZAP check needs the client secret), so
ZeroMQ drops it before one byte of a message reaches actorflow's decoder.

The key travels in a file readable only by its owner (``--cluster-key FILE``; a file that
group or others can read is refused) or on a worker's stdin (ssh), never in argv or the
environment.  ``use_key(None)`` (``--insecure``) turns it off for debugging.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import zmq

from actorflow.errors import TransportError
from actorflow.transport.security import NO_SECURITY, Security, set_default_security

KEY_FORMAT = "actorflow-cluster-key"
KEY_VERSION = 1
ZAP_DOMAIN = "actorflow"


@dataclass(frozen=True)
class ClusterKey:
    """A run's CURVE key pair (Z85 text, 40 characters each)."""

    public: bytes
    secret: bytes

    @classmethod
    def generate(cls) -> ClusterKey:
        if not zmq.has("curve"):
            raise TransportError("this libzmq was built without CURVE; authentication needs "
                                 "it (run with --insecure to debug without it)")
        public, secret = zmq.curve_keypair()
        return cls(public, secret)

    def to_bytes(self) -> bytes:
        return msgpack.packb({"format": KEY_FORMAT, "version": KEY_VERSION,
                              "public": self.public, "secret": self.secret}, use_bin_type=True)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "cluster key") -> ClusterKey:
        try:
            doc = msgpack.unpackb(data, raw=False)
        except Exception as e:  # msgpack raises several unrelated types
            raise TransportError(f"{source}: not an actorflow cluster key ({e})") from e
        if not isinstance(doc, dict) or doc.get("format") != KEY_FORMAT:
            raise TransportError(f"{source}: not an actorflow cluster key")
        if doc.get("version") != KEY_VERSION:
            raise TransportError(f"{source}: cluster key version {doc.get('version')!r} is not "
                                 f"supported (this actorflow reads {KEY_VERSION})")
        pub, sec = doc.get("public"), doc.get("secret")
        if not (isinstance(pub, bytes) and isinstance(sec, bytes) and len(pub) == len(sec) == 40):
            raise TransportError(f"{source}: cluster key fields are malformed")
        return cls(pub, sec)

    def write(self, path: str | os.PathLike) -> Path:
        """Write the key to a new file that only its owner can read (mode 0600)."""
        path = Path(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(self.to_bytes())
        return path

    @classmethod
    def read(cls, path: str | os.PathLike, source: str = "--cluster-key") -> ClusterKey:
        """Read a key file; refused if group or others may read or write it.  ``source``
        says where the path came from (an option or an environment variable)."""
        path = Path(path)
        where = f"{source} {path}"
        try:
            st = path.stat()
        except OSError as e:
            raise TransportError(f"{where}: cannot read it: {e.strerror or e}") from e
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise TransportError(
                f"{where}: the file is accessible to group or others (mode "
                f"{stat.S_IMODE(st.st_mode):o}); anyone who reads it can join the run. "
                f"Run: chmod 600 {path}")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise TransportError(f"{where}: cannot read it: {e.strerror or e}") from e
        return cls.from_bytes(data, where)


# -- the process's key: every secured socket of this process uses it --------------------------
_lock = threading.Lock()
_key: ClusterKey | None = None
_decided = False  # use_key was called: the key (or its absence) is this process's choice
_zap: dict[int, Any] = {}  # id(context) -> its ThreadAuthenticator


class CurveSecurity(Security):
    """The transport's authentication hook with a run's key (``transport.security``)."""

    name = "curve"
    authenticated = True

    def __init__(self, key: ClusterKey) -> None:
        self.key = key

    def configure_listener(self, sock: Any) -> None:
        secure_server(sock, self.key)

    def configure_comm(self, sock: Any) -> None:
        secure_client(sock, self.key)

    def describe(self) -> str:
        return "curve (the run's key)"


def use_key(key: ClusterKey | None) -> None:
    """Set (or clear, ``None``) the key every later socket of this process is secured with:
    the default ``Security`` of ``listen``/``connect`` and the control plane's sockets."""
    global _key, _decided
    with _lock:
        _key, _decided = key, True
    set_default_security(CurveSecurity(key) if key is not None else NO_SECURITY)


def current_key() -> ClusterKey | None:
    """The run's key, or None: no authentication (``--insecure``, or never decided)."""
    return _key


def key_decided() -> bool:
    """Whether this process was told its key or told to run without one (``use_key``);
    a process that opens sockets before deciding would open them unauthenticated."""
    return _decided


class _OnlyTheRun:
    """ZAP credentials provider: admit exactly the run's public key."""

    def __init__(self, key: ClusterKey) -> None:
        self.allowed = key.public

    def callback(self, domain: str, key: bytes) -> bool:  # key: Z85 text of the client's
        return bool(key == self.allowed)


def _ensure_zap(ctx: zmq.Context, key: ClusterKey) -> None:
    with _lock:
        auth = _zap.get(id(ctx))
        if auth is None:
            from zmq.auth.thread import ThreadAuthenticator

            auth = ThreadAuthenticator(ctx)
            auth.start()
            _zap[id(ctx)] = auth
        elif getattr(auth.credentials_providers.get(ZAP_DOMAIN), "allowed", None) == key.public:
            return
        # a new key for this context (a later use_key): admit it, not the previous one
        auth.configure_curve_callback(domain=ZAP_DOMAIN, credentials_provider=_OnlyTheRun(key))


def stop_zap(ctx: zmq.Context) -> None:
    """Stop the ZAP handler of ``ctx`` (before ``ctx.term()``)."""
    with _lock:
        auth = _zap.pop(id(ctx), None)
    if auth is not None:
        auth.stop()


def secure_server(sock: zmq.Socket, key: ClusterKey | None = None) -> None:
    """Make ``sock`` (before bind) a CURVE server admitting only the run's key."""
    key = key or _key
    if key is None:
        return
    _ensure_zap(sock.context, key)
    sock.zap_domain = ZAP_DOMAIN.encode()
    sock.curve_secretkey = key.secret
    sock.curve_publickey = key.public
    sock.curve_server = True


def secure_client(sock: zmq.Socket, key: ClusterKey | None = None) -> None:
    """Make ``sock`` (before connect) a CURVE client of a run's server."""
    key = key or _key
    if key is None:
        return
    sock.curve_serverkey = key.public
    sock.curve_publickey = key.public
    sock.curve_secretkey = key.secret
