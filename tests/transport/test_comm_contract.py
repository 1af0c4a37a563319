"""The Comm/Listener contract, written once and run over every scheme (inproc, ipc, tcp).

Real ZeroMQ sockets; bad input is sent through the public Comm API itself (``send_head``
and ``send_frames`` put arbitrary bytes on the wire), so no test needs a raw socket.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from actorflow.errors import CommClosed, MalformedMessage, RegistryError, TransportError
from actorflow.transport import Limits, Outbox, Security, codec, connect, listen
from actorflow.transport.registry import local_address, tcp_address

SCHEMES = ["inproc", "ipc", "tcp"]


@pytest.fixture(params=SCHEMES)
def scheme(request):
    return request.param


@pytest.fixture
def inbox(scheme):
    ln = listen(local_address(scheme, "contract"), limits=Limits(max_frame_bytes=1 << 16,
                                                                 max_frames=3))
    yield ln
    ln.close()


def _recv(ln, timeout=5.0):
    m = ln.recv(timeout)
    assert m is not None, f"nothing arrived at {ln.address} within {timeout}s"
    return m


def test_header_and_frames_arrive_in_order_with_exact_arrays(inbox):
    out = connect(inbox.address)
    try:
        arrays = [("f", np.arange(12, dtype=np.float32).reshape(3, 4)),
                  ("i", np.array([-1, 2**40], np.int64)), ("u", np.zeros((0, 5), np.uint8))]
        frames = codec.encode(7, {"k": [1, 2]}, arrays)
        assert frames[1] is arrays[0][1]  # the send side does not copy arrays
        for i in range(50):
            if i % 10 == 0:
                out.send(7, {"k": [1, 2], "i": i}, arrays)
            else:
                out.send(3, [i, "x"])
        for i in range(50):
            m = _recv(inbox)
            if i % 10 == 0:
                assert (m.kind, m.body) == (7, {"k": [1, 2], "i": i})
                got = m.arrays()
                assert list(got) == ["f", "i", "u"]
                for name, a in arrays:
                    np.testing.assert_array_equal(got[name], a)
                    assert got[name].dtype == a.dtype
            else:
                assert (m.kind, m.body, m.metas, m.frames) == (3, [i, "x"], None, [])
    finally:
        out.close()


def test_blobs_land_in_preallocated_memory(inbox):
    out = connect(inbox.address)
    try:
        out.send(1, None, [("x", np.full((4, 4), 3.5))])
        dst = {"x": np.zeros((4, 4))}
        keep = dst["x"]
        _recv(inbox).copy_into(dst, "regst desc 9")
        assert dst["x"] is keep and (keep == 3.5).all()
        out.send(1, None, [("x", np.zeros(3))])
        with pytest.raises(TransportError, match=r"regst desc 9: blob 'x' arrived as \(3,\)"):
            _recv(inbox).copy_into(dst, "regst desc 9")
    finally:
        out.close()


def test_router_and_dealer_answer_requests(scheme):
    server = listen(local_address(scheme, "rpc"), "router")
    clients = [connect(server.address, "dealer") for _ in range(3)]
    try:
        for i, c in enumerate(clients):
            c.send(10, {"ask": i}, [("a", np.arange(i + 1))])
        for _ in clients:
            m = _recv(server)
            server.send(m.peer, 11, {"answer": m.body["ask"] * 10}, [("a", m.views()["a"] * 2)])
        for i, c in enumerate(clients):
            r = c.recv(5.0)
            assert r is not None and (r.kind, r.body) == (11, {"answer": i * 10})
            np.testing.assert_array_equal(r.arrays()["a"], np.arange(i + 1) * 2)
    finally:
        for c in clients:
            c.close()
        server.close()


def test_recv_times_out_with_none_and_push_cannot_receive(inbox):
    assert inbox.recv(0.05) is None
    out = connect(inbox.address)
    try:
        with pytest.raises(TransportError, match="'push' comm cannot receive"):
            out.recv(0.01)
        with pytest.raises(TransportError, match="'pull' listener cannot send"):
            inbox.send(b"x", 1, None)
    finally:
        out.close()


def test_limits_reject_with_the_reason_and_keep_the_stream_in_step(inbox):
    out = connect(inbox.address)
    try:
        out.send(1, "big", [("x", np.zeros(1 << 14, np.float64))])  # 128 KiB > 64 KiB
        out.send(1, "many", [(f"b{i}", np.zeros(1)) for i in range(4)])  # 4 > 3 frames
        out.send_head(b"\xc1 not msgpack")
        out.send_frames([codec.encode_head(1, "liar"), b"extra frame"])
        two = codec.encode(1, "short", [("a", np.zeros(1)), ("b", np.zeros(1))])
        out.send_frames(two[:2])  # the header lists two blobs, one frame follows
        out.send(2, "fine", [("x", np.ones(3))])
        reasons = [r"frame 1 of 131072 bytes exceeds the largest frame of 65536",
                   r"lists 4 blobs, more than the 3 frames", r"undecodable message header",
                   "liar",  # a header-only message is taken as it is ...
                   r"undecodable message header",  # ... and the stray frame after it refused
                   r"lists 2 blobs but 1 frames"]
        for why in reasons:
            if why == "liar":
                assert _recv(inbox).body == "liar"
                continue
            with pytest.raises(MalformedMessage, match=why) as e:
                inbox.recv(5.0)
            assert inbox.address in str(e.value)  # names where it arrived
        m = _recv(inbox)  # the stream is still at a message boundary
        assert m.body == "fine" and (m.arrays()["x"] == 1).all()
        assert inbox.rejected == len(reasons) - 1
    finally:
        out.close()


def test_other_wire_versions_are_rejected_by_name(inbox):
    import msgpack

    out = connect(inbox.address)
    try:
        out.send_head(msgpack.packb([99, 1, None, None]))
        with pytest.raises(MalformedMessage, match="wire version 99; this actorflow speaks 1"):
            inbox.recv(5.0)
    finally:
        out.close()


class _TaggingSecurity(Security):
    """Sets a socket option on each side, to show the hook runs on the real socket."""

    name = "tagging"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def configure_listener(self, sock) -> None:
        self.calls.append("listener")

    def configure_comm(self, sock) -> None:
        import zmq

        sock.setsockopt(zmq.ROUTING_ID, b"tagged-peer")
        self.calls.append("comm")


def test_security_hook_configures_every_socket_before_it_is_used(scheme):
    sec = _TaggingSecurity()
    server = listen(local_address(scheme, "sec"), "router", security=sec)
    client = connect(server.address, "dealer", security=sec)
    try:
        client.send(1, "hi")
        assert _recv(server).peer == b"tagged-peer"  # the option reached the wire
        assert sec.calls == ["listener", "comm"]
        assert server.security is sec and client.security is sec
    finally:
        client.close()
        server.close()


def test_closed_endpoints_say_so(inbox):
    out = connect(inbox.address)
    out.close()
    with pytest.raises(CommClosed, match="closed"):
        out.send(1, None)
    out.close()  # twice is fine


def test_unknown_patterns_and_schemes_list_the_known_ones():
    with pytest.raises(RegistryError, match="unknown listener pattern 'pub'; known: pull, "
                                            "router"):
        listen("inproc://x", "pub")
    with pytest.raises(TransportError, match=r"udp://x.*known: inproc://, ipc://, tcp://"):
        listen("udp://x")
    with pytest.raises(TransportError, match="expected tcp://HOST:PORT"):
        listen("tcp://nohostport")
    assert tcp_address("::1", 5) == "tcp://[::1]:5"


@pytest.mark.parametrize("scheme", ["ipc", "tcp"])
def test_outbox_keeps_each_senders_order_when_threads_share_a_comm(scheme):
    inbox = listen(local_address(scheme, "fifo"))
    out = Outbox("fifo")
    n, senders = 1500, 4

    def run(src: int) -> None:
        for i in range(n):
            out.send(inbox.address, 0, [src, i])

    threads = [threading.Thread(target=run, args=(s,), name=f"sender{s}") for s in range(senders)]
    try:
        for t in threads:
            t.start()
        seen = dict.fromkeys(range(senders), 0)
        for _ in range(n * senders):
            src, i = _recv(inbox).body
            assert i == seen[src], f"sender {src}: got {i}, expected {seen[src]}"
            seen[src] += 1
        assert seen == dict.fromkeys(range(senders), n)
        out.close(0)
        with pytest.raises(CommClosed, match="outbox closed"):
            out.send(inbox.address, 0, None)
    finally:
        for t in threads:
            t.join(10)
        out.close(0)
        inbox.close()
