"""Actor messages that leave the machine go through the compiled core's libzmq driver:
a READY's regst bytes as frames without a copy, decoded by transport's own listener."""

from __future__ import annotations

import numpy as np
import pytest

from actorflow.actors import native_sockets
from actorflow.actors.routing import Router
from actorflow.protocol.messages import ACK, READY, Msg
from actorflow.transport import listen
from actorflow.transport.outbox import Outbox
from actorflow.transport.registry import local_address

pytestmark = pytest.mark.skipif(native_sockets.unavailable() is not None,
                                reason=f"no C driver: {native_sockets.unavailable()}")


@pytest.fixture
def remote():
    """A listener standing for machine 1, and an outbox for this process's sends."""
    ln = listen(local_address("tcp", "m1"))
    out = Outbox("machine 0 unit 1")
    yield ln, out
    out.close()
    ln.close()


def test_a_ready_leaves_the_machine_with_its_blobs_through_c(remote):
    ln, out = remote
    slot = {"out": np.arange(1 << 16, dtype=np.float32), "idx": np.array([3, 4], np.int64)}
    memory = {7: [slot, {}]}
    native = native_sockets.NativeSender()
    r = Router(0, {1: (0, 1), 2: (1, 0)}, out, memory, {1: ln.address}, native=native)
    ready, ack = Msg(READY, 1, 2, 7, 0, 5, 0, 1), Msg(ACK, 1, 2, 8, 1, 5, 0, 2)
    r.send(ready)
    r.send(ack)
    m = ln.recv(10.0)
    assert m.body == ready.header()
    got = m.arrays()
    np.testing.assert_array_equal(got["out"], slot["out"])
    np.testing.assert_array_equal(got["idx"], slot["idx"])
    assert ln.recv(10.0).body == ack.header()
    assert native.sent == 2
    while native.in_flight():  # libzmq lets go of the slot's bytes once written out
        ln.poll(0.01)


def test_coalesced_messages_to_a_remote_unit_go_as_one_batch_through_c(remote):
    ln, out = remote
    slot = {"out": np.full(4096, 2.5)}
    native = native_sockets.NativeSender()
    r = Router(0, {1: (0, 1), 2: (1, 3)}, out, {7: [slot]}, {1: "tcp://127.0.0.1:1 3=" +
               ln.address}, coalesce=True, native=native)
    for piece in range(3):
        r.send(Msg(READY, 1, 2, 7, 0, piece, piece, piece + 1))
    assert r.pending and native.sent == 0  # held until the loop flushes
    r.flush()
    m = ln.recv(10.0)
    assert [h[0][5] for h in m.body] == [0, 1, 2] and len(m.frames) == 3
    for f in m.frames:
        np.testing.assert_array_equal(np.frombuffer(f, np.float64), slot["out"])
    assert native.sent == 1
