"""The shared-memory ring's contract: what a reader and a writer may rely on.

Order and wrap-around, batches, a full ring that pushes back with a bounded wait naming what
it waited for, many records and round trips between two real processes, the doorbell that
wakes only a sleeping reader (futex, and eventfd polled beside other fds), the spin policy,
and cleanup.  Failures (dead peers, signals, bad segments, forks) are in
``test_ring_failures.py``.
"""

from __future__ import annotations

import os
import select
import stat

import pytest

from actorflow.errors import TransportError, WaitTimeout
from actorflow.launcher.leftovers import leftovers, remove_leftovers
from tests.core.ring_helpers import RECORD, SLEEPING, Peer, number, record, seg_name, until_set

_rings = pytest.importorskip("actorflow._core._rings", reason="compiled core not built")


@pytest.fixture
def seg():
    """A 1-ring segment of 8 records of 64 bytes, unlinked after the test."""
    with _rings.RingSegment.create(seg_name(), 1, 8, RECORD) as s:
        yield s


def test_records_arrive_in_order_across_many_wrap_arounds(seg):
    inbox, outlet = seg.inbox(), seg.outlet(0)
    sent = got = 0
    sizes = [1, 3, 7, 8, 2, 5]  # batches that straddle the end of the 8-slot ring
    for k in range(400):
        n = sizes[k % len(sizes)]
        outlet.send(b"".join(record(sent + i) for i in range(n)), 1.0)
        sent += n
        for ring, rec in inbox.recv(1.0):
            assert ring == 0
            assert number(rec) == got
            got += 1
    assert got == sent > 40 * seg.capacity  # the counters went round the ring many times
    assert inbox.take() == []


def test_records_of_other_sizes_and_rings_are_kept_apart():
    with _rings.RingSegment.create(seg_name(), 3, 4, 24) as s:
        inbox = s.inbox()
        outs = [s.outlet(i) for i in range(3)]
        for i, o in enumerate(outs):
            o.send(b"".join(bytes([i * 10 + k]) * 24 for k in range(3)), 1.0)
        got = inbox.recv(1.0, max_records=100)
        by_ring = {i: [rec[0] - i * 10 for r, rec in got if r == i] for i in range(3)}
        assert by_ring == {0: [0, 1, 2], 1: [0, 1, 2], 2: [0, 1, 2]}
        assert all(len(rec) == 24 for _, rec in got)
        with pytest.raises(TransportError, match="24-byte records; got 25 bytes"):
            outs[0].send(b"x" * 25, 1.0)


def test_take_into_fills_a_buffer_with_origins(seg):
    outlet = seg.outlet(0)
    outlet.send(b"".join(record(i) for i in range(5)), 1.0)
    buf = bytearray(3 * RECORD)
    origins = memoryview(bytearray(4 * 3)).cast("I")
    inbox = seg.inbox()
    assert inbox.take_into(buf, origins) == 3
    assert [number(buf[i * RECORD:]) for i in range(3)] == [0, 1, 2]
    assert list(origins) == [0, 0, 0]
    assert inbox.take_into(buf) == 2
    assert inbox.take_into(buf) == 0


def test_a_full_ring_waits_a_bounded_time_and_names_what_it_waited_for(seg):
    outlet = seg.outlet(0)
    inbox = seg.inbox()
    with pytest.raises(WaitTimeout) as e:
        outlet.send(b"".join(record(i) for i in range(11)), 0.2)
    msg = str(e.value)
    assert f"room in ring 0 of segment {seg.name}" in msg
    assert "8 records full, 3 of 11 not sent" in msg
    assert f"reader pid {os.getpid()} (alive)" in msg
    assert outlet.try_send(record(99)) == 0  # still full: nothing was dropped or overwritten
    assert [number(r) for _, r in inbox.take()] == list(range(8))
    assert outlet.full_waits >= 1


