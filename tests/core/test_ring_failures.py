"""The ring when things go wrong: a peer killed or stopped mid-run, a signal during a wait,
a segment that is corrupted or not ours, a second reader or writer, and a fork.

A ring never reports a dead peer itself: the waits time out (naming what they waited for
and the peer's pid) and the caller looks at the peer.  Nothing from the segment is trusted.
"""

from __future__ import annotations

import json
import os
import signal
import struct

import pytest

from actorflow.actors.procstate import is_stopped
from actorflow.errors import TransportError, WaitTimeout
from tests.core.ring_helpers import (
    PRODUCER_WAITING,
    RECORD,
    SLEEPING,
    Peer,
    number,
    record,
    seg_name,
    until_set,
)
from tests.procs import pid_alive

_rings = pytest.importorskip("actorflow._core._rings", reason="compiled core not built")

# header fields: (offset, struct format)
MAGIC, VERSION, HEADER, RECBYTES, CAPACITY, NRINGS, DOORBELL, TOTAL = (
    (0, "<Q"), (8, "<I"), (12, "<I"), (16, "<I"), (20, "<I"), (24, "<I"), (28, "<I"), (32, "<Q"))
HEAD0, TAIL0 = (128, "<Q"), (192, "<Q")  # ring 0's counters


def poke(name: str, field: tuple[int, str], value: int) -> None:
    off, fmt = field
    with open(f"/dev/shm/{name}", "r+b") as f:
        f.seek(off)
        f.write(struct.pack(fmt, value))


@pytest.fixture
def seg():
    with _rings.RingSegment.create(seg_name(), 1, 8, RECORD) as s:
        yield s


def test_a_sigkilled_writer_makes_the_wait_time_out_and_the_caller_can_tell(seg):
    inbox = seg.inbox()
    with Peer("hold", seg.name, 0) as writer:
        writer.ready()
        assert seg.producer_pid(0) == writer.pid
        writer.kill(signal.SIGKILL)
        # what it sent before dying is still there, then nothing more comes
        assert [number(r) for _, r in inbox.recv(5.0)] == [0]
        with pytest.raises(WaitTimeout, match=rf"ring 0: pid {writer.pid} \(gone\)"):
            inbox.recv(0.2)
        assert inbox.producer_pid(0) == writer.pid
        assert not pid_alive(writer.pid)
    # the dead writer's claim is taken over by a new one
    outlet = seg.outlet(0)
    outlet.send(record(7), 1.0)
    assert [number(r) for _, r in inbox.take()] == [7]


def test_a_sigkilled_reader_makes_a_full_ring_time_out_naming_it(seg):
    outlet = seg.outlet(0)
    with Peer("read_hold", seg.name) as reader:
        reader.ready()
        assert outlet.consumer_pid == reader.pid
        reader.kill(signal.SIGKILL)
        with pytest.raises(WaitTimeout, match=rf"reader pid {reader.pid} \(gone\)"):
            outlet.send(b"".join(record(i) for i in range(9)), 0.2)


def test_a_stopped_writer_is_seen_after_the_wait_times_out(seg):
    inbox = seg.inbox()
    with Peer("hold", seg.name, 0) as writer:
        writer.ready()
        inbox.take()
        os.kill(writer.pid, signal.SIGSTOP)
        try:
            with pytest.raises(WaitTimeout, match=rf"pid {writer.pid} \(alive\)"):
                inbox.recv(0.2)
            assert is_stopped(inbox.producer_pid(0))
        finally:
            os.kill(writer.pid, signal.SIGCONT)


@pytest.mark.parametrize("role", ["wait", "send_full"])
def test_ctrl_c_during_a_wait_raises_keyboard_interrupt_at_once(seg, role):
    """A 60 s wait (for a record, or for room) interrupted by SIGINT: the peer sees
    KeyboardInterrupt and exits 0 (the test's own timeout bounds how long that may take)."""
    with Peer(role, seg.name, 0) as peer:
        peer.ready()
        until_set(seg.name, SLEEPING if role == "wait" else PRODUCER_WAITING)
        peer.kill(signal.SIGINT)
        assert peer.proc.returncode == 0, peer.proc.stderr.read()
        assert json.loads(peer.proc.stdout.readline()) == {"interrupted": True}


def test_a_second_reader_or_writer_is_refused(seg):
    inbox = seg.inbox()
    outlet = seg.outlet(0)
    me = os.getpid()
    with pytest.raises(TransportError, match=rf"ring 0 of segment {seg.name} already has a "
                                             rf"reader: pid {me}"):
        _rings.RingSegment.attach(seg.name).inbox()
    with pytest.raises(TransportError, match=rf"already has a writer: pid {me}"):
        seg.outlet(0)
    with pytest.raises(TransportError, match=r"has rings 0\.\.0, not 1"):
        seg.outlet(1)
    inbox.close()
    outlet.close()
    seg.inbox().close()  # closing gave the claims back


