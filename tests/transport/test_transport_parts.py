"""The data-plane parts on their own: codec, actor routing, shm, node wiring.

(The Comm/Listener contract over every scheme is ``test_comm_contract.py``.)
"""

from __future__ import annotations

import socket

import msgpack
import numpy as np
import pytest

import actorflow as af
from actorflow.actors import unit_wire as uw
from actorflow.actors.node import MachineNode
from actorflow.actors.routing import Router, compose_address, split_address
from actorflow.errors import MalformedMessage, ProtocolError, RegistryError, TransportError
from actorflow.protocol.messages import ACK, READY, Msg
from actorflow.transport import Outbox, codec, listen
from actorflow.transport.registry import local_address
from actorflow.transport.shm import ShmArena, ShmAttach, list_run_segments


def test_tcp_port_zero_picks_a_free_port_and_busy_port_names_the_address():
    ln = listen("tcp://127.0.0.1:0")
    try:
        port = int(ln.address.rsplit(":", 1)[1])
        assert port > 0
        with pytest.raises(TransportError, match=f"cannot bind tcp://127.0.0.1:{port}"):
            listen(ln.address)
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # really listening
    finally:
        ln.close()
    with pytest.raises(TransportError, match="ipc path longer"):
        listen("ipc:///tmp/" + "x" * 200)


# -- codec ----------------------------------------------------------------------------
def test_codec_writes_into_preallocated_memory_and_checks_shapes():
    src = {"x": np.arange(12, dtype=np.int32).reshape(3, 4), "y": np.ones(2)}
    frames = codec.encode(uw.MSG, [0], list(src.items()))
    assert frames[1] is src["x"]  # no copy on the send side
    _, _, metas = codec.decode_head(frames[0])
    dst = {"x": np.zeros((3, 4), np.int32), "y": np.zeros(2)}
    keep = dst["x"]
    codec.copy_into(metas, [memoryview(f) for f in frames[1:]], dst, "desc 7")
    assert dst["x"] is keep
    np.testing.assert_array_equal(keep, src["x"])
    bad = {"x": np.zeros((4, 3), np.int32), "y": np.zeros(2)}
    with pytest.raises(TransportError, match=r"desc 7: blob 'x' arrived as \(3, 4\) int32"):
        codec.copy_into(metas, [memoryview(f) for f in frames[1:]], bad, "desc 7")


def test_codec_rejects_other_wire_versions_and_garbage():
    with pytest.raises(MalformedMessage, match="wire version 99"):
        codec.decode_head(msgpack.packb([99, 0, [], None]))
    with pytest.raises(MalformedMessage, match="undecodable message header"):
        codec.decode_head(b"\xc1garbage")


# -- routing --------------------------------------------------------------------------
def test_router_attaches_blobs_only_to_ready_leaving_the_machine():
    inbox = listen(local_address("inproc", "r"))
    addr = inbox.address
    mem = {5: [{"out": np.full(3, 7.0)}, {"out": np.full(3, 9.0)}]}
    out = Outbox("test")
    r = Router(0, {1: (0, 0), 2: (1, 0), 3: (0, 1)}, out, mem, {1: addr}, {(0, 1): addr})
    try:
        r.send(Msg(READY, 1, 2, 5, 1, 0))  # to machine 1: with data
        r.send(Msg(ACK, 1, 2, 5, 1, 0))  # ACK: no data
        r.send(Msg(READY, 1, 3, 5, 0, 0))  # same machine, other unit: slot only
        sizes = []
        for _ in range(3):
            m = inbox.recv(5.0)
            assert m is not None and m.kind == uw.MSG
            sizes.append(len(m.frames))
            if m.frames:
                np.testing.assert_array_equal(m.arrays()["out"], np.full(3, 9.0))
        assert sizes == [1, 0, 0]
        with pytest.raises(ProtocolError, match="no route to task 42"):
            r.send(Msg(ACK, 1, 42, 5, 0, 0))
        with pytest.raises(TransportError, match="no address for machine 2"):
            Router(0, {9: (2, 0)}, out, mem).send(Msg(ACK, 1, 9, 5, 0, 0))
    finally:
        out.close(0)
        inbox.close()


# -- shm ------------------------------------------------------------------------------
def test_shm_slots_are_shared_between_creator_and_attacher():
    blobs = {"a": ((5, 7), "float32"), "b": ((3,), "int64")}
    arena = ShmArena("unit1test", 0)
    try:
        slots = arena.create(3, 3, blobs)
        assert list_run_segments("unit1test") == ["actorflowunit1test_m0_d3"]
        other = ShmAttach("unit1test", 0).attach(3, 3, blobs)
        slots[2]["a"][...] = 4.5
        slots[1]["b"][...] = [1, 2, 3]
        np.testing.assert_array_equal(other[2]["a"], np.full((5, 7), 4.5, np.float32))
        np.testing.assert_array_equal(other[1]["b"], [1, 2, 3])
        assert not other[0]["a"].any()  # slots do not overlap
        with pytest.raises(TransportError, match="cannot create shared-memory segment"):
            arena.create(3, 3, blobs)  # exists already
    finally:
        arena.unlink()
    assert list_run_segments("unit1test") == []
    with pytest.raises(TransportError, match="cannot attach"):
        ShmAttach("unit1test", 0).attach(3, 3, blobs)


# -- node wiring errors -----------------------------------------------------------------
def test_node_errors_name_what_is_missing():
    b = af.PlanBuilder(machines=2)
    x = b.source("constant", {"shape": [2], "value": 1.0}, piece_num=1)
    b.output("y", b.op("relu", x, machine=1))
    plan = b.build()
    with pytest.raises(RegistryError, match="unknown unit kind 'fiber'; known: process, thread"):
        MachineNode(plan, 0, unit="fiber")
    node = MachineNode(plan, 0)
    try:
        with pytest.raises(TransportError, match=r"lacks addresses of machines \[1\]"):
            node.connect({0: "tcp://127.0.0.1:1"})
        with pytest.raises(TransportError, match="no task 99"):
            node.command(99, "start")
    finally:
        node.close()
    sub = plan.for_machine(1)
    sub.ctrl.pop("remote_descs")
    with pytest.raises(TransportError, match="ctrl\\['remote_descs'\\]"):
        MachineNode(sub, 1)


def test_machine_address_lists_unit_processes_that_receive_directly():
    assert split_address(compose_address("tcp://h:1", {2: "tcp://h:3", 0: "tcp://h:2"})) == (
        "tcp://h:1", {0: "tcp://h:2", 2: "tcp://h:3"})
    assert split_address("ipc:///tmp/a.ipc") == ("ipc:///tmp/a.ipc", {})
    with pytest.raises(TransportError, match="bad unit part 'x:tcp://h:2'"):
        split_address("tcp://h:1 x:tcp://h:2")
    b = af.PlanBuilder(machines=1)
    b.output("y", b.op("relu", b.source("constant", {"shape": [2]}, piece_num=1)))
    node = MachineNode(b.build(), 0, unit="process")
    try:
        node_addr, units = split_address(node.bind("127.0.0.1"))
        assert node_addr.startswith("tcp://127.0.0.1:")
        assert sorted(units) == [0, 1, 2] and len(set(units.values())) == 3
        assert all(a.startswith("tcp://127.0.0.1:") for a in units.values())
    finally:
        node.close()