def test_an_empty_ring_waits_a_bounded_time_and_names_its_writers(seg):
    inbox = seg.inbox()
    with pytest.raises(WaitTimeout, match=rf"a record on ring segment {seg.name} \(ring 0: "
                                          "no process holds the other end\\)"):
        inbox.recv(0.05)
    outlet = seg.outlet(0)
    with pytest.raises(WaitTimeout, match=rf"ring 0: pid {os.getpid()} \(alive\)"):
        inbox.wait(0.05)
    outlet.close()


def test_back_pressure_holds_the_writer_until_a_slow_reader_drains(seg):
    """A writer of 3,000 records into an 8-record ring: it sleeps for room many times and
    every record arrives once, in order (the reader checks, in its own process)."""
    outlet = seg.outlet(0)
    with Peer("drain", seg.name, 3000) as reader:
        reader.ready()
        outlet.send(b"".join(record(i) for i in range(3000)), 30.0)
        reader.finish()
    assert outlet.full_waits > 0


def test_many_records_stream_between_two_processes():
    """200,000 numbered records through a 1,024-record ring from another process; the C
    receive loop checks each arrives in order."""
    with _rings.RingSegment.create(seg_name(), 1, 1024, RECORD) as s:
        inbox = s.inbox()
        with Peer("send", s.name, 0, 200_000) as writer:
            writer.ready()
            t_first, t_last = _rings.stream_recv(inbox, 200_000, 20.0)
            writer.finish()
        assert t_last >= t_first > 0
        assert inbox.take() == []


@pytest.mark.parametrize("loop", ["python", "c"])
def test_round_trips_between_two_processes(loop):
    with _rings.RingSegment.create(seg_name("a"), 1, 64, RECORD) as mine, \
            _rings.RingSegment.create(seg_name("b"), 1, 64, RECORD) as theirs:
        inbox = mine.inbox()
        with Peer(f"{'echo' if loop == 'python' else 'pingpong'}", theirs.name, mine.name,
                  2000) as peer:
            peer.ready()
            outlet = theirs.outlet(0)
            if loop == "c":
                assert _rings.pingpong(inbox, outlet, 2000, True, 20.0) == 2000
            else:
                for i in range(2000):
                    outlet.send(record(i), 20.0)
                    [(_ring, rec)] = inbox.recv(20.0)
                    assert number(rec) == i
            peer.finish()


def test_the_doorbell_wakes_only_a_sleeping_reader():
    """A writer makes a wake system call only while the reader sleeps: none for 500
    records to a reader that is not waiting, exactly one for a record to a reader seen
    asleep (its doorbell's flag is set), whose reply then comes back."""
    with _rings.RingSegment.create(seg_name(), 1, 1024, RECORD) as s:
        inbox, outlet = s.inbox(), s.outlet(0)
        for i in range(500):
            outlet.send(record(i), 1.0)
        assert outlet.wakes == 0
        assert len(inbox.take(1000)) == 500
        assert inbox.sleeps == 0
    with _rings.RingSegment.create(seg_name(), 1, 64, RECORD) as mine, \
            _rings.RingSegment.create(seg_name(), 1, 64, RECORD) as theirs:
        inbox = mine.inbox()
        # the C answering loop: one unsliced wait per record, so once its flag is up it
        # stays up until a writer wakes it
        with Peer("pingpong", theirs.name, mine.name, 3) as peer:
            peer.ready()
            outlet = theirs.outlet(0)
            for i in range(3):
                until_set(theirs.name, SLEEPING)  # it sleeps, waiting for record i
                outlet.send(record(i), 20.0)
                assert outlet.wakes == i + 1
                assert [number(r) for _, r in inbox.recv(20.0)] == [i]
            peer.finish()


