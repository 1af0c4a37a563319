"""Bounded queues: a sender whose receiver does not keep up waits, then fails naming it.

Sockets are unbounded by default (the actor protocol bounds what is in flight); the output
path to the launcher sets ``queue`` on both ends, so a slow receiver slows its senders
down instead of letting batches pile up in memory.
"""

from __future__ import annotations

import numpy as np
import pytest

from actorflow.errors import TransportError
from actorflow.transport.comm import connect, listen

BIG = np.zeros(1 << 20, np.uint8)  # 1 MiB: the kernel's socket buffers hold only a few


def test_a_full_queue_makes_send_wait_then_fail_naming_the_receiver():
    inbox = listen("tcp://127.0.0.1:0", queue=2, name="a slow sink")
    out = connect(inbox.address, queue=2, send_timeout=0.3, linger_ms=0, name="to the sink")
    try:
        with pytest.raises(TransportError, match=r"took no message for 0.3s .*queue stayed full"):
            for _ in range(200):  # bounded: 200 MiB if nothing ever waited
                out.send(1, {"n": 1}, [("x", BIG)])
        # the receiver takes what waits: the sender has room again
        got = 0
        while inbox.recv(0.5) is not None:
            got += 1
            if got >= 3:
                break
        assert got >= 3
        out.send(1, {"n": 2}, [("x", BIG[:8])])
    finally:
        out.close()
        inbox.close()


def test_unbounded_by_default():
    inbox = listen("tcp://127.0.0.1:0")
    out = connect(inbox.address, linger_ms=0)
    try:
        for i in range(64):  # 64 MiB queued without a reader: nothing waits
            out.send(1, {"n": i}, [("x", BIG)])
        seen = [inbox.recv(5.0).body["n"] for _ in range(64)]
        assert seen == list(range(64))
    finally:
        out.close()
        inbox.close()
