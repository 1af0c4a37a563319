"""The authentication hook of every socket: a ``Security`` object configures it first.

Every ``Listener`` and ``Comm`` is given a ``Security`` (``comm.listen``/``comm.connect``)
and calls ``configure_listener(sock)`` / ``configure_comm(sock)`` on its socket before
binding or connecting, so one object decides how all sockets of a run authenticate: the
data plane, the unit status lines and the control plane alike.  ``Security()`` is plain
ZeroMQ (no authentication); a CURVE implementation sets the server keys on listeners and
the client keys (plus the server's public key) on comms, so a peer without them is refused
before any message is decoded.  ``describe()`` goes into connect/bind errors.
"""

from __future__ import annotations

from typing import Any


class Security:
    """No authentication: the default, and the base class of real schemes."""

    name = "none"
    authenticated = False  # only holders of a key can reach a listener configured by it

    def configure_listener(self, sock: Any) -> None:
        """Set the server side's options on a socket about to bind (a ``zmq.Socket``)."""

    def configure_comm(self, sock: Any) -> None:
        """Set the client side's options on a socket about to connect (a ``zmq.Socket``)."""

    def describe(self) -> str:
        return self.name


NO_SECURITY = Security()


_default: Security = NO_SECURITY


def set_default_security(security: Security) -> None:
    """The scheme used by every later ``listen``/``connect`` of this process that names
    none (``transport.auth.use_key`` sets the run's CURVE key here)."""
    global _default
    _default = security


def default_security() -> Security:
    return _default
