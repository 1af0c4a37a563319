"""Control messages between a node and its unit processes carry the node's token.

A unit's listener is reachable from other machines (a direct tcp port), and so is the
node's; with ``--insecure`` anyone may send to them.  A STOP, CONNECT, DONE, DELIVER or
ERROR without the node's token is dropped and logged, never obeyed: the run ends with every
piece and the right numbers.  And a unit that ends with exit code 0 but never reported DONE
fails the node clearly instead of leaving it waiting.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import zmq

from actorflow.actors import unit_wire as uw
from actorflow.actors.node import MachineNode
from actorflow.errors import UnitLost
from actorflow.transport import codec
from tests.actors.test_process_units import slow_plan


def _run_node(plan, pieces: int):
    got: dict[int, np.ndarray] = {}

    def deliver(task, piece, arrays):
        if task is not None:  # None: the node failed (wakes a waiting client)
            got[piece] = arrays["out"]

    node = MachineNode(plan, 0, unit="process", on_deliver=deliver)
    node.start()
    src = next(t for t in plan.tasks if t.name == "src")
    node.command(src.task_id, "start", pieces)
    return node, got


def _wait_for(got: dict, n: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(got) >= n, f"the run never got going ({len(got)} pieces)"


def _forgeries(thrd: int) -> list[list]:
    """Every control kind, bare and sealed with a wrong token, with plausible bodies."""
    wrong = b"\0" * uw.TOKEN_BYTES
    bodies = {
        uw.STOP: None,
        uw.CONNECT: {"0": "tcp://127.0.0.1:9"},
        uw.DONE: [thrd],
        uw.HELLO: [thrd, 1, None],
        uw.CONNECTED: [thrd],
        uw.ERROR: {"type": "ProtocolError", "message": "forged"},
        uw.DELIVER: [0, [0]],
    }
    out = []
    for kind, body in bodies.items():
        for b in (body, uw.seal(wrong, body), [b"short", body]):
            out.append(codec.encode(kind, b))
    return out


def test_strangers_cannot_stop_redirect_or_speak_for_units(capfd):
    plan = slow_plan(pieces=120)
    node, got = _run_node(plan, 120)
    ctx = zmq.Context()
    try:
        _wait_for(got, 3)
        h = node.hosting
        targets = [node.address.split()[0], h.node_ipc, *h.unit_addrs.values(),
                   *(a for a in h.direct.values() if a)]
        for addr in targets:
            s = ctx.socket(zmq.PUSH)
            s.linger = 2000  # bounded: the messages must leave before close
            s.sndtimeo = 500
            s.connect(addr)
            for thrd in {t for _, t in h.unit_addrs}:
                for frames in _forgeries(thrd):
                    s.send_multipart([f if isinstance(f, bytes) else bytes(f) for f in frames])
            s.close()
        node.wait_exited(timeout=30)
    finally:
        node.close()
        ctx.term()
    assert sorted(got) == list(range(120))  # every piece, none forged, none lost
    for y in got.values():
        np.testing.assert_array_equal(y, np.ones(1024, np.float32))
    err = capfd.readouterr().err
    assert "without the node's token" in err, err[-2000:]


def test_a_unit_that_ends_without_done_fails_the_node():
    plan = slow_plan(pieces=400)
    node, got = _run_node(plan, 400)
    try:
        _wait_for(got, 3)
        h = node.hosting
        slow = next(t for t in plan.tasks if t.name == "slow")
        # the node's own STOP, to one unit only: it ends with code 0 and no DONE (as a bug
        # that returned early would); the node must not wait for it forever
        h.router.send_to(h.unit_addrs[(0, slow.thrd_id)], uw.STOP, uw.seal(h.token, None))
        # UnitLost, not the WaitTimeout a minute would end in: the exit itself is noticed
        with pytest.raises(UnitLost, match=rf"m0-t{slow.thrd_id} .*exited before its actors "
                           r"finished, without an error or a DONE report"):
            node.wait_exited(timeout=60)
    finally:
        node.close()


def test_every_entry_of_a_batch_is_checked_before_a_state_machine_sees_it(capfd):
    plan = slow_plan(pieces=60)
    slow = next(t for t in plan.tasks if t.name == "slow")
    src = next(t for t in plan.tasks if t.name == "src")
    desc = src.produced["out"].regst_desc_id
    node, got = _run_node(plan, 60)
    ctx = zmq.Context()
    try:
        _wait_for(got, 3)
        h = node.hosting
        bad = [[7, src.task_id, slow.task_id, desc, 0, 0, 0, 1, "", None],  # no such type
               [0, src.task_id, slow.task_id, desc, "x", 0, 0, 1, "", None],  # slot "x"
               [0, 999, slow.task_id, desc, 0, 0, 0, 1, "", None]]  # sender not in the plan
        s = ctx.socket(zmq.PUSH)
        s.linger = 2000  # bounded: the message must leave before close
        s.sndtimeo = 500
        s.connect(h.unit_addrs[(0, slow.thrd_id)])
        s.send(codec.encode(uw.BATCH, [[b, 0] for b in bad])[0])
        s.close()
        node.wait_exited(timeout=30)
    finally:
        node.close()
        ctx.term()
    assert sorted(got) == list(range(60))
    err = capfd.readouterr().err
    assert "malformed message from peer claiming task" in err and "message type 7" in err, err
