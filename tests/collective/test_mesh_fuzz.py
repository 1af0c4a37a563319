"""A message fuzzer against every mesh inbox of a live SPMD run: 0 crashes, 0 hangs, 0 runs
that end with other numbers.

Malformed mesh messages (``mesh_fuzz.py``) go to every port the ranks of a
``flowlaunch --nproc-per-node 3`` all-reduce listen on.  Keyed (an authenticated peer,
holding the run's key file): the run either ends exactly right (what it sent was parked as
a message nobody waits for) or fails on every rank with an actorflow error, the first
naming the malformed message.  ``--insecure`` (anyone may send): the same, with the
undecodable ones dropped and logged once per peer.  Never a traceback, never a hang, never
exit 0 with a wrong number.
"""

from __future__ import annotations

import random
import re

import pytest
import zmq

from actorflow.launcher.ports import free_port
from actorflow.transport.auth import ClusterKey, secure_client
from tests.collective.mesh_fuzz import message
from tests.collective.spmd_run import TOTAL, N, rank_pids, results, run_key, start
from tests.launcher.stranger import listening

FAILED = re.compile(r"^\[rank \d\] FAILED rank \d: (MalformedMessage|CollectiveError|RankLost|"
                    r"WaitTimeout): ")


def _fuzz(ports: set[int], key: ClusterKey | None, seed: int, n: int) -> None:
    rng = random.Random(seed)
    ctx = zmq.Context()
    socks = []
    for port in sorted(ports):
        s = ctx.socket(zmq.PUSH)
        s.linger = 1000  # term() below gives the sends this long to go out
        s.sndtimeo = 200
        if key is not None:
            secure_client(s, key)
        s.connect(f"tcp://127.0.0.1:{port}")
        socks.append(s)
    try:
        for _ in range(n):
            for s in socks:
                try:
                    s.send_multipart(message(rng))
                except zmq.ZMQError:
                    pass
    finally:  # close() hands what is queued to the context; term() waits up to the linger
        for s in socks:
            s.close()
        ctx.term()


@pytest.mark.parametrize("keyed, seed", [(True, 11), (False, 12), (True, 13)])
def test_fuzzing_every_mesh_inbox_of_a_live_run(flowlaunch, keyed, seed, tmp_path):
    master = free_port("127.0.0.1")
    midway = tmp_path / "midway"  # the run waits midway until the fuzzing is done
    tag, p, lines = start(flowlaunch, master, *([] if keyed else ["--insecure"]),
                          mid_gate=str(midway))
    lines.wait("MIDWAY", N, 60)
    pids = rank_pids(tag)
    # one inbox per rank (the rendezvous is closing: the stranger tests attack it)
    ports = {port for _ip, port in listening(list(pids.values()))} - {master}
    assert len(ports) == N, ports
    _fuzz(ports, run_key(pids[0]) if keyed else None, seed, n=40)
    midway.touch()
    err = lines.rest(60)  # no hang: it ends either way
    out = "".join(lines.seen)
    assert "Traceback" not in out + err, (out + err)[-3000:]
    res = results(lines)
    for r, d in res.items():  # whoever reports a result reports exactly numpy's
        assert d["ok"] and d["total"] == TOTAL, (seed, r, d)
    if p.returncode == 0:
        assert sorted(res) == list(range(N)), out[-3000:]
    else:  # every rank that did not finish failed with a clear actorflow error
        failed = [s for s in lines.seen if " FAILED rank " in s]
        assert len(failed) + len(res) == N and all(FAILED.match(s) for s in failed), failed
        if keyed:
            assert any("MalformedMessage" in s or "CollectiveError" in s for s in failed)
    if not keyed:  # undecodable messages were dropped and logged once per peer
        assert "malformed message from peer" in out and "dropped" in out
