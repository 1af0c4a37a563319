"""What the ring tests share: unique segment names, numbered records, and peer processes
(``ring_peer.py``) that are always reaped."""

from __future__ import annotations

import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import time
from itertools import count
from pathlib import Path

PEER = str(Path(__file__).with_name("ring_peer.py"))
RECORD = 64
_n = count()
# flags in a segment (ring_segment.h's layout): (offset, struct format)
SLEEPING = (68, "<I")  # the doorbell's: the reader is (about to be) asleep
PRODUCER_WAITING = (140, "<I")  # ring 0's: its writer sleeps for room


def seg_name(tag: str = "t") -> str:
    """A segment name no other test (or test run) uses."""
    return f"actorflowtest{os.getpid()}x{next(_n)}_m0_ring{tag}"


def peek(name: str, field: tuple[int, str]) -> int:
    off, fmt = field
    with open(f"/dev/shm/{name}", "rb") as f:
        f.seek(off)
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]


def until_set(name: str, field: tuple[int, str]) -> None:
    """Wait for a flag a peer raises once it sleeps (bounded by the test's timeout)."""
    while not peek(name, field):
        time.sleep(0.005)


def record(i: int, size: int = RECORD) -> bytes:
    return struct.pack("<q", i).ljust(size, b"\0")


def number(rec: bytes) -> int:
    return struct.unpack_from("<q", rec)[0]


class Peer:
    """A ``ring_peer.py`` process: started, awaited until attached, always reaped."""

    def __init__(self, *args: object, pass_fds: tuple[int, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, PEER, *map(str, args)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=pass_fds)
        self.pid = self.proc.pid

    def line(self, timeout: float = 30.0) -> dict:
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(timeout):
                raise AssertionError(f"ring peer {self.pid} said nothing for {timeout} s")
        finally:
            sel.close()
        text = self.proc.stdout.readline()
        if not text:
            self.proc.wait(10)
            raise AssertionError(f"ring peer {self.pid} exited ({self.proc.returncode}): "
                                 f"{self.proc.stderr.read()}")
        return json.loads(text)

    def ready(self) -> Peer:
        assert self.line()["ready"] == self.pid
        return self

    def say(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 60.0) -> int:
        rc = self.proc.wait(timeout)
        assert rc == 0, f"ring peer {self.pid} failed ({rc}): {self.proc.stderr.read()}"
        return rc

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(30)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f:
                f.close()

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
