"""One wait on rings and sockets together (``ring_zq_wait.h``): a unit process sleeps once
for a record from a peer unit (eventfd doorbell) or a message from another machine."""

from __future__ import annotations

import os
import threading

import pytest

from actorflow.errors import TransportError
from actorflow.transport import connect, listen
from actorflow.transport.registry import libzmq_file, local_address
from tests.core.ring_helpers import RECORD, SLEEPING, number, record, seg_name, until_set

_rings = pytest.importorskip("actorflow._core._rings", reason="compiled core not built")
_zq = pytest.importorskip("actorflow._core._zq", reason="compiled core not built")
_zq.load(libzmq_file())


@pytest.fixture
def setup():
    """An eventfd ring segment with its inbox and an outlet, and a pull socket with a comm."""
    efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    seg = _rings.RingSegment.create(seg_name(), 1, 16, RECORD, doorbell="eventfd")
    ln = listen(local_address("ipc", "wait"))
    out = connect(ln.address)
    try:
        yield seg, seg.inbox(eventfd=efd), seg.outlet(0, eventfd=efd), ln, out
    finally:
        out.close()
        ln.close()
        seg.unlink()
        seg.close()
        os.close(efd)


def later(fn) -> threading.Thread:
    t = threading.Thread(target=fn)
    t.start()
    return t


def test_a_record_wakes_the_wait(setup):
    seg, inbox, outlet, ln, _ = setup
    sock = _zq.ZqSocket(ln.handle, ln, ln.name)

    def send():  # once the waiter sleeps (its doorbell flag is up)
        until_set(seg.name, SLEEPING)
        outlet.send(record(4), 5.0)
    t = later(send)
    try:
        assert _zq.wait_any(inbox, [sock], 20.0) == (True, False)
    finally:
        t.join(20)
    assert outlet.wakes == 1
    assert [number(r) for _, r in inbox.take()] == [4]


def test_a_socket_message_wakes_the_wait(setup):
    seg, inbox, _, ln, out = setup
    sock = _zq.ZqSocket(ln.handle, ln, ln.name)

    def send():
        until_set(seg.name, SLEEPING)
        out.send(3, "hello")
    t = later(send)
    try:
        assert _zq.wait_any(inbox, [sock], 20.0) == (False, True)
    finally:
        t.join(20)
    assert ln.recv(5.0).body == "hello"
    assert inbox.take() == []


def test_what_already_waits_returns_at_once(setup):
    _, inbox, outlet, ln, out = setup
    sock = _zq.ZqSocket(ln.handle, ln, ln.name)
    outlet.send(record(1), 1.0)
    out.send(3, "x")
    while not ln.poll(0.01):  # the message reached the listener's queue
        pass
    assert _zq.wait_any(inbox, [sock], 0.0) == (True, True)
    assert inbox.sleeps == 0


def test_nothing_times_out_and_a_futex_inbox_is_refused(setup):
    _, inbox, _, ln, _ = setup
    sock = _zq.ZqSocket(ln.handle, ln, ln.name)
    assert _zq.wait_any(inbox, [sock], 0.05) == (False, False)
    assert _zq.wait_any(inbox, [], 0.01) == (False, False)
    with _rings.RingSegment.create(seg_name(), 1, 4, RECORD) as futex_seg:
        with pytest.raises(TransportError, match="futex doorbell, which poll cannot watch"):
            _zq.wait_any(futex_seg.inbox(), [sock], 0.01)
