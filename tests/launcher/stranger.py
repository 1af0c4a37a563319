"""A stranger on loopback: finds a run's listening ports and tries to use them without keys.

``listening_ports(pids)`` maps the processes' socket inodes to LISTEN entries of
/proc/net/tcp.  The attacks: a ZeroMQ peer with no key (or its own key) sending a forged
control or data message, asking the master for the run's output pieces, and raw TCP bytes.
"""

from __future__ import annotations

import os
import socket
import time

import zmq

from actorflow.launcher import wire
from actorflow.transport import codec


def _inodes(pid: int) -> set[int]:
    out = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                out.add(int(link[8:-1]))
    except OSError:
        pass
    return out


def listening(pids: list[int]) -> set[tuple[str, int]]:
    """(ip, port) of every TCP socket the processes listen on (IPv4)."""
    inodes = set().union(*(_inodes(p) for p in pids)) if pids else set()
    out = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            parts = line.split()
            if parts[3] == "0A" and int(parts[9]) in inodes:  # LISTEN
                ip_hex, port_hex = parts[1].split(":")
                ip = ".".join(str(int(ip_hex[i:i + 2], 16)) for i in (6, 4, 2, 0))
                out.add((ip, int(port_hex, 16)))
    return out


def listening_ports(pids: list[int]) -> set[int]:
    return {port for _ip, port in listening(pids)}


def ctrl(t: str, **fields: object) -> bytes:
    """A control message as the control plane's comms send it (kind CTRL, one frame)."""
    return codec.encode_head(wire.CTRL, {"t": t, **fields})


def ask_for_results(port: int, key: tuple[bytes, bytes] | None = None,
                    wait: float = 1.5) -> list[dict]:
    """Ask like flowlaunch's monitor does ("watch"); return whatever the master answers."""
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.linger = 0
    if key is not None:  # a key of its own: knows the protocol, not the run's key
        s.curve_serverkey, (s.curve_publickey, s.curve_secretkey) = key[0], zmq.curve_keypair()
    s.connect(f"tcp://127.0.0.1:{port}")
    got = []
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline:
            s.send(ctrl("watch"), zmq.NOBLOCK)
            if s.poll(200):
                got.append(codec.decode_head(s.recv_multipart()[0], "the master")[1])
    except zmq.Again:
        pass
    finally:
        s.close()
        ctx.term()
    return got


def inject(port: int, frames_list: list[list[bytes]], kind: int = zmq.DEALER) -> None:
    """Send forged messages with no key; nothing may arrive (CURVE drops the handshake)."""
    ctx = zmq.Context()
    s = ctx.socket(kind)
    s.linger = 300  # term() below gives the sends this long to go out
    s.sndtimeo = 300
    s.connect(f"tcp://127.0.0.1:{port}")
    try:
        for frames in frames_list:
            try:
                s.send_multipart(frames)
            except zmq.Again:
                pass
    finally:  # close() hands what is queued to the context; term() waits up to the linger
        s.close()
        ctx.term()


def raw_bytes(port: int, payloads: list[bytes]) -> None:
    for data in payloads:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0) as c:
                c.sendall(data)  # the bytes go before the close's FIN
        except OSError:
            pass
