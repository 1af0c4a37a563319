"""Traces of real multi-process runs (flowlaunch sim: one worker process per machine, tcp
between them): merged with the rendezvous clock offsets, exported, checked; the watchdog
and why-stuck across machines; offsets really applied."""

from __future__ import annotations

import json
import textwrap

import msgpack
import pytest

import actorflow as af
from actorflow.errors import KernelError
from actorflow.trace.check import check_chrome
from actorflow.trace.events import RECV, MsgEvent
from actorflow.trace.export import to_chrome
from actorflow.trace.merge import load_trace
from tests.trace.plans import ROOT, chain, flowlaunch, flowlaunch_json


def test_sim_three_machines_trace_merges_and_checks(tmp_path):
    d = tmp_path / "tr"
    r = flowlaunch("sim", ROOT / "examples" / "sample_pipeline.py", "--machines", 3,
                   "--trace", d, "--quiet", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in d.glob("*.aftrace")) == [
        "machine-0.aftrace", "machine-1.aftrace", "machine-2.aftrace"]
    trace = load_trace(d)
    # every worker recorded its rendezvous clock offset and error bound; all files closed
    assert sorted(trace.machines) == [0, 1, 2]
    assert all(c.complete and c.error_ns > 0 for c in trace.machines.values())
    # one timeline: no message received before it was sent beyond the clocks' error
    assert trace.causality_violations() == []
    msgs = trace.messages()
    cross = [(s, rv) for s, rv in msgs.values() if s and rv and s.machine != rv.machine]
    assert cross and all(s and rv for s, rv in msgs.values())
    # export + check through the CLI, and a flow for every recorded message
    out = tmp_path / "t.json"
    assert flowlaunch("trace", "export", d, "-o", out).returncode == 0
    res = flowlaunch_json("trace", "check", out)
    assert res["ok"] and res["processes"] == 3, res["problems"]
    recvd = [e for e in trace.events if isinstance(e, MsgEvent) and e.kind == RECV
             and e.src >= 0]
    assert res["flows"] == len(recvd)
    doc = json.loads(out.read_text())
    assert set(doc["otherData"]["actorflow"]["clock"]) == {"0", "1", "2"}
    # replay works on a multi-process trace too
    rep = flowlaunch_json("trace", "replay", d, "--all")
    assert len(rep) == 9 and all(x["ok"] for x in rep)


def test_offsets_are_applied(tmp_path):
    """Machine 1's clock runs 5 s ahead; its recorded offset (-5 s) puts it back."""
    with af.Session(chain(pieces=6, machines=2), trace=tmp_path) as s:
        s.run_to_end()
    before = load_trace(tmp_path)
    path = tmp_path / "machine-1.aftrace"
    objs = list(msgpack.Unpacker(open(path, "rb"), raw=False, strict_map_key=False))
    objs[0]["anchor_wall_ns"] += 5_000_000_000
    for o in (objs[0], objs[-1]):
        o["clock_offset_ns"] = -5_000_000_000
    path.write_bytes(b"".join(msgpack.packb(o, use_bin_type=True) for o in objs))
    after = load_trace(tmp_path)
    assert [e.t for e in after.events] == [e.t for e in before.events]
    assert after.causality_violations() == [] and check_chrome(to_chrome(after)).ok
    # without the offset, messages from machine 0 "arrive" 5 s before they were sent
    for o in (objs[0], objs[-1]):
        o["clock_offset_ns"] = 0
    path.write_bytes(b"".join(msgpack.packb(o, use_bin_type=True) for o in objs))
    skewed = load_trace(tmp_path)
    bad = skewed.causality_violations()
    assert bad and all("before it was sent" in b for b in bad)
    assert not check_chrome(to_chrome(skewed)).ok


STALL_JOB = textwrap.dedent('''
    import actorflow as af

    def build_plan(machines=2):
        b = af.PlanBuilder(machines=machines, register_num=1, name="stall")
        x = b.source("random_normal", {"shape": [4], "dtype": "float32", "seed": 1},
                     piece_num=6, name="src")
        h = b.op("relu", x, name="before")
        h = b.op("sleep", h, ms=20000.0, only_piece=2, machine=machines - 1, name="stuck")
        b.output("y", b.op("relu", h, machine=machines - 1, name="after"))
        return b.build()
''')


