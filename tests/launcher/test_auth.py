"""A stranger without the run's key can neither connect, inject nor read (loopback).

Each case starts a real ``flowlaunch sim`` run (2 machines, thread or process units),
finds every TCP port its processes listen on (the master and each machine's data plane),
and attacks all of them while the run goes on: a ZeroMQ peer with no key or with its own
key asks the master for the output pieces and sends forged control and actor messages;
raw TCP bytes follow.  The run must still end with exit 0, every piece, the right numbers.
The ``--insecure`` control shows the same stranger *can* read a run that has no keys.
"""

from __future__ import annotations

import os
import re
import socket

import pytest
import zmq

from actorflow.protocol.messages import EORD, READY, Msg
from actorflow.transport import codec
from actorflow.transport.auth import ClusterKey, secure_client, secure_server, stop_zap
from tests.launcher.helpers import JOBS, tagged_pids
from tests.launcher.stranger import ask_for_results, ctrl, inject, listening, raw_bytes
from tests.launcher.test_failures import _wait_for_line

PACED = JOBS / "paced_sample.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _forged() -> list[list[bytes]]:
    ready = Msg(READY, 0, 1, 0, 0, 0, 0, 1).header()
    return [
        [ctrl("hb", rank=1, pieces=10**6)],            # keep a machine "alive"
        [ctrl("error", rank=1, message="forged")],     # end the run
        [ctrl("bye", rank=0)],
        [b"one", b"two", b"three"],                         # a 3-frame message
        codec.encode(0, ready),                     # a forged actor READY
        codec.encode(0, Msg(EORD, 0, 1, 0, 0, 0, 0, 2).header()),
        [os.urandom(8)],
    ]


@pytest.mark.parametrize("unit", ["thread", "process"])
def test_stranger_cannot_connect_inject_or_read(flowlaunch, unit):
    port = _free_port()
    tag, p = flowlaunch.start("sim", PACED, "--machines", 2, "--unit", unit,
                              "--master-port", port)
    _wait_for_line(p.stderr, "progress:", 30)
    where = listening(tagged_pids(tag))
    ports = {p for _ip, p in where}
    assert port in ports and len(ports) >= 3, ports  # the master + a data plane per machine
    assert {ip for ip, _p in where} == {"127.0.0.1"}, where  # the advertised interface only
    assert ask_for_results(port) == []  # no key: the master never answers
    assert ask_for_results(port, key=(ClusterKey.generate().public, b"")) == []  # own key
    for target in sorted(ports):
        for kind in (zmq.DEALER, zmq.PUSH):
            inject(target, _forged(), kind)
        raw_bytes(target, [os.urandom(8), b"\xff" * 64, os.urandom(4096)])
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err[-3000:]
    assert re.search(r"paced_sample: 60 pieces on 2 machines in [\d.]+s .*check: max "
                     r"\|actorflow - numpy\| = 0\.00e\+00 OK", out), out[-2000:]
    assert "ignored" not in out + err  # nothing of the stranger's reached a decoder


def test_insecure_run_is_readable_by_the_same_stranger(flowlaunch):
    """The control: with --insecure the stranger's "watch" gets the master's answers."""
    port = _free_port()
    _tag, p = flowlaunch.start("sim", PACED, "--machines", 2, "--master-port", port,
                              "--insecure")
    seen = _wait_for_line(p.stderr, "progress:", 30)
    got = ask_for_results(port)
    p.communicate(timeout=60)
    assert any(m.get("t") == "watching" for m in got), got
    assert p.returncode == 0 and any("warning: --insecure" in x for x in seen), seen


def test_curve_sockets_refuse_a_peer_without_the_key():
    """The transport level, both directions: no key, another key, the right key."""
    key = ClusterKey.generate()
    ctx = zmq.Context()
    srv = ctx.socket(zmq.PULL)
    try:
        secure_server(srv, key)
        port = srv.bind_to_random_port("tcp://127.0.0.1")
        for client_key, should_arrive in ((None, False), (ClusterKey.generate(), False),
                                          (key, True)):
            c = ctx.socket(zmq.PUSH)
            c.linger = 0
            if client_key is not None:
                secure_client(c, client_key)
            c.connect(f"tcp://127.0.0.1:{port}")
            try:
                c.send(b"hello", zmq.NOBLOCK)
            except zmq.Again:
                pass
            arrived = bool(srv.poll(1000)) and srv.recv() == b"hello"
            assert arrived == should_arrive, client_key
            c.close()
    finally:
        srv.close()
        stop_zap(ctx)
        ctx.term()


def test_key_file_readable_by_others_is_refused(tmp_path, flowlaunch):
    path = ClusterKey.generate().write(tmp_path / "k")
    path.chmod(0o644)
    r = flowlaunch.run("worker", "--rank", 1, "--world-size", 2, "--master", "127.0.0.1:9",
                       "--cluster-key", path, timeout=30)
    assert r.returncode == 1
    assert f"--cluster-key {path}: the file is accessible to group or others (mode 644)" \
        in r.stderr and "chmod 600" in r.stderr
    path.chmod(0o600)
    assert ClusterKey.read(path).public == ClusterKey.read(path).public


def test_worker_without_a_key_is_refused(flowlaunch):
    r = flowlaunch.run("worker", "--rank", 1, "--world-size", 2, "--master", "127.0.0.1:9",
                       env={"ACTORFLOW_CLUSTER_KEY": ""}, timeout=30)
    assert r.returncode == 1 and "this worker has no cluster key" in r.stderr, r.stderr


def test_flowlaunch_key_new_writes_a_private_file(tmp_path, flowlaunch):
    r = flowlaunch.run("key", "new", tmp_path / "c.key", timeout=30)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "c.key").stat().st_mode & 0o777 == 0o600
    assert len(ClusterKey.read(tmp_path / "c.key").secret) == 40
    r = flowlaunch.run("key", "new", tmp_path / "c.key", timeout=30)
    assert r.returncode == 1 and "never overwritten" in r.stderr
