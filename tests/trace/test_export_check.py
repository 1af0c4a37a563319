"""flowlaunch trace export / check: Perfetto JSON with a track per actor, act slices and a
flow for every recorded message; check catches each broken promise."""

from __future__ import annotations

import json

import pytest

import actorflow as af
from actorflow.trace.check import check_chrome
from actorflow.trace.events import RECV, MsgEvent
from actorflow.trace.export import to_chrome
from actorflow.trace.merge import load_trace
from tests.trace.plans import chain, flowlaunch


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    d = tmp_path_factory.mktemp("tr")
    plan = chain(pieces=10, machines=2, slow_ms=1.0)
    with af.Session(plan, trace=d) as s:
        s.run_to_end()
    return d, plan


def test_export_then_check_via_cli(traced, tmp_path):
    d, plan = traced
    out = tmp_path / "trace.json"
    r = flowlaunch("trace", "export", d, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "message flows" in r.stdout
    r = flowlaunch("trace", "check", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("trace check: OK")
    doc = json.loads(out.read_text())
    ev = doc["traceEvents"]
    # one process per machine, one named track per actor carrying its op name
    procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    assert procs == {1: "machine 0", 2: "machine 1"}
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    assert len(tracks) == len(plan.tasks)
    assert any("slow" in n and "sleep" in n for n in tracks.values())
    # act slices carry piece and regst slots
    acts = [e for e in ev if e["ph"] == "X" and e["cat"] == "act"]
    assert len(acts) == sum(1 for t in plan.tasks for _ in range(10))
    assert all("piece" in a["args"] and "writes" in a["args"] for a in acts)


def test_a_flow_for_every_recorded_message(traced):
    d, _ = traced
    trace = load_trace(d)
    doc = to_chrome(trace)
    recvd = [e for e in trace.events if isinstance(e, MsgEvent) and e.kind == RECV
             and e.src >= 0]
    starts = [e for e in doc["traceEvents"] if e["ph"] == "s"]
    finishes = [e for e in doc["traceEvents"] if e["ph"] == "f"]
    assert len(starts) == len(finishes) == len(recvd)
    assert sorted(s["args"]["msg_id"] for s in starts) == sorted(e.msg_id for e in recvd)
    assert {s["name"] for s in starts} == {"READY", "ACK", "EORD"}
    assert len({s["id"] for s in starts}) == len(starts)
    assert check_chrome(doc).ok


def _doc(traced):
    return to_chrome(load_trace(traced[0]))


def test_check_reports_a_flow_without_finish(traced):
    doc = _doc(traced)
    i = next(i for i, e in enumerate(doc["traceEvents"]) if e["ph"] == "f")
    fid = doc["traceEvents"].pop(i)["id"]
    res = check_chrome(doc)
    assert not res.ok and any(f"flow {fid} " in p and "0 finishes" in p for p in res.problems)


def test_check_reports_a_flow_start_outside_every_slice(traced):
    doc = _doc(traced)
    s = next(e for e in doc["traceEvents"] if e["ph"] == "s")
    s["ts"] = -1000.0
    res = check_chrome(doc)
    assert any("outside every slice" in p for p in res.problems)


def test_check_reports_unnamed_tracks_duplicate_ids_and_time_travel(traced, tmp_path):
    doc = _doc(traced)
    ev = doc["traceEvents"]
    doc["traceEvents"] = [e for e in ev if e.get("name") != "thread_name" or e["tid"] != 1]
    starts = [e for e in doc["traceEvents"] if e["ph"] == "s"]
    starts[1]["id"] = starts[0]["id"]
    fin = next(e for e in doc["traceEvents"] if e["ph"] == "f" and e["id"] == starts[2]["id"])
    fin["ts"] = starts[2]["ts"] - 500.0
    res = check_chrome(doc)
    text = "\n".join(res.problems)
    assert "tid=1 has slices but no thread_name" in text
    assert "starts twice" in text
    assert "before it was sent" in text
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    r = flowlaunch("trace", "check", bad)
    assert r.returncode == 1 and "problem(s)" in r.stdout


def test_check_rejects_non_trace_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("[1, 2]")
    r = flowlaunch("trace", "check", p)
    assert r.returncode == 1 and "not a Chrome trace" in r.stderr
