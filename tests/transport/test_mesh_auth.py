"""The mesh's sockets under the run's key, at the transport level (real loopback sockets).

An authenticated mesh hears nothing from a peer without the key (nothing is decoded or
counted); a holder of the key who sends a malformed message gets a ``MalformedMessage``
naming the inbox and the peer.  Unauthenticated, the same messages are dropped, counted
and logged once per peer.  A mesh of one rank opens no socket.
"""

from __future__ import annotations

import pytest
import zmq

from actorflow.errors import MalformedMessage
from actorflow.transport import codec
from actorflow.transport.auth import ClusterKey, CurveSecurity, secure_client, stop_zap
from actorflow.transport.mesh import MESH, Mesh
from actorflow.transport.registry import context
from actorflow.transport.security import NO_SECURITY

GARBAGE = [[b"\xc1not msgpack"], codec.encode(MESH, [5, "x"]), codec.encode(MESH, "x")]


@pytest.fixture(scope="module", autouse=True)
def _zap_of_this_module():
    """The data context's ZAP handler, started by the first CURVE mesh here, is stopped once
    at the end (stopping and restarting it per test races on its inproc endpoint)."""
    yield
    stop_zap(context("data"))


@pytest.fixture
def key():
    return ClusterKey.generate()


def _send(address: str, frames_list: list[list[bytes]], key: ClusterKey | None) -> None:
    ctx = zmq.Context()
    s = ctx.socket(zmq.PUSH)
    s.linger = 1000
    if key is not None:
        secure_client(s, key)
    s.connect(address)
    for frames in frames_list:
        s.send_multipart(frames)
    s.close()
    ctx.term()


def test_an_authenticated_mesh_hears_nothing_from_a_peer_without_the_key(key):
    mesh = Mesh(0, 2, security=CurveSecurity(key))
    try:
        for stranger in (None, ClusterKey.generate()):  # no key, and a key of its own
            _send(mesh.address, [*GARBAGE, codec.encode(MESH, [1, ["0,1:barrier", 1, 0, None]])],
                  stranger)
        assert mesh.recv(0.5) is None and mesh.dropped == 0
        _send(mesh.address, [codec.encode(MESH, [1, ["0,1:barrier", 1, 0, None]])], key)
        got = mesh.recv(2.0)  # the same message with the key arrives
        assert got is not None and got[:2] == (1, ["0,1:barrier", 1, 0, None])
    finally:
        mesh.close()


def test_a_key_holders_malformed_message_is_an_error_naming_it(key):
    mesh = Mesh(0, 2, security=CurveSecurity(key))
    try:
        _send(mesh.address, [GARBAGE[0]], key)
        with pytest.raises(MalformedMessage, match=r"collective inbox of rank 0 \(tcp://127"
                                                   r".*\): malformed message from peer \? "
                                                   r"dropped \(.*undecodable"):
            mesh.recv(2.0)
    finally:
        mesh.close()


def test_without_authentication_malformed_messages_are_dropped_and_logged_once():
    mesh = Mesh(0, 2, security=NO_SECURITY)
    logged: list[str] = []
    mesh.log = logged.append
    try:
        _send(mesh.address, GARBAGE * 2, None)
        assert mesh.recv(0.5) is None
        assert mesh.dropped == 6 and mesh.dropped_by == {"?": 6}
        assert len(logged) == 1 and "malformed message from peer ? dropped" in logged[0]
    finally:
        mesh.close()


def test_a_mesh_of_one_rank_opens_no_socket():
    mesh = Mesh(0, 1)
    assert mesh.address == "" and mesh.recv(0.01) is None
    mesh.close()


def test_a_later_key_replaces_the_earlier_one_on_the_same_context(key):
    """One ZAP handler per context: a second key (a later run in this process) is admitted
    and the first one no longer is."""
    message = codec.encode(MESH, [1, ["0,1:barrier", 1, 0, None]])
    first = Mesh(0, 2, security=CurveSecurity(key))
    first.close()
    second_key = ClusterKey.generate()
    mesh = Mesh(0, 2, security=CurveSecurity(second_key))
    try:
        _send(mesh.address, [message], key)
        assert mesh.recv(0.5) is None
        _send(mesh.address, [message], second_key)
        assert mesh.recv(2.0) is not None
    finally:
        mesh.close()