def test_an_eventfd_doorbell_is_polled_beside_other_descriptors():
    """The reader sleeps in its own poll on the eventfd (as it would with zmq_poll and its
    sockets); the writer's record wakes it through the eventfd, and only when armed."""
    efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    other_r, other_w = os.pipe()
    try:
        with _rings.RingSegment.create(seg_name(), 1, 16, RECORD, doorbell="eventfd") as s:
            assert s.doorbell == "eventfd"
            with pytest.raises(TransportError, match="eventfd doorbell: pass the reader's"):
                s.inbox()
            inbox = s.inbox(eventfd=efd)
            with Peer("ring_eventfd", s.name, 0, 2, efd, pass_fds=(efd,)) as writer:
                writer.ready()
                # not armed: the record arrives, the eventfd stays silent
                writer.say("next")
                assert writer.line()["wakes"] == 0
                assert [number(r) for _, r in inbox.take()] == [0]
                assert select.select([efd], [], [], 0)[0] == []
                # armed: the writer wakes the poll through the eventfd
                assert inbox.arm()
                poller = select.poll()
                poller.register(efd, select.POLLIN)
                poller.register(other_r, select.POLLIN)
                writer.say("next")
                events = poller.poll(20_000)
                inbox.disarm()
                assert [fd for fd, _ in events] == [efd]
                assert writer.line()["wakes"] == 1
                assert [number(r) for _, r in inbox.take()] == [1]
                assert select.select([efd], [], [], 0)[0] == []  # disarm drained it
                writer.finish()
    finally:
        for fd in (efd, other_r, other_w):
            os.close(fd)


def test_no_spin_when_processes_outnumber_cores(seg):
    cpus = _rings.usable_cpus()
    assert seg.inbox(spin_us=5, procs=cpus + 1).spin_budget_us == 0
    assert seg.outlet(0, spin_us=5, procs=cpus + 1).spin_budget_us == 0


def test_spin_allowed_while_each_process_has_a_core(seg):
    inbox = seg.inbox(spin_us=5, procs=1)
    assert inbox.spin_budget_us == 5
    outlet = seg.outlet(0, spin_us=5, procs=1)
    outlet.send(record(1), 1.0)
    inbox.wait(1.0)
    assert [number(r) for _, r in inbox.take()] == [1]


def test_a_segment_is_mode_0600_and_named_for_the_leftover_sweep():
    from actorflow._core.ring_names import ring_segment_name

    run = f"rt{os.getpid()}"
    name = ring_segment_name(run, 3, 1)
    s = _rings.RingSegment.create(name, 2, 8, RECORD)
    try:
        st = os.stat(f"/dev/shm/{name}")
        assert stat.S_IMODE(st.st_mode) == 0o600
        assert st.st_uid == os.geteuid()
        assert leftovers(run, 3) == [f"/dev/shm/{name}"]
        assert leftovers(run, 2) == []
    finally:
        s.close()
    assert remove_leftovers(run, 3) == [f"/dev/shm/{name}"]
    assert not os.path.exists(f"/dev/shm/{name}")


def test_closing_and_unlinking_leave_nothing_behind():
    name = seg_name()
    s = _rings.RingSegment.create(name, 2, 8, RECORD)
    inbox, outlet = s.inbox(), s.outlet(1)
    s.unlink()
    assert not os.path.exists(f"/dev/shm/{name}")
    outlet.send(record(5), 1.0)  # the mapping outlives the name until closed
    assert [number(r) for _, r in inbox.take()] == [5]
    s.close()
    assert not s.closed  # the inbox and the outlet still use the mapping
    inbox.close()
    outlet.close()
    assert s.closed
    with pytest.raises(TransportError, match="closed"):
        inbox.take()
    with _rings.RingSegment.create(name, 1, 2, RECORD):
        attached = _rings.RingSegment.attach(name)
        with pytest.raises(TransportError, match="only its creator unlinks"):
            attached.unlink()
        attached.close()
    assert not os.path.exists(f"/dev/shm/{name}")


def test_names_outside_the_run_prefix_are_refused():
    for bad in ("other", "actorflow/../x", "actorflow", "actorflow x"):
        with pytest.raises(TransportError, match="expected 'actorflow' followed by"):
            _rings.RingSegment.create(bad, 1, 2, RECORD)
