"""A message fuzzer against every port of a live run: 0 crashes, 0 hangs, 0 runs that end
with other pieces or numbers.

Malformed messages (``msg_fuzz.py``) go to every TCP port of a ``flowlaunch sim`` run: the
master and each machine's data plane (nodes, and unit processes that listen directly).
Keyed (an authenticated peer, holding the run's key file): a malformed message fails the
run at once with an error naming it and its peer.  ``--insecure`` (anyone may send): every
malformed message is dropped and logged once per peer and receiver.  Well-formed forgeries
(real ids, wrong order) are caught by the protocol's own checks and fail the run clearly.
Either way: no receiver crash, no traceback, no hang, never exit 0 with wrong output.
"""

from __future__ import annotations

import random
import re
import socket

import pytest
import zmq

from actorflow.transport.auth import ClusterKey, secure_client
from tests.launcher.helpers import JOBS, cmdline, tagged_pids
from tests.launcher.jobs.paced_sample import build_plan
from tests.launcher.msg_fuzz import message
from tests.launcher.stranger import listening_ports
from tests.launcher.test_failures import EXEC, _wait_for_line, _worker_pid

PACED = JOBS / "paced_sample.py"
OK = re.compile(r"paced_sample: 60 pieces on 2 machines in [\d.]+s .*= 0\.00e\+00 OK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fuzz(ports: set[int], master: int, key: ClusterKey | None, seed: int, n: int) -> None:
    plan = build_plan(2)
    rng = random.Random(seed)
    ctx = zmq.Context()
    socks = {}
    for port in ports:
        s = ctx.socket(zmq.DEALER if port == master else zmq.PUSH)
        s.linger = 1000  # term() below gives the sends this long to go out
        s.sndtimeo = 200
        if key is not None:
            secure_client(s, key)
        s.connect(f"tcp://127.0.0.1:{port}")
        socks[port] = s
    try:
        for _ in range(n):
            for s in socks.values():
                try:
                    s.send_multipart(message(plan, rng))
                except zmq.ZMQError:
                    pass
    finally:  # close() hands what is queued to the context; term() waits up to the linger
        for s in socks.values():
            s.close()
        ctx.term()


@pytest.mark.parametrize("unit, keyed, seed", [
    ("thread", True, 1), ("process", True, 2), ("thread", False, 3),
    pytest.param("process", False, 4, marks=pytest.mark.slow),
])
def test_fuzzing_every_port_of_a_live_run(flowlaunch, unit, keyed, seed):
    port = _free_port()
    args = ["sim", *EXEC, PACED, "--machines", 2, "--unit", unit, "--master-port", port]
    tag, p = flowlaunch.start(*args, *([] if keyed else ["--insecure"]))
    _wait_for_line(p.stderr, "progress:", 30)
    key = None
    if keyed:  # an authenticated peer: the same user, reading the run's key file
        argv = cmdline(_worker_pid(tag, 1))
        key = ClusterKey.read(argv[argv.index("--cluster-key") + 1])
    ports = listening_ports(tagged_pids(tag))
    assert port in ports and len(ports) >= 3, ports
    _fuzz(ports, port, key, seed, n=60)
    out, err = p.communicate(timeout=60)  # no hang: it ends either way
    text = out + err
    assert "Traceback" not in text and "crashed" not in text, text[-3000:]
    if p.returncode == 0:
        assert OK.search(out), out[-2000:]  # finished exactly: every piece, right numbers
    else:  # failed clearly: one line naming the machine and what broke the rules
        head = err[err.index("flowlaunch: run failed"):].splitlines()[0]
        assert re.match(r"flowlaunch: run failed: machine \d \(rank \d", head), head
        assert any(w in head for w in (
            "malformed message from peer", "undecodable", "regst desc", "seq", "EORD",
            "READY", "ACK")), head
        assert "FAILED" in out or "check" not in out  # never reported as a good run
    if not keyed:  # strangers' malformed messages were dropped and logged once per peer
        assert "malformed message from peer" in text and "dropped" in text


def test_a_seeded_message_campaign_drops_as_many_as_it_did_and_accepts_only_real_ones():
    """The fuzzer's messages, decoded and checked in-process the way a machine's receiver
    does (codec header, then ``Inbound``): how many bounce off the decoder, how many the
    receiver drops (each counted under its peer), how many are accepted — pinned, so a
    fuzzer that only sends undecodable bytes, or a receiver that lets more through, shows.
    Every accepted one is a real header: a message type, ids of the plan on a link of it."""
    import numpy as np

    from actorflow.actors.inbound import Inbound
    from actorflow.actors.machine_view import MachineView
    from actorflow.errors import MalformedMessage
    from actorflow.transport.codec import decode_head

    plan = build_plan(2)
    view = MachineView(plan.for_machine(1), 1)
    mem = {d: [{b: np.zeros(bd.shape, bd.dtype) for b, bd in desc.blobs.items()}
               for _ in range(desc.register_num)] for d, desc in view.descs.items()}
    inbound = Inbound("machine 1", view.routing, view.descs,
                      hosted=lambda t: view.routing.get(t, (None,))[0] == 1,
                      buffers=mem.get, log=lambda s: None)
    rng = random.Random(7)
    tally = {"undecodable": 0, "not a message": 0, "dropped": 0, "accepted": 0}
    for i in range(2000):
        head, *frames = message(plan, rng)
        try:
            kind, body, metas = decode_head(head, "fuzzer")
        except MalformedMessage:
            tally["undecodable"] += 1
            continue
        if kind != 0:
            tally["not a message"] += 1
            continue
        try:
            msg = inbound.check(body, metas, frames, f"peer{i % 3}")
        except MalformedMessage:
            tally["dropped"] += 1
            continue
        tally["accepted"] += 1
        assert msg.type in (0, 1, 2, 3) and inbound.hosted(msg.dst)
    assert sum(inbound.dropped.values()) == tally["dropped"]
    assert tally == {"undecodable": 469, "not a message": 248, "dropped": 1273,
                     "accepted": 10}, tally
