"""Every socket of an SPMD run is CURVE-authenticated with the run's key (loopback).

``flowlaunch --nproc-per-node 3`` runs a gated all-reduce (``scripts/paced_all_reduce.py``,
ring path: the data crosses the mesh's sockets; it pauses midway until the test is done).
A stranger finds the ports the ranks' processes listen on, in both phases of a run: while
ranks meet (rank 0's rendezvous; the last rank joins only after the attack) and while they
compute (every rank's mesh inbox).
It asks the rendezvous for its store, sends garbage, raw bytes, and well-formed forgeries
(a rank's all-reduce contribution for a later round).  With the run's key none of it
reaches a decoder: the run ends with exit 0 and exactly numpy's numbers.  The
``--insecure`` control shows the same forgery *does* change a rank's numbers when nothing
authenticates, and a holder of the key who sends a malformed message fails the run with an
error naming it.
"""

from __future__ import annotations

import json
import os
import re
import time

import numpy as np
import pytest
import zmq

from actorflow.launcher.ports import free_port
from actorflow.transport import codec
from actorflow.transport.auth import ClusterKey, secure_client
from actorflow.transport.mesh import MESH
from tests.collective.spmd_run import ROUNDS, TOTAL, N, rank_pids, results, run_key, start
from tests.launcher.helpers import tagged_pids
from tests.launcher.stranger import ask_for_results, ctrl, inject, listening, raw_bytes


