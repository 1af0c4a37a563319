"""Collectives give numpy's answer on every rank, for every size path, and fail clearly.

Ranks run as threads over real loopback sockets (``ranks.run_ranks``).  Tiny
``small_bytes``/``chunk_bytes`` push small tensors through the ring with many chunks, so
the pipelined path is exercised without megabytes of data.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actorflow.errors import CollectiveError, RankLost, RegistryError, WaitTimeout
from actorflow.sbp_geometry import split_bounds
from actorflow.transport.codec import encode, encode_head
from actorflow.transport.mesh import MESH
from actorflow.transport.registry import context
from tests.collective.ranks import run_ranks

# everything above 16 bytes takes the ring (in chunks of 24 bytes), or shared memory
RING = {"small_bytes": 16, "chunk_bytes": 24, "shared_memory": False}
SHM = {"small_bytes": 16, "shared_memory": True}
OPS = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def _data(r: int, shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed * 31 + r)
    return (rng.integers(-5, 6, size=shape)).astype(dtype)


shapes = st.lists(st.integers(0, 6), min_size=0, max_size=3).map(tuple)
paths = st.sampled_from([RING, SHM, {}])  # ring, shared memory, or the defaults (direct)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 4), shape=shapes, dtype=st.sampled_from(["float64", "int32", "float32"]),
       op=st.sampled_from(sorted(OPS)), seed=st.integers(0, 1000), path=paths)
def test_all_reduce_and_reduce_scatter_match_numpy(n, shape, dtype, op, seed, path):
    xs = [_data(r, shape, dtype, seed) for r in range(n)]
    want = xs[0].copy()
    for x in xs[1:]:
        OPS[op](want, x, out=want)
    axis = len(shape) - 1 if shape else None

    def body(g):
        x = xs[g.rank]
        before = x.copy()
        out = {"ar": g.all_reduce(x, op)}
        into = np.empty_like(x)
        assert g.all_reduce(x, op, out=into) is into
        assert np.array_equal(into, out["ar"])
        if axis is not None:
            out["rs"] = g.reduce_scatter(x, op, axis=axis)
        assert np.array_equal(x, before)  # inputs are never changed
        return out

    res = run_ranks(n, body, **path)
    for r, got in enumerate(res):
        assert got["ar"].dtype == want.dtype and got["ar"].shape == want.shape
        np.testing.assert_allclose(got["ar"], want, rtol=1e-5)
        assert np.array_equal(got["ar"], res[0]["ar"])  # bit-identical on every rank
        if axis is not None:
            k = shape[axis]
            sl = [slice(None)] * len(shape)
            b = split_bounds(k, n)  # OneFlow's rule: extra rows to the first ranks
            sl[axis] = slice(b[r], b[r + 1])
            np.testing.assert_allclose(got["rs"], want[tuple(sl)], rtol=1e-5)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 4), rows=st.lists(st.integers(0, 5), min_size=4, max_size=4),
       tail=st.lists(st.integers(1, 3), max_size=2).map(tuple), axis=st.integers(0, 2),
       root=st.integers(0, 3), path=paths)
def test_all_gather_uneven_broadcast_and_all_to_all(n, rows, tail, axis, root, path):
    axis = min(axis, len(tail))
    root %= n

    def piece(r):
        shape = list(tail)
        shape.insert(axis, rows[r])
        return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 100 * r

    def body(g):
        r = g.rank
        gathered = g.all_gather(piece(r), axis=axis)
        bc = g.broadcast(piece(root) if r == root else None, root=root)
        a2a = g.all_to_all([np.full((r + j) % 3, 10 * r + j, np.int64) for j in range(n)])
        return gathered, bc, a2a

    for r, (gathered, bc, a2a) in enumerate(run_ranks(n, body, **path)):
        assert np.array_equal(gathered, np.concatenate([piece(p) for p in range(n)], axis=axis))
        assert np.array_equal(bc, piece(root))
        for j in range(n):
            assert np.array_equal(a2a[j], np.full((j + r) % 3, 10 * j + r, np.int64))


def test_large_all_reduce_takes_many_pipelined_chunks():
    x = np.arange(300_000, dtype=np.float32)
    res = run_ranks(3, lambda g: g.all_reduce(x * (g.rank + 1)), chunk_bytes=64 * 1024,
                    shared_memory=False)
    for got in res:
        np.testing.assert_array_equal(got, x * 6)


@pytest.mark.parametrize("path", [RING, SHM, {}])
def test_in_place_all_reduce(path):
    def body(g):
        x = np.full(5000, g.rank + 1.0)
        y = g.all_reduce(x, out=x)
        return y is x, x

    for same, x in run_ranks(3, body, **path):
        assert same and np.all(x == 6.0)


def test_barrier_waits_for_the_last_rank():
    """Rank 2 arrives only after ranks 0 and 1 are on their way into the barrier; nobody
    leaves before all three arrived (counted under a lock, no clock)."""
    lock = threading.Lock()
    arrived: list[int] = []
    seen_on_leaving: dict[int, int] = {}
    others_in = threading.Barrier(2)  # ranks 0 and 1 only, outside the process group
    last_may_go = threading.Event()

    def body(g):
        if g.rank < 2:
            with lock:
                arrived.append(g.rank)
            if others_in.wait(20) == 0:
                last_may_go.set()
        else:
            assert last_may_go.wait(20)
            with lock:
                arrived.append(g.rank)
        g.barrier()
        with lock:
            seen_on_leaving[g.rank] = len(arrived)
        g.barrier()  # a second one in a row matches up too

    run_ranks(3, body)
    assert arrived[-1] == 2
    assert seen_on_leaving == {0: 3, 1: 3, 2: 3}  # every rank left after all had arrived


def test_different_shapes_on_two_ranks_name_them():
    def body(g):
        return g.all_reduce(np.ones(40 if g.rank == 1 else 50), "sum")

    with pytest.raises(AssertionError) as e:
        run_ranks(2, body, join_timeout=5, small_bytes=16, shared_memory=False)
    assert isinstance(e.value.__cause__, CollectiveError)
    assert "rank 1" in str(e.value) and "rank 0" in str(e.value)


@pytest.mark.parametrize("call", ["sizes", "ops"])
def test_ranks_that_call_different_collectives_fail_at_once_naming_both(call):
    def body(g):
        with pytest.raises(CollectiveError) as e:
            if call == "sizes":  # 80 bytes go direct, 8 MB through the ring: different paths
                g.all_reduce(np.ones(10 if g.rank == 0 else 1_000_000))
            elif g.rank == 0:
                g.all_reduce(np.ones(10))
            else:
                g.barrier()
        return str(e.value)

    # a 60 s timeout: only the mismatch, found at once, ends it within run_ranks's 20 s join
    res = run_ranks(2, body, timeout=60, shared_memory=False)
    for msg in res:
        assert "the ranks must call the same collectives in the same order" in msg
    assert "rank 1 called" in res[0] and "rank 0 called" in res[1]


def test_unknown_reduce_op_lists_the_known_ones():
    with pytest.raises(AssertionError) as e:
        run_ranks(1, lambda g: g.all_reduce(np.ones(2), "mean"))
    assert isinstance(e.value.__cause__, RegistryError)
    assert "known: max, min, prod, sum" in str(e.value)


def test_a_rank_that_never_comes_times_out_naming_it():
    def body(g):
        if g.rank == 1:
            return None
        with pytest.raises(WaitTimeout) as e:
            g.all_reduce(np.ones(4))
        return str(e.value)

    msg = run_ranks(2, body, timeout=0.5)[0]
    assert "rank 0 waited too long in all_reduce[direct] #1" in msg
    assert "for a message from rank 1" in msg


def test_a_rank_that_leaves_fails_the_waiting_rank_at_once():
    def body(g):
        if g.rank == 1:
            g.channel.mesh.goodbye()
            return None
        with pytest.raises(RankLost) as e:
            g.all_gather(np.ones(3))
        return e.value.rank, str(e.value)

    # a 60 s timeout: only the goodbye, noticed at once, ends it within run_ranks's 20 s join
    rank, msg = run_ranks(2, body, timeout=60)[0]
    assert rank == 1 and "rank 1 left the process group" in msg


def test_malformed_messages_are_dropped_and_counted():
    def body(g):
        if g.rank == 0:
            stranger = context().socket(zmq.PUSH)
            stranger.linger = 2000  # close() below delivers the junk first
            stranger.connect(g.channel.mesh.address)
            for junk in ([b"\xc1not msgpack"], [b"\x93\x07\x01\x02"],
                         [encode_head(MESH, [9, ["0,1", 1, 0, None]])]):
                stranger.send_multipart(junk)
            stranger.close()
        out = g.all_reduce(np.full(3, g.rank + 1.0))
        mesh = g.channel.mesh
        deadline = time.monotonic() + 20  # junk that came after the op is read here
        while g.rank == 0 and mesh.dropped < 3 and time.monotonic() < deadline:
            assert mesh.recv(0.05) is None  # nothing well-formed is due any more
        return out, mesh.dropped

    res = run_ranks(2, body)
    assert np.array_equal(res[0][0], np.full(3, 3.0))
    assert res[0][1] == 3  # wrong framing, wrong version, sender rank out of range


@pytest.mark.parametrize("op, forged, needle", [
    # a ring chunk (reduce-scatter, step 0, chunk 0) of 5 bytes where 3 float64 are due
    ("all_reduce", ["0,1:all_reduce[ring]", 1, 0, ["<f8", 6]], "rank 1 sent a chunk of 1 "
     "frames and 5 bytes where rank 0 expects one frame of 3 x float64 (24 bytes)"),
    # a broadcast's first chunk from rank 1, 5 bytes for a 3 x float64 tensor
    ("broadcast", ["0,1:broadcast", 1, 0, ["<f8", [3]]], "rank 1 sent a chunk of 1 frames "
     "and 5 bytes where rank 0 expects one frame of 3 x float64 (24 bytes)"),
    # an all-gather's size exchange that is no [dtype, shape]
    ("all_gather", ["0,1:all_gather", 1, 0, "junk"], "rank 1 sent 'junk' where a [dtype, "
     "shape] of 1 dims is due"),
])
def test_a_malformed_part_from_a_rank_is_an_error_naming_it(op, forged, needle):
    """A well-framed message whose contents break the operation (what only a rank holding
    the run's key could send, or a bug) fails the receiving rank with a CollectiveError,
    never a numpy exception; the other rank ends either way (done, or within the timeout)."""
    def call(g):
        if op == "all_reduce":
            return g.all_reduce(np.arange(6.0))
        if op == "all_gather":
            return g.all_gather(np.arange(3.0))
        return g.broadcast(np.arange(3.0) if g.rank == 1 else None, root=1)

    rank0_failed = threading.Event()

    def body(g):
        if g.rank == 0:
            sender = context().socket(zmq.PUSH)
            sender.linger = 2000
            sender.connect(g.channel.mesh.address)
            sender.send_multipart(encode(MESH, [1, forged], [("", np.arange(5, dtype=np.uint8))]))
            sender.close()
            try:
                with pytest.raises(CollectiveError) as e:
                    call(g)  # the forgery is the only part "from rank 1" that can come
            finally:
                rank0_failed.set()
            return str(e.value)
        assert rank0_failed.wait(20)  # rank 1's real part goes out only now
        try:
            return call(g)
        except (CollectiveError, WaitTimeout) as e:
            return e

    got = run_ranks(2, body, timeout=2.0, **RING)
    assert needle in got[0], got[0]


def test_small_reduce_scatter_of_different_shapes_is_named_not_broadcast():
    """Rank 0 passes (4, 2), rank 1 (2, 2): rank 1's (1, 2) part would broadcast into rank
    0's (2, 2) without a word; both ranks fail naming the other instead."""
    def body(g):
        with pytest.raises(CollectiveError) as e:
            g.reduce_scatter(np.ones((4 if g.rank == 0 else 2, 2)))
        return str(e.value)

    msgs = run_ranks(2, body)
    assert "rank 1 sent (1, 2) float64 for rank 0's part, which is (2, 2) float64" in msgs[0]
    assert "rank 0 sent (2, 2) float64 for rank 1's part, which is (1, 2) float64" in msgs[1]


def test_messages_of_finished_ops_are_dropped_not_kept():
    """A stray sender's messages for ops this rank has finished, or for parts nobody waits
    for, do not pile up: older ops' messages are dropped on arrival or when the group moves
    on, and counted."""
    def body(g):
        first = g.all_reduce(np.full(3, g.rank + 1.0))  # op 1
        if g.rank == 1:  # rank 1's own connection: FIFO, so all of it comes before op 2's part
            for i in range(100):
                g.channel.mesh.send(0, ["0,1:all_reduce[direct]", 1, 0, i])
                g.channel.mesh.send(0, ["0,1:all_reduce[direct]", 2, 99 + i, i])
        second = g.all_reduce(np.full(3, 2.0 * (g.rank + 1)))  # op 2: op 1's are stale
        third = g.all_reduce(np.full(3, 3.0 * (g.rank + 1)))  # op 3: op 2's parts 99.. too
        return first, second, third, len(g.channel._early), g.channel.stale

    res = run_ranks(2, body)
    for first, second, third, _early, _stale in res:
        assert np.all(first == 3.0) and np.all(second == 6.0) and np.all(third == 9.0)
    assert res[0][3:] == (0, 200), res[0][3:]


def test_shared_memory_path_grows_its_buffers_and_checks_shapes():
    """One host: large calls go through shared buffers that grow with the largest call;
    a rank with another shape is named before any byte is read."""
    def body(g):
        assert g.shared
        outs = [g.all_reduce(np.full(n, g.rank + 1.0)) for n in (10_000, 300_000, 20_000)]
        gathered = g.all_gather(np.full((g.rank + 1) * 50_000, g.rank, np.int32))
        rs = g.reduce_scatter(np.ones((300_001, 2)) * (g.rank + 1))
        with pytest.raises(CollectiveError, match="different tensors"):
            g.all_reduce(np.ones(20_000 + 8 * g.rank))
        return outs, gathered, rs, g._arena.capacity

    for r, (outs, gathered, rs, cap) in enumerate(run_ranks(3, body)):
        assert [o.size for o in outs] == [10_000, 300_000, 20_000]
        assert all(np.all(o == 6.0) for o in outs)
        assert np.array_equal(gathered, np.concatenate(
            [np.full((p + 1) * 50_000, p, np.int32) for p in range(3)]))
        assert rs.shape == (100_000 + (r == 0), 2) and np.all(rs == 6.0)  # extra row: first
        assert cap == 8 << 20  # 300_001 x 2 float64 = 4.8 MB -> the next power of two
