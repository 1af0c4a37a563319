"""libzmq driven from C (``_core/_zq``) on sockets made and keyed by ``transport/``.

Written once, run over ipc and tcp, with CURVE on and off: whole multipart messages both
ways between the C driver and the transport's own Comm/Listener (same codec), zero-copy
sends whose buffers are let go of, bounded waits that name the socket, the GIL released
while C waits (a CURVE handshake needs the Python ZAP thread meanwhile), signals, closed
sockets, oversized messages, a fork, and a load that names a missing symbol.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from actorflow.errors import CommClosed, MalformedMessage, TransportError, WaitTimeout
from actorflow.transport import codec, connect, listen
from actorflow.transport.auth import ClusterKey, CurveSecurity, stop_zap
from actorflow.transport.registry import context, libzmq_file, local_address
from actorflow.transport.security import NO_SECURITY

_zq = pytest.importorskip("actorflow._core._zq", reason="compiled core not built")
_zq.load(libzmq_file())


@pytest.fixture(scope="module", autouse=True)
def _zap_of_this_module():
    """The data context's ZAP handler (started by the first CURVE listener) stops once."""
    yield
    stop_zap(context("data"))


@pytest.fixture(scope="module")
def key():
    return ClusterKey.generate()


@pytest.fixture(params=[("ipc", False), ("ipc", True), ("tcp", False), ("tcp", True)],
                ids=["ipc", "ipc-curve", "tcp", "tcp-curve"])
def pair(request, key):
    """A "pull" listener and a "push" comm of the transport, CURVE-keyed or not."""
    scheme, curve = request.param
    security = CurveSecurity(key) if curve else NO_SECURITY
    ln = listen(local_address(scheme, "zq"), security=security)
    out = connect(ln.address, security=security)
    yield ln, out
    out.close()
    ln.close()


def c_side(endpoint, name=""):
    return _zq.ZqSocket(endpoint.handle, endpoint, name or endpoint.name)


def test_messages_from_c_decode_in_the_transport_and_back(pair):
    ln, out = pair
    tx, rx = c_side(out), c_side(ln)
    arrays = [("x", np.arange(3000, dtype=np.float32)), ("small", np.array([7, 8], np.int64))]
    for i in range(20):  # C sends, the transport's Listener decodes
        tx.send(codec.encode(5, {"i": i}, arrays), 10.0)
        m = ln.recv(10.0)
        assert (m.kind, m.body) == (5, {"i": i})
        got = m.arrays()
        np.testing.assert_array_equal(got["x"], arrays[0][1])
        np.testing.assert_array_equal(got["small"], arrays[1][1])
    for i in range(20):  # the transport's Comm sends, C receives whole messages
        out.send(6, [i, "y"], arrays[:1])
        frames = rx.recv(10.0)
        assert len(frames) == 2
        assert codec.decode_head(bytes(frames[0]))[:2] == (6, [i, "y"])
        np.testing.assert_array_equal(np.frombuffer(frames[1], np.float32), arrays[0][1])
    assert rx.try_recv() is None


def test_large_frames_go_without_a_copy_and_are_let_go_of(pair):
    ln, out = pair
    tx, rx = c_side(out), c_side(ln)
    big = np.arange(1 << 18, dtype=np.float64)  # 2 MiB
    tx.send([b"head", big], 10.0, zero_copy_min=4096)
    frames = rx.recv(10.0)
    assert [len(f) for f in frames] == [4, big.nbytes]
    np.testing.assert_array_equal(np.frombuffer(frames[1], np.float64), big)
    # once delivered, libzmq has let go of the sender's buffer (the wait is bounded by the
    # test's timeout; libzmq's I/O thread releases it right after writing it out)
    while _zq.zero_copy_in_flight():
        rx.wait(False, 0.01)


def test_a_receive_waits_a_bounded_time_naming_the_socket(pair):
    ln, _ = pair
    with pytest.raises(WaitTimeout, match=rf"waited 0.05 s for a message on listener "
                                          rf"{ln.address}"):
        c_side(ln).recv(0.05)
    assert not c_side(ln).wait(False, 0.01)


def test_a_send_with_no_room_waits_a_bounded_time():
    out = connect(local_address("ipc", "nobody"), queue=1)  # no listener: nothing drains it
    try:
        tx = c_side(out, "comm to nobody")
        with pytest.raises(WaitTimeout, match=r"to send on comm to nobody .*no peer"):
            for _ in range(10):
                tx.send([b"x"], 0.05)
    finally:
        out.close()


def test_the_gil_is_released_while_c_waits(pair):
    """The message is sent by a Python thread that can only run while C waits without the
    GIL; with the GIL held the receive would time out instead."""
    ln, out = pair
    started = threading.Event()

    def later():
        started.wait(10)
        out.send(1, "from a python thread")

    t = threading.Thread(target=later)
    t.start()
    rx = c_side(ln)
    started.set()
    try:
        frames = rx.recv(20.0)
    finally:
        t.join(20)
    assert codec.decode_head(bytes(frames[0]))[1] == "from a python thread"


