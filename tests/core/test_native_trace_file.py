"""A native unit writes its trace chunks to the trace file itself (``_core/tracewrite.h``).

The file must stay what ``TraceWriter`` writes and ``flowlaunch trace`` reads: each chunk the
msgpack map ``write_packed`` makes, byte for byte, appended whole next to the Python
writer's maps; the footer counts every word; a failed write is an error naming the file.
"""

from __future__ import annotations

import errno
import itertools
import os
import time

import msgpack
import pytest

import actorflow as af
from actorflow.actors.cores import available_cores
from actorflow.actors.native_trace import NativeTrace, tsc_usable
from actorflow.errors import TraceError
from actorflow.protocol.messages import CMD_NAMES
from actorflow.trace.merge import load_trace
from actorflow.trace.packed import decode_chunk
from actorflow.trace.recorder import Recorder
from tests.trace.plans import chain

pytestmark = pytest.mark.skipif("native" not in available_cores(),
                                reason="the compiled core is not built")


def copy_chain(pieces: int) -> af.Plan:
    """Every act a memcpy or a no-op: the native loop runs (and records) it all in C."""
    b = af.PlanBuilder(register_num=2)
    h = b.source("constant", {"shape": [3], "dtype": "float32"}, piece_num=pieces, thrd=0)
    h = b.op("identity", h, thrd=1)
    h = b.op("identity", h, thrd=1)
    b.num_pieces = pieces
    return b.build()


def run_traced(tmp_path, plan, pieces, monkeypatch, buffer_size=32):
    monkeypatch.setenv("ACTORFLOW_CORE", "native")
    rec = Recorder(plan, trace_dir=tmp_path, buffer_size=buffer_size)
    with af.Session(plan, recorder=rec) as s:
        s.run_to_end(pieces=pieces)
    rec.close()
    return rec


@pytest.mark.parametrize("tsc", ["1", "0"])
def test_native_units_write_the_maps_the_python_writer_writes(tmp_path, monkeypatch, tsc):
    monkeypatch.setenv("ACTORFLOW_TRACE_TSC", tsc)
    tsc_usable.cache_clear()
    t0 = time.perf_counter_ns()
    rec = run_traced(tmp_path, copy_chain(300), 300, monkeypatch)
    t1 = time.perf_counter_ns()
    tsc_usable.cache_clear()
    natives = [u for u in rec.units.values() if isinstance(u, NativeTrace)]
    assert natives, "no unit ran on the native loop"
    # stamped with the TSC where it is the kernel's clock, else clock_gettime: the same ns
    assert all(u.core.trace_tsc == (tsc == "1" and tsc_usable()) for u in natives)
    raw = (tmp_path / "machine-0.aftrace").read_bytes()
    objs = _unpack(raw)
    # the whole stream is canonical msgpack: packing what was read gives the same bytes
    assert b"".join(msgpack.packb(o, use_bin_type=True) for o in objs) == raw
    chunks = [o for o in objs if "packed" in o]
    keys = {tuple(u.key) for u in natives}
    native_chunks = [c for c in chunks if tuple(c["unit"]) in keys]
    assert len(native_chunks) > 10  # sealed every 32 events, written by the loop
    assert all(len(c["packed"]) <= (32 * 10 + 16) * 8 for c in chunks)
    assert objs[-1]["end"] and objs[-1]["words"] * 8 == sum(len(c["packed"]) for c in chunks)
    # one unit's chunks are in order: its event times never go back
    for key in keys:
        times = [r[1] for c in chunks if tuple(c["unit"]) == key
                 for r in decode_chunk(c["packed"], c["cmds"])]
        # strictly: the export nests a received message's slice in an act that ends at
        # the same time (two TSC stamps a few ticks apart once gave one time)
        assert all(a < b for a, b in itertools.pairwise(times)) and len(times) > 300
        assert t0 <= times[0] and times[-1] <= t1  # perf_counter_ns's clock, this run
    trace = load_trace(tmp_path)
    starts = [e for e in trace.events if getattr(e, "cmd", "") == "start"]
    assert [(e.cmd, e.payload) for e in starts][:1] == [("start", 300)]
    # every READY the source sent was received: nothing was lost between chunks
    assert all(s and r for s, r in trace.messages().values())


def _unpack(raw: bytes) -> list:
    u = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=0)
    u.feed(raw)
    return list(u)