def _wait_listening(tag: str, port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while (port not in {p for _ip, p in listening(tagged_pids(tag))}
           and time.monotonic() < deadline):
        time.sleep(0.05)
    assert time.monotonic() < deadline, f"rank 0's rendezvous never listened on {port}"


def _forged_contribution(seq: int, src: int) -> list[bytes]:
    """Rank ``src``'s part of the world group's ``seq``-th collective (a small all-reduce),
    with other numbers: accepted as real by an inbox that does not authenticate."""
    key = ["0,1,2:all_reduce[direct]", seq, 0, ["<f8", [5]]]
    return codec.encode(MESH, [src, key], [("", np.full(5, 1e6))])


def _later_rounds() -> list[list[bytes]]:
    # collective #1 is the setup's barrier, then two all-reduces a round: the small one of
    # round i is #2 + 2i; the run is paused before the second half of the rounds
    return [_forged_contribution(2 + 2 * i, 1) for i in range(ROUNDS // 2, ROUNDS)]


def test_a_stranger_cannot_reach_the_rendezvous_or_the_mesh(flowlaunch, tmp_path):
    port = free_port("127.0.0.1")
    gate, midway = tmp_path / "join", tmp_path / "midway"
    tag, p, lines = start(flowlaunch, port, gate=str(gate), mid_gate=str(midway))
    # phase 1: the ranks meet; the last one waits for the gate, so rank 0's rendezvous is open
    _wait_listening(tag, port)
    assert ask_for_results(port, wait=0.4) == []  # no key: no answer at all
    assert ask_for_results(port, key=(ClusterKey.generate().public, b""), wait=0.4) == []
    meet = [[ctrl("kv_get", key="collective/1/addr/0", timeout=1.0)],
            [ctrl("kv_set", key="collective/1/addr/2", value="tcp://127.0.0.1:9")],
            [ctrl("hello", rank=2, world_size=N, host="x", pid=1, clock={})],
            [b"one", b"two", b"three"], [os.urandom(8)]]
    inject(port, meet, zmq.DEALER)
    raw_bytes(port, [os.urandom(8), b"\xff" * 64])
    assert port in {p for _ip, p in listening(tagged_pids(tag))}, "attacked too late"
    gate.touch()  # the last rank joins
    # phase 2: every rank's mesh inbox, while the run is paused inside a round
    lines.wait("MIDWAY", N, 60)
    pids = rank_pids(tag)
    where = listening(list(pids.values()))
    assert len(where) >= N and {ip for ip, _p in where} == {"127.0.0.1"}, where
    for _ip, target in sorted(where):
        for kind in (zmq.PUSH, zmq.DEALER):
            inject(target, [*_later_rounds(), [b"\xc1junk"], [os.urandom(16)]], kind)
        raw_bytes(target, [os.urandom(8), os.urandom(4096)])
    midway.touch()
    err = lines.rest(60)
    assert p.returncode == 0, err[-3000:]
    res = results(lines)
    assert sorted(res) == list(range(N)), lines.seen
    for r, d in res.items():  # exactly numpy's numbers, and nothing reached a decoder
        assert d["ok"] and d["total"] == TOTAL and d["dropped"] == 0, (r, d)
    assert "malformed" not in err and "Traceback" not in err, err[-3000:]


def test_insecure_lets_the_same_stranger_change_the_numbers(flowlaunch, tmp_path):
    """The control: with --insecure the run still works (and warns), the garbage is dropped
    and logged, but the forged contribution is taken as rank 1's: rank 0 computes wrong.
    The junk goes after the forgeries on one connection, so its logged drop shows rank 0
    read (and kept) every forgery before the run goes on."""
    port = free_port("127.0.0.1")
    midway = tmp_path / "midway"
    tag, p, lines = start(flowlaunch, port, "--insecure", mid_gate=str(midway))
    lines.wait("MIDWAY", N, 60)
    target = {p for _ip, p in listening([rank_pids(tag)[0]])} - {port}  # the rendezvous
    assert len(target) == 1, target  # closes once the ranks met: it may still be listed
    inject(target.pop(), [*_later_rounds(), [b"\xc1junk"]], zmq.PUSH)
    lines.wait("[rank 0] collective inbox of rank 0", 1, 60)  # the junk's drop, logged
    midway.touch()
    err = lines.rest(60)
    assert p.returncode == 0, err[-3000:]
    assert "warning: --insecure" in err
    res = results(lines)
    assert not res[0]["ok"] and res[0]["dropped"] >= 1, res[0]  # the forgery counted
    assert res[1]["ok"] and res[2]["ok"] and res[1]["total"] == TOTAL, res
    out = "".join(lines.seen)  # a rank's stderr comes out here, prefixed "[rank N]"
    assert re.search(r"\[rank 0\] collective inbox of rank 0 \(tcp://127\.0\.0\.1:\d+\): "
                     r"malformed message from peer \? dropped", out), out[-3000:]


def test_a_key_holder_sending_garbage_fails_the_run_naming_it(flowlaunch, tmp_path):
    """An authenticated peer (it read the run's key file) that sends a malformed message:
    the receiving rank fails at once with an error naming the message and its sender."""
    port = free_port("127.0.0.1")
    midway = tmp_path / "midway"
    tag, p, lines = start(flowlaunch, port, mid_gate=str(midway))
    lines.wait("MIDWAY", N, 60)
    pid0 = rank_pids(tag)[0]
    key = run_key(pid0)
    (target,) = {p for _ip, p in listening([pid0])} - {port}  # rank 0's inbox
    ctx = zmq.Context()
    s = ctx.socket(zmq.PUSH)
    s.linger = 1000
    secure_client(s, key)
    s.connect(f"tcp://127.0.0.1:{target}")
    s.send_multipart(codec.encode(MESH, [1, "not a collective's key"]))
    s.close()
    ctx.term()
    lines.wait("[rank 0] FAILED", 1, 60)  # rank 0 fails inside the paused round
    midway.touch()
    err = lines.rest(60)
    assert p.returncode != 0
    failed = [s for s in lines.seen if s.startswith("[rank 0] FAILED")]
    assert failed and re.search(
        r"FAILED rank 0: MalformedMessage: collective inbox of rank 0 \(tcp://127\.0\.0\.1:\d+"
        r"\): malformed message from peer rank 1 dropped \(key .not a collective's key. is "
        r"not a collective's", failed[0]), lines.seen
    assert "RESULT" not in "".join(lines.seen)  # no rank reports a good run
    assert "Traceback" not in err + "".join(lines.seen)  # a clear error, on every rank


@pytest.mark.parametrize("how", [("--nproc-per-node", "2", "--master-port", "0"),
                                 ("sim", "--machines", "2"),
                                 ("sim", "--machines", "2", "--insecure")])
def test_each_spmd_launch_hands_its_ranks_a_key_of_its_own(flowlaunch, how, tmp_path):
    """``--nproc-per-node`` and ``sim script.py`` make a key per run, hand the ranks the path
    of a 0600 file in a 0700 directory, and remove it at the end; ``--insecure`` warns and
    hands none (the ranks then meet unauthenticated).  A variable left in the user's shell
    (the other one) does not override what this run decided."""
    script = os.path.join(os.path.dirname(__file__), "scripts", "key_env.py")
    args = [how[0], script, *how[1:]] if how[0] == "sim" else [*how, script]
    shell = ({"ACTORFLOW_CLUSTER_KEY": str(ClusterKey.generate().write(tmp_path / "k"))}
             if "--insecure" in how else {"ACTORFLOW_CLUSTER_KEY": "", "ACTORFLOW_INSECURE": "1"})
    r = flowlaunch.run(*args, env=shell, timeout=60)
    assert r.returncode == 0, r.stderr[-3000:]
    docs = [json.loads(s.split("KEY ", 1)[1]) for s in r.stdout.splitlines() if "KEY " in s]
    assert sorted(d["rank"] for d in docs) == [0, 1], r.stdout
    if "--insecure" in how:
        assert "warning: --insecure" in r.stderr
        assert all(d["insecure"] == "1" and not d["keyed"] and not d["path"] for d in docs)
        return
    assert len({d["path"] for d in docs}) == 1 and all(d["keyed"] for d in docs), docs
    assert docs[0]["modes"] == [0o600, 0o700] and "insecure" not in r.stderr
    assert not os.path.exists(os.path.dirname(docs[0]["path"]))  # removed with the run
