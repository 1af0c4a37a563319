"""Eager instructions are recorded in the actors' trace format, a track per stream, so
``flowlaunch trace export|check|summary`` work on an eager program."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np

import actorflow as af
import actorflow.functional as F
from actorflow.launcher.cli import main
from tests.eager.test_dependencies import CPU, InstructionsBuilder


def test_af_trace_records_a_track_per_stream_for_the_trace_tools(tmp_path, capsys, vm):
    d = tmp_path / "tr"
    vm.fuse = False  # an act per op (fused chains: test_fused_chain_is_one_act_naming_each_op)
    with af.trace(d):
        x = af.randn(32, 32, seed=3)
        line = f"test_trace.py:{sys._getframe().f_lineno + 2}"
        for _ in range(4):
            x = F.relu(x @ x) * 0.05
        blob = vm.core.Blob((1,), "float64", CPU, np.zeros(1))
        b = InstructionsBuilder(vm)  # one instruction on a second stream
        b.call("test.side.step", CPU, "side", lambda host: None, [], [blob])
        b.submit()
        value = x.numpy()
    assert np.isfinite(value).all()
    assert main(["trace", "export", str(d), "-o", str(tmp_path / "t.json")]) == 0
    assert main(["trace", "check", str(tmp_path / "t.json")]) == 0
    doc = json.loads((tmp_path / "t.json").read_text())
    tracks = sorted(e["args"]["name"] for e in doc["traceEvents"] if e.get("name") ==
                    "thread_name")
    assert [t.split(" ", 2)[2] for t in tracks] == ["cpu.compute:0 [cpu.compute]",
                                                    "test.side:0 [test.side]"]
    slices = [e["name"] for e in doc["traceEvents"] if e["ph"] == "X"]
    assert slices.count(f"matmul @ {line}") == 4 and f"relu @ {line}" in slices
    assert "side" in slices and any(s.startswith("random_normal @ ") for s in slices)
    capsys.readouterr()
    assert main(["trace", "summary", str(d), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    acts = {a["label"]: a["acts"] for a in summary["actors"]}
    assert acts["test.side:0"] == 1 and acts["cpu.compute:0"] >= 13  # 1 + 4 * 3 ops
    assert summary["bottleneck"]["label"] == "cpu.compute:0"


def test_trace_by_environment_variable(tmp_path, scheduler):
    code = textwrap.dedent("""
        import actorflow as af
        x = af.ones(8) * 3.0
        print(x.numpy().sum())
    """)
    d = tmp_path / "env-tr"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={"ACTORFLOW_EAGER_TRACE": str(d), "PATH": "/usr/bin:/bin",
                            "ACTORFLOW_EAGER_SCHEDULER": scheduler})
    assert r.returncode == 0 and r.stdout.strip() == "24.0", r.stderr
    assert main(["trace", "export", str(d), "-o", str(tmp_path / "e.json")]) == 0
    names = [e["name"] for e in json.loads((tmp_path / "e.json").read_text())["traceEvents"]
             if e["ph"] == "X"]
    assert any(n.startswith("constant @ <string>:3") for n in names)
    assert any("scalar_mul @ <string>:3" in n for n in names)  # (maybe fused: "a + b")


def test_fused_chain_is_one_act_naming_each_op(tmp_path, vm):
    d = tmp_path / "fused"
    with af.trace(d):
        x = af.randn(64, 64, seed=1)
        af.sync()
        vm.stream("cpu.compute", 0).run_lock.acquire()  # hold the worker: the chain stays queued
        try:
            y = F.relu(x @ x)
            line = sys._getframe().f_lineno + 1
            z = (y * 2.0 + 1.0).exp()
        finally:
            vm.stream("cpu.compute", 0).run_lock.release()
        value = z.numpy()
    want = np.exp(np.maximum(x.numpy() @ x.numpy(), 0) * 2 + 1)
    np.testing.assert_allclose(value, want, rtol=1e-5)
    assert main(["trace", "export", str(d), "-o", str(tmp_path / "t.json")]) == 0
    slices = [e["name"] for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]
              if e["ph"] == "X"]
    ops = [f"relu @ test_trace.py:{line - 2}"] + [
        f"{op} @ test_trace.py:{line}" for op in ("scalar_mul", "scalar_add", "exp")]
    chain = [s for s in slices if s.startswith("matmul @ ")]
    if vm.fuse:
        assert len(chain) == 1 and chain[0].split(" + ")[1:] == ops, slices
    else:  # the thread scheduler never fuses
        assert chain == [f"matmul @ test_trace.py:{line - 2}"] and set(ops) <= set(slices)
