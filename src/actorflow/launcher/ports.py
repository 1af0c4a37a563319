"""Addresses and ports: pick a free port, check one is usable, find our own address."""

from __future__ import annotations

import errno
import socket

from actorflow.errors import LaunchError


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the OS picks it; the caller binds it soon)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def check_port_free(host: str, port: int) -> None:
    """Raise a one-line LaunchError if ``host:port`` cannot be bound right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((resolve(host), port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise LaunchError(
                    f"master port {port} on {host} is already in use; choose another "
                    f"--master-port, or --master-port 0 to pick a free one") from e
            raise LaunchError(f"cannot bind the master address {host}:{port}: "
                              f"{e.strerror or e}") from e


def resolve(host: str) -> str:
    """``host`` as an IPv4 address; a one-line LaunchError naming it if it does not resolve."""
    try:
        return socket.gethostbyname(host)
    except OSError as e:
        raise LaunchError(f"cannot resolve host '{host}': {e.strerror or e}") from e


def local_address_towards(host: str, port: int = 9) -> str:
    """The address of the interface this machine uses to reach ``host`` (no packet sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((resolve(host), port))
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"