@pytest.mark.slow
@pytest.mark.parametrize("unit", ["thread", "process"])
def test_sim_watchdog_and_why_stuck_across_machines(tmp_path, unit):
    # with process units each worker asks its unit processes for their actors' states
    job = tmp_path / "stall_job.py"
    job.write_text(STALL_JOB)
    d = tmp_path / "tr"
    r = flowlaunch("sim", job, "--machines", 2, "--unit", unit, "--trace", d,
                   "--stall-timeout", "1", "--quiet", timeout=90)
    assert r.returncode != 0
    # machine 1 holds the root; machine 0 alone only sees a remote holder (task 3 lives on
    # machine 1).  Whichever watchdog speaks first, every rank dumps and the launcher blames
    # the machine that the merge of the dumps names, so the report does not depend on timing
    head = r.stderr[r.stderr.index("flowlaunch: run failed"):].splitlines()[0]
    assert head.startswith("flowlaunch: run failed: machine 1 (rank 1 on "), head
    assert ("stall (every machine's dump merged): root: task 2 (stuck) is inside its kernel "
            "on piece 2 [task 2 runs on machine 1, unit m1-t0, op sleep]") in head, head
    assert "task 1 (before) waits for a free regst of desc 1 held by task 3" not in head
    # why-stuck on the trace directory merges every machine's dump into one graph
    r = flowlaunch("trace", "why-stuck", d)
    assert r.returncode == 0, r.stderr
    assert sum(line.startswith("dump ") for line in r.stdout.splitlines()) == 2
    assert "root: task 2 (stuck) is inside its kernel on piece 2" in r.stdout
    assert ("task 1 (before) [running]: waits for a free regst of desc 1 held by task 3 "
            "(comm_net1->m1)") in r.stdout


def test_sim_process_units_trace_one_file_per_unit_process(tmp_path):
    d = tmp_path / "tr"
    r = flowlaunch("sim", ROOT / "examples" / "sample_pipeline.py", "--machines", 2,
                   "--unit", "process", "--trace", d, "--quiet", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    files = sorted(p.name for p in d.glob("*.aftrace"))
    assert len(files) == 9 and all(f.startswith(("machine-0-", "machine-1-")) for f in files)
    trace = load_trace(d)
    assert sorted(trace.machines) == [0, 1] and trace.causality_violations() == []
    assert all(s and rv for s, rv in trace.messages().values())
    doc = to_chrome(trace)
    res = check_chrome(doc)
    assert res.ok and res.tracks == 9, res.problems
    assert doc["otherData"]["actorflow"]["flows"] == len(trace.messages())


@pytest.mark.parametrize("unit", ["thread", "process"])
def test_cluster_session_traces_over_tcp(tmp_path, unit):
    from actorflow.session import ClusterSession

    plan = chain(pieces=6, machines=2)
    with ClusterSession(plan, unit=unit, trace=tmp_path) as s:
        out = s.run_to_end()["y"]
    assert len(out) == 6
    trace = load_trace(tmp_path)
    assert sorted(trace.machines) == [0, 1] and trace.causality_violations() == []
    msgs = trace.messages()
    assert msgs and all(s and r for s, r in msgs.values())
    assert any(s.machine != r.machine for s, r in msgs.values())
    res = check_chrome(to_chrome(trace))
    assert res.ok and res.flows == len(msgs), res.problems


def test_a_failing_process_unit_dumps_its_flight_ring(tmp_path, monkeypatch):
    from actorflow.session import ClusterSession
    from actorflow.trace.tracefile import load_dump

    monkeypatch.setenv("ACTORFLOW_DUMP_DIR", str(tmp_path))
    b = af.PlanBuilder(machines=1, name="failjob")
    x = b.source("random_normal", {"shape": [4], "dtype": "float32", "seed": 1}, piece_num=6,
                 name="src")
    b.output("y", b.op("fail", x, piece=3, name="boom"))
    with pytest.raises(KernelError, match="boom"):
        with ClusterSession(b.build(), unit="process", timeout=30) as s:
            s.run_to_end()
    dumps = [load_dump(p) for p in tmp_path.rglob("flight-failed-*-m0-t*.afdump")]
    assert len(dumps) == 1, list(tmp_path.rglob("*"))
    d = dumps[0]
    assert "injected failure on piece 3" in d["error"]
    boom = next(s for s in d["states"] if s["label"] == "boom")
    assert boom["inflight_pieces"] == [3]
    # the ring shows the READY of piece 3 that boom received (code RECV, type READY)
    assert any(r[0] == 1 and r[2] == 0 and r[4] == boom["task_id"] and r[7] == 3
               for u in d["units"] for r in u["rows"])