@pytest.mark.parametrize("nwords", [0, 1, 31, 32, 8191, 8192])
def test_a_chunk_encodes_as_msgpack_packb_does(tmp_path, monkeypatch, nwords):
    rec = run_traced(tmp_path, copy_chain(4), 4, monkeypatch)
    core = next(u for u in rec.units.values() if isinstance(u, NativeTrace)).core
    key = next(u.key for u in rec.units.values() if isinstance(u, NativeTrace))
    data = bytes(range(256)) * (nwords * 8 // 256) + bytes(nwords * 8 % 256)
    ints = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**62, -1, -32, -33,
            -128, -129, -32768, -32769, -2**31, -2**31 - 1, -2**62]
    cmds = [[w, code, aux] for w, (code, aux) in enumerate(
        [(c, a) for c in (0, 1, 5, 9, -3) for a in ints])][: 3 + nwords % 200]
    named = [[w, CMD_NAMES[c] if 0 <= c < len(CMD_NAMES) else f"#{c}", None if a == -1 else a]
             for w, c, a in cmds]
    want = msgpack.packb({"unit": list(key), "packed": data, "cmds": named},
                         use_bin_type=True)
    assert core.encode_chunk(data, cmds) == want


def test_a_failed_write_is_an_error_naming_the_trace_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTORFLOW_CORE", "native")
    plan = copy_chain(400)
    rec = Recorder(plan, trace_dir=tmp_path, buffer_size=16)
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        with pytest.raises(TraceError, match=r"machine-0.aftrace: cannot write the trace of "
                                             r"unit \[0, 1\]: No space left"):
            with af.Session(plan, recorder=rec, timeout=60) as s:
                u = rec.units[(0, 1)]
                assert isinstance(u, NativeTrace)
                u.core.trace_to_file(full, 0, 1, CMD_NAMES)  # its file is now a full disk
                s.run_to_end(pieces=400)
    finally:
        os.close(full)
    assert u.core.trace_error == errno.ENOSPC


def test_python_units_and_native_units_share_one_file(tmp_path, monkeypatch):
    """The chain's relu/scale run Python kernels; its source a Python one too: every unit's
    chunks, native or not, land in one file that the trace tools read."""
    rec = run_traced(tmp_path, chain(pieces=40), 40, monkeypatch)
    raw = (tmp_path / "machine-0.aftrace").read_bytes()
    objs = _unpack(raw)
    assert b"".join(msgpack.packb(o, use_bin_type=True) for o in objs) == raw
    trace = load_trace(tmp_path)
    assert len(trace.events) > 40 * 10
    assert rec.units


def test_a_dump_reads_the_events_not_yet_written_in_ns(tmp_path, monkeypatch):
    """Rows for a flight dump come from the buffer being filled (TSC stamps turned into
    ns on a copy) and the chunk written last."""
    monkeypatch.setenv("ACTORFLOW_CORE", "native")
    plan = copy_chain(50)
    rec = Recorder(plan, trace_dir=tmp_path)  # 8192-event buffers: nothing sealed yet
    t0 = time.perf_counter_ns()
    with af.Session(plan, recorder=rec) as s:
        s.run_to_end(pieces=50)
        natives = [u for u in rec.units.values() if isinstance(u, NativeTrace)]
        rows = {u.key: u.rows() for u in natives}
        t1 = time.perf_counter_ns()
        assert all(u.core.trace_pending() > 0 for u in natives)
    rec.close()
    for rs in rows.values():
        times = [r[1] for r in rs]
        assert len(times) > 50 and times == sorted(times) and t0 <= times[0] <= times[-1] <= t1
    # the file holds the same events at the same times (interpolated between other anchors
    # when the TSC stamps: within a microsecond)
    chunks = [o for o in _unpack((tmp_path / "machine-0.aftrace").read_bytes()) if "packed" in o]
    for key, rs in rows.items():
        filed = [r for c in chunks if tuple(c["unit"]) == tuple(key)
                 for r in decode_chunk(c["packed"], c["cmds"])]
        assert [r[0] for r in filed] == [r[0] for r in rs]
        assert [r[2:] for r in filed] == [r[2:] for r in rs]
        assert max(abs(a[1] - b[1]) for a, b in zip(filed, rs)) < 1000