@pytest.mark.parametrize(("field", "value", "why"), [
    (MAGIC, 0x1234, "is not a ring segment"),
    (VERSION, 9, "ring segment version 9, this build reads 1"),
    (HEADER, 48, "header of 48 bytes, expected 64"),
    (RECBYTES, 60, "record size 60 bytes: expected a multiple of 8"),
    (RECBYTES, 1 << 20, "record size 1048576 bytes"),
    (CAPACITY, 12, "capacity 12 records: expected a power of two"),
    (CAPACITY, 0, "capacity 0 records"),
    (NRINGS, 0, "ring count 0"),
    (NRINGS, 5, "but its geometry needs"),
    (DOORBELL, 7, "doorbell kind 7"),
    (TOTAL, 1 << 40, "in the header, but its geometry needs"),
])
def test_a_corrupted_header_is_refused_naming_the_field(seg, field, value, why):
    poke(seg.name, field, value)
    with pytest.raises(TransportError, match=f"refusing ring segment {seg.name}: .*{why}"):
        _rings.RingSegment.attach(seg.name)


def test_what_the_caller_expects_is_checked(seg):
    with pytest.raises(TransportError, match="records of 64 bytes, expected 128"):
        _rings.RingSegment.attach(seg.name, record_bytes=128)
    with pytest.raises(TransportError, match="holds 1 rings, expected 2"):
        _rings.RingSegment.attach(seg.name, nrings=2)
    with pytest.raises(TransportError, match="capacity 8 records, expected 16"):
        _rings.RingSegment.attach(seg.name, capacity=16)


def test_foreign_files_are_refused():
    name = seg_name()
    path = f"/dev/shm/{name}"
    try:
        with open(path, "wb") as f:
            f.write(os.urandom(4096))
        os.chmod(path, 0o600)
        with pytest.raises(TransportError, match="is not a ring segment"):
            _rings.RingSegment.attach(name)
        os.truncate(path, 10)
        with pytest.raises(TransportError, match="has 10 bytes, less than"):
            _rings.RingSegment.attach(name)
        os.chmod(path, 0o644)
        with pytest.raises(TransportError, match="has mode 0644: expected 0600"):
            _rings.RingSegment.attach(name)
        os.unlink(path)
        os.symlink("/etc/passwd", path)
        with pytest.raises(TransportError, match="cannot open"):
            _rings.RingSegment.attach(name)
        os.unlink(path)
        with pytest.raises(TransportError, match="No such file"):
            _rings.RingSegment.attach(name)
    finally:
        if os.path.lexists(path):
            os.unlink(path)


def test_a_segment_is_never_created_over_an_existing_file(seg):
    with pytest.raises(TransportError, match="File exists"):
        _rings.RingSegment.create(seg.name, 1, 8, RECORD)


def test_impossible_counters_are_refused_not_followed(seg):
    inbox, outlet = seg.inbox(), seg.outlet(0)
    outlet.send(record(1), 1.0)
    poke(seg.name, HEAD0, 1 + 8 + 5)  # a writer claiming more records than the ring holds
    with pytest.raises(TransportError, match=r"ring 0 of segment .* holds impossible counters"):
        inbox.take()
    poke(seg.name, HEAD0, 1)
    assert [number(r) for _, r in inbox.take()] == [1]
    poke(seg.name, TAIL0, 50)  # a reader claiming to have read what was never written
    with pytest.raises(TransportError, match="impossible counters"):
        outlet.send(b"".join(record(i) for i in range(8)), 1.0)
    outlet.close()
    with pytest.raises(TransportError, match="impossible counters"):
        _rings.RingSegment.attach(seg.name).outlet(0)


def test_bad_geometry_is_refused_at_creation():
    with pytest.raises(TransportError, match="capacity 6 records: expected a power of two"):
        _rings.RingSegment.create(seg_name(), 1, 6, RECORD)
    with pytest.raises(TransportError, match="record size 12 bytes"):
        _rings.RingSegment.create(seg_name(), 1, 8, 12)
    with pytest.raises(TransportError, match="doorbell 'bell'"):
        _rings.RingSegment.create(seg_name(), 1, 8, RECORD, doorbell="bell")


def test_objects_refuse_to_work_in_a_forked_child(seg):
    inbox, outlet = seg.inbox(), seg.outlet(0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: every object of the parent must refuse
        out = []
        for call in (inbox.take, lambda: outlet.send(record(0), 0.1), seg.inbox):
            try:
                call()
                out.append("worked")
            except TransportError as e:
                out.append(str(e))
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        said = json.loads(f.read())
    _, status = os.waitpid(pid, 0)
    assert status == 0
    assert len(said) == 3
    assert all(f"this is pid {pid}" in s and "fork" in s for s in said), said
    # the parent's ends still work, and hold their claims
    outlet.send(record(3), 1.0)
    assert [number(r) for _, r in inbox.take()] == [3]
    assert seg.producer_pid(0) == seg.consumer_pid(0) == os.getpid()
