"""summary names the slow stage as the bottleneck and its upstream as blocked on output;
replay of a recorded run has no divergence, a tampered trace reports the first one."""

from __future__ import annotations

import msgpack
import pytest

import actorflow as af
from actorflow.trace.events import READY, RECV
from actorflow.trace.packed import decode_chunk
from tests.trace.plans import chain, flowlaunch, flowlaunch_json


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("slow")
    plan = chain(pieces=24, register_num=2, slow_ms=8.0)
    with af.Session(plan, trace=d) as s:
        s.run_to_end()
    return d, {t.label: t for t in plan.tasks}


def test_summary_names_the_slow_stage_and_upstream_blocked_on_output(slow_run):
    d, tasks = slow_run
    s = flowlaunch_json("trace", "summary", d)
    slow, up, src = tasks["slow"], tasks["up_relu"], tasks["src"]
    assert s["bottleneck"]["task_id"] == slow.task_id and s["bottleneck"]["busy_pct"] > 50
    actors = {a["task_id"]: a for a in s["actors"]}
    others = [a["busy_pct"] for a in s["actors"] if a["task_id"] != slow.task_id]
    assert s["bottleneck"]["busy_pct"] > 3 * max(others)
    for t in (up, src):  # upstream of the slow stage: mostly back-pressure
        assert t.task_id in s["blocked_on_output"]
        assert actors[t.task_id]["backpressure_pct"] > 50
    # the actor right upstream blames the slow stage's regst hold, by desc and consumer
    blame = actors[up.task_id]["backpressure_on"][0]
    assert blame["consumer"] == slow.task_id
    assert blame["regst_desc_id"] == next(iter(up.produced.values())).regst_desc_id
    # downstream starves, waiting for input from the slow stage
    down = actors[tasks["down_scale"].task_id]
    assert down["input_wait_pct"] > 50 and down["input_wait_on"][0]["producer"] == slow.task_id
    # throughput is bounded by the 8 ms stage; every piece got through
    th = s["throughput"]
    assert th["pieces"] == 24 and 40 < th["pieces_per_s"] < 125
    # links have p50 <= p99; the critical path of one piece goes through every stage
    assert all(0 <= link["p50_us"] <= link["p99_us"] for link in s["links"])
    path = [st["task"] for st in s["critical_path"]["steps"] if st["kind"] == "act"]
    assert path == [tasks[n].task_id for n in ("src", "up_relu", "slow", "down_scale", "y")]


def test_summary_table(slow_run):
    d, tasks = slow_run
    r = flowlaunch("trace", "summary", d)
    assert r.returncode == 0, r.stderr
    slow = tasks["slow"]
    assert f"bottleneck: task {slow.task_id} (slow)" in r.stdout
    assert f"held by task {slow.task_id} (slow)" in r.stdout
    assert "critical path of piece" in r.stdout and "p99 us" in r.stdout


def test_replay_every_actor_has_no_divergence(slow_run):
    d, tasks = slow_run
    res = flowlaunch_json("trace", "replay", d, "--all")
    assert len(res) == len(tasks) and all(r["ok"] for r in res)
    assert all(r["messages"] > 0 for r in res)
    r = flowlaunch("trace", "replay", d, "--actor", tasks["slow"].task_id)
    assert r.returncode == 0 and "no divergence" in r.stdout


def test_tampered_trace_reports_the_first_divergent_message(slow_run, tmp_path):
    d, tasks = slow_run
    for f in d.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    slow = tasks["slow"].task_id
    path = tmp_path / "machine-0.aftrace"
    objs = list(msgpack.Unpacker(open(path, "rb"), raw=False, strict_map_key=False))
    for o in objs:  # unpack the int64 words into plain rows (a form the loader also reads)
        if "packed" in o:
            o["rows"] = decode_chunk(o.pop("packed"), o.pop("cmds"))
    hits = [row for o in objs if "unit" in o for row in o["rows"]
            if row[0] == RECV and row[2] == READY and row[4] == slow]
    victim = hits[5]  # the 6th READY into the slow stage: claim it came in the other slot
    victim[6] = 1 - victim[6]
    path.write_bytes(b"".join(msgpack.packb(o, use_bin_type=True) for o in objs))
    r = flowlaunch("trace", "replay", tmp_path, "--actor", slow)
    assert r.returncode == 1
    assert "FIRST DIVERGENCE" in r.stdout
    culprit = r.stdout.split("divergent message:", 1)[1].splitlines()[0]
    assert "RECV READY" in culprit and "piece=5 seq=5" in culprit  # the tampered message
    assert "ACT_BEGIN" in r.stdout.split("FIRST DIVERGENCE", 1)[1]
    # actors not involved still replay cleanly
    r = flowlaunch("trace", "replay", tmp_path, "--actor", tasks["src"].task_id)
    assert r.returncode == 0


def test_replay_of_input_acc_repeat_kinds(tmp_path):
    import numpy as np

    b = af.PlanBuilder(register_num=2)
    x = b.input("x", (4,), "float32")
    b.output("y", b.repeat(b.acc(b.op("relu", x), 3), 2))
    with af.Session(b.build(), trace=tmp_path) as s:
        outs = [s.run({"x": np.full(4, i, np.float32)}) if i % 3 == 2 else
                s.feed({"x": np.full(4, i, np.float32)}) for i in range(6)]
        assert outs[2].tolist() == [3.0] * 4  # 0 + 1 + 2, the first group
        s.fetch()
    res = flowlaunch_json("trace", "replay", tmp_path, "--all")
    assert [r["label"] for r in res] == ["x", "relu1", "acc2", "repeat3", "y"]
    assert all(r["ok"] and r["messages"] > 0 for r in res)
