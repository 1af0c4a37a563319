"""Traces of device acts: host launch time and device time (from events) per act, and
``flowlaunch trace summary`` says whether a device actor is device- or host-bound."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

import actorflow as af
import actorflow.functional as F
from tests.gpu.conftest import EMULATED, emulated_only


def _traced_run(tmp_path, monkeypatch, latency_us: int, kernel_ms: float) -> dict:
    """A device chain traced to ``tmp_path``; returns ``trace summary --json``."""
    if latency_us:
        monkeypatch.setenv("ACTORFLOW_EMULATED_LATENCY_US", str(latency_us))
    place = af.placement("cuda", ranks=[0])
    with af.Job("traced", pieces=6) as job:
        x = af.random_input("x", (32, 32), seed=2, placement=place)
        w = af.variable("w", (32, 32), init="normal", seed=3, placement=place)
        h = F.tanh(x @ w)
        if kernel_ms:
            h = af.functional.relu(h)
        af.output("y", h)
    plan = af.compile(job, unit_per_task=True)
    if kernel_ms:  # a host-heavy kernel: the host sleeps while "launching" it
        t = next(t for t in plan.tasks for n in t.exec_sequence if n.kernel.op_type == "relu")
        node = next(n for n in t.exec_sequence if n.kernel.op_type == "relu")
        node.kernel.op_type, node.kernel.attrs = "sleep", {"ms": kernel_ms}
    trace = tmp_path / "trace"
    with af.Session(plan, timeout=30, trace=trace) as s:
        out = s.run_to_end()["y"]
    assert len(out) == 6 and np.isfinite(out[0]).all()
    r = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "trace", "summary",
                        str(trace), "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "trace", "summary",
                           str(trace)], capture_output=True, text=True, timeout=60).stdout
    doc = json.loads(r.stdout)
    doc["_text"] = text
    return doc


def _device_actors(doc: dict) -> dict[str, dict]:
    return {a["label"]: a["device"] for a in doc["actors"] if a.get("device")}


def test_device_acts_carry_launch_and_device_time(tmp_path, monkeypatch):
    doc = _traced_run(tmp_path, monkeypatch, 0, 0)
    dev = _device_actors(doc)
    assert dev, "no actor reported device timing"
    for d in dev.values():
        assert d["acts"] == 6  # one ACT_DEVICE per act of each device actor
        assert d["launch_us_per_act"] > 0 and d["device_us_per_act"] > 0
    assert "device actors (host launch vs device time, from events):" in doc["_text"]
    kinds = {a["kind"] for a in doc["actors"] if a.get("device")}
    assert {"copy_h2d", "copy_d2h", "normal"} <= kinds  # copies run on device streams too


@emulated_only
def test_summary_tells_device_busy_from_host_busy(tmp_path, monkeypatch):
    """A slow device (5 ms per queued item) -> device-bound; a host that sleeps 20 ms
    inside the act while the device is quick -> host-bound."""
    slow_device = _device_actors(_traced_run(tmp_path / "a", monkeypatch, 5000, 0))
    mm = next(d for label, d in slow_device.items() if "matmul" in label or "tanh" in label)
    assert mm["bound"] == "device" and mm["device_us_per_act"] > 4000
    assert mm["launch_us_per_act"] < mm["device_us_per_act"] / 2
    monkeypatch.delenv("ACTORFLOW_EMULATED_LATENCY_US")
    slow_host = _device_actors(_traced_run(tmp_path / "b", monkeypatch, 0, 20.0))
    sl = next(d for label, d in slow_host.items() if "relu" in label or "sleep" in label)
    assert sl["bound"] == "host" and sl["launch_us_per_act"] > 15000


def test_chrome_export_shows_device_time_on_act_slices(tmp_path, monkeypatch):
    _traced_run(tmp_path, monkeypatch, 0, 0)
    out = tmp_path / "t.json"
    r = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "trace", "export",
                        str(tmp_path / "trace"), "-o", str(out)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    events = json.loads(out.read_text())["traceEvents"]
    acts = [e for e in events if e.get("ph") == "X" and "device_us" in e.get("args", {})]
    assert acts and all(e["args"]["launch_us"] > 0 for e in acts)
    assert EMULATED or all(e["args"]["device_us"] > 0 for e in acts)