def test_a_peer_without_the_key_is_refused_before_anything_is_decoded(key):
    ln = listen(local_address("tcp", "zq"), security=CurveSecurity(key))
    stranger = connect(ln.address, security=CurveSecurity(ClusterKey.generate()))
    friend = connect(ln.address, security=CurveSecurity(key))
    try:
        c_side(stranger).send([b"intruder"], 5.0)
        c_side(friend).send([b"friend"], 5.0)
        rx = c_side(ln)
        assert [bytes(f) for f in rx.recv(10.0)] == [b"friend"]
        with pytest.raises(WaitTimeout):
            rx.recv(0.2)
    finally:
        for e in (stranger, friend, ln):
            e.close()


def test_router_and_dealer_carry_the_peer_identity():
    ln = listen(local_address("ipc", "zq"), "router")
    out = connect(ln.address, "dealer")
    try:
        c_side(out).send([b"ask"], 5.0)
        peer, body = c_side(ln).recv(5.0)
        c_side(ln).send([bytes(peer), b"answer"], 5.0)
        assert [bytes(f) for f in c_side(out).recv(5.0)] == [b"answer"]
        assert bytes(body) == b"ask"
    finally:
        out.close()
        ln.close()


def test_oversized_and_odd_messages_are_refused(pair):
    ln, out = pair
    out.send_frames([b"a", b"b", b"c", b"d"])
    out.send(2, "next")
    rx = c_side(ln)
    with pytest.raises(MalformedMessage, match="more than 3 frames"):
        rx.recv(10.0, max_frames=3)
    assert codec.decode_head(bytes(rx.recv(10.0)[0]))[1] == "next"  # the rest was dropped
    with pytest.raises(TransportError, match="0 frames; expected 1 to"):
        c_side(out).send([], 1.0)
    with pytest.raises(TypeError):
        c_side(out).send([12], 1.0)


def test_a_closed_socket_is_refused_not_touched(pair):
    _ln, out = pair
    tx = c_side(out)
    out.close()
    with pytest.raises(CommClosed, match="is closed"):
        tx.send([b"x"], 1.0)
    with pytest.raises(CommClosed):
        c_side(out)


def test_a_socket_refuses_to_work_in_a_forked_child(pair):
    ln, out = pair
    tx = c_side(out)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            tx.send([b"x"], 0.1)
            said = "worked"
        except TransportError as e:
            said = str(e)
        os.write(w, said.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        said = f.read()
    os.waitpid(pid, 0)
    assert f"this is pid {pid}" in said and "do not cross a fork" in said
    tx.send([b"still mine"], 5.0)
    assert [bytes(f) for f in c_side(ln).recv(10.0)] == [b"still mine"]


_WAITER = textwrap.dedent("""
    import json, signal, sys
    # a process started with SIGINT ignored (a background job of a non-interactive shell,
    # as CI may run) inherits SIG_IGN: take Python's own handler back
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from actorflow.transport import listen
    from actorflow.transport.registry import libzmq_file, local_address
    from actorflow._core import _zq
    _zq.load(libzmq_file())
    ln = listen(local_address("ipc", "zqwait"))
    rx = _zq.ZqSocket(ln.handle, ln, ln.name)
    print(json.dumps({"ready": True}), flush=True)
    try:
        rx.recv(60.0)
    except KeyboardInterrupt:
        print(json.dumps({"interrupted": True}), flush=True)
        sys.exit(0)
    sys.exit(1)
""")


_POLL_SYSCALLS = {"x86_64": {"7", "271"}, "aarch64": {"73"}}.get(os.uname().machine, set())


def _until_polling(pid: int) -> None:
    """Wait (bounded by the test's timeout) until the main thread of ``pid`` sleeps in
    poll/ppoll, i.e. inside the C wait; where that cannot be read, just go on."""
    while _POLL_SYSCALLS:
        try:
            with open(f"/proc/{pid}/syscall") as f:
                if f.read().split(" ", 1)[0] in _POLL_SYSCALLS:
                    return
        except OSError:
            return
        time.sleep(0.005)


def test_ctrl_c_during_a_receive_raises_keyboard_interrupt():
    p = subprocess.Popen([sys.executable, "-c", _WAITER], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(p.stdout.readline()) == {"ready": True}
        _until_polling(p.pid)
        p.send_signal(signal.SIGINT)
        assert p.wait(30) == 0, p.stderr.read()
        assert json.loads(p.stdout.readline()) == {"interrupted": True}
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(30)
        p.stdout.close()
        p.stderr.close()


def test_a_load_without_libzmq_names_what_is_missing():
    code = textwrap.dedent("""
        from actorflow._core import _zq
        for path in ("libc.so.6", "/nonexistent/libzmq.so"):
            try:
                _zq.load(path)
            except ImportError as e:
                print(e)
        try:
            _zq.ZqSocket(1, None)
        except Exception as e:
            print(type(e).__name__, e)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout.splitlines()
    assert "libzmq symbol zmq_msg_init not found through libc.so.6" in out[0]
    assert "/nonexistent/libzmq.so is not loaded in this process" in out[1]
    assert out[2].startswith("TransportError") and "not loaded" in out[2]
