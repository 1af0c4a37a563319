"""Every example with a cuda placement runs on the device and matches numpy.

(The three ``build_job`` examples through the compiler; ``sample_pipeline``, a hand-built
PlanBuilder plan, with ``device=0`` on its ops.)

Through the public API (``af.compile`` + ``Session``, ``ClusterSession`` with process units,
``flowlaunch sim``), on 1-2 machines x 1-2 devices: the compiler inserts copy_h2d/copy_d2h
tasks, the copy units copy from/to pinned host regsts on their own streams, every compute
unit has its own stream, and READY/ACK wait for each act's event.  On the emulated device a
slow copy engine (``ACTORFLOW_EMULATED_LATENCY_US``) makes a runtime that did not wait for
events read stale regsts; the numbers still match.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import DeviceError, KernelError
from actorflow.kernels.ops._infer import same
from actorflow.kernels.registry import OpDef, register_op
from actorflow.session import ClusterSession
from tests.gpu.conftest import emulated_only

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
import matmul_model_parallel  # noqa: E402
import mlp_data_parallel  # noqa: E402
import pipeline_4_stages  # noqa: E402
import sample_pipeline  # noqa: E402

MODULES = {m.__name__: m for m in (mlp_data_parallel, matmul_model_parallel,
                                    pipeline_4_stages)}
TOL = 1e-4
CLUSTERS = [(1, 1), (2, 1), (1, 2), (2, 2)]


def compile_example(name: str, machines: int, dpm: int) -> af.Plan:
    job = MODULES[name].build_job(machines, "cuda", dpm)
    return af.compile(job, machines=machines, devices_per_machine=dpm)


@pytest.mark.parametrize("machines,dpm", CLUSTERS, ids=lambda v: str(v))
@pytest.mark.parametrize("name", sorted(MODULES))
def test_example_on_device_with_thread_units(name, machines, dpm):
    plan = compile_example(name, machines, dpm)
    kinds = {t.task_type for t in plan.tasks}
    assert {"copy_h2d", "copy_d2h"} <= kinds  # the compiler moved data to and from devices
    assert any(d.mem_case.startswith("cuda:") for t in plan.tasks for d in t.produced.values())
    with af.Session(plan, timeout=30) as s:
        out = s.run_to_end()["y"]
    assert len(out) == MODULES[name].PIECES
    assert MODULES[name].check(out) < TOL


@pytest.mark.parametrize("machines", [1, 3])
def test_hand_built_sample_pipeline_on_device(machines):
    """PlanBuilder ops with device=0: the builder adds the copies, as the compiler does."""
    plan = sample_pipeline.build_plan(machines, device="cuda")
    assert {"copy_h2d", "copy_d2h"} <= {t.task_type for t in plan.tasks}
    with af.Session(plan, timeout=30) as s:
        out = s.run_to_end()["colsum"]
    assert len(out) == sample_pipeline.PIECES and sample_pipeline.check(out) < 1e-5
    with ClusterSession(plan, unit="process", scheme="tcp" if machines > 1 else "ipc",
                        timeout=30) as s:
        assert sample_pipeline.check(s.run_to_end()["colsum"]) < 1e-5


@pytest.mark.parametrize("machines,dpm,scheme", [(1, 2, "ipc"), (2, 1, "tcp")])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_example_on_device_with_process_units(name, machines, dpm, scheme):
    """Device regsts shared between the unit processes of a machine; between machines
    device -> pinned host -> tcp frames -> pinned host -> device."""
    plan = compile_example(name, machines, dpm)
    with ClusterSession(plan, unit="process", scheme=scheme, timeout=30) as s:
        out = s.run_to_end()["y"]
    assert MODULES[name].check(out) < TOL


@emulated_only
def test_a_slow_copy_engine_does_not_change_the_numbers(monkeypatch):
    """Copies finish 2 ms after they are issued; READY must wait for each act's event."""
    monkeypatch.setenv("ACTORFLOW_EMULATED_LATENCY_US", "2000")
    plan = compile_example("mlp_data_parallel", 2, 2)
    with af.Session(plan, timeout=30) as s:
        out = s.run_to_end()["y"]
    assert mlp_data_parallel.check(out) < TOL


@emulated_only
def test_deferred_cpu_and_device_streams_together(monkeypatch):
    monkeypatch.setenv("ACTORFLOW_CPU_STREAM", "deferred")
    plan = compile_example("pipeline_4_stages", 2, 2)
    with af.Session(plan, timeout=30) as s:
        out = s.run_to_end()["y"]
    assert pipeline_4_stages.check(out) < TOL


def _implicit_kernel(ctx, ins, outs, attrs):
    host = np.asarray(ins["in"])  # the bug class: a device array used as a host array
    outs["out"][...] = host


register_op(OpDef("test_implicit_host_read", ("in",), lambda ins, a: same(ins["in"]),
                  _implicit_kernel, doc="tests only: converts a device array implicitly"))


def test_an_implicit_conversion_in_a_kernel_fails_loudly():
    """Not a silent host copy: the run stops with the op, task and CuPy's message."""
    place = af.placement("cuda", ranks=[0])
    with af.Job("implicit", pieces=2) as job:
        x = af.random_input("x", (4, 4), seed=1, placement=place)
        af.output("y", af.functional.relu(x))
    plan = af.compile(job)
    task = next(t for t in plan.tasks if t.task_type == "normal")
    task.exec_sequence[0].kernel.op_type = "test_implicit_host_read"
    task.exec_sequence[0].kernel.op_name = "sneaky"
    with pytest.raises(KernelError) as ei:
        with af.Session(plan, timeout=30) as s:
            s.run_to_end()
    err = ei.value
    assert err.op_name == "sneaky" and err.task_id == task.task_id
    assert "Implicit conversion to a NumPy array is not allowed" in str(err)


def test_more_devices_than_the_machine_has_is_a_clear_error(xp, monkeypatch):
    n = xp.cuda.runtime.getDeviceCount()
    plan = compile_example("mlp_data_parallel", 1, n + 1)
    with pytest.raises(DeviceError, match=rf"needs device cuda:{n}, but this machine has "
                                          rf"{n} \w+ devices?"):
        af.Session(plan, timeout=30)


@pytest.mark.parametrize("unit", ["thread", "process"])
def test_flowlaunch_sim_with_devices_per_machine(flowlaunch, tmp_path, unit):
    out = tmp_path / "y.npz"
    r = flowlaunch.run("sim", EXAMPLES / "mlp_data_parallel.py", "--machines", 2,
                       "--devices-per-machine", 2, "--device", "cuda", "--unit", unit,
                       "--out", out, timeout=90)
    assert r.returncode == 0, r.stderr
    assert "max |actorflow - numpy|" in r.stdout and "OK" in r.stdout
    with np.load(out) as f:
        assert mlp_data_parallel.check(list(f["y"])) < TOL


def test_flowlaunch_device_count_error_names_both_numbers(flowlaunch, xp):
    n = xp.cuda.runtime.getDeviceCount()
    r = flowlaunch.run("sim", EXAMPLES / "mlp_data_parallel.py", "--machines", 1,
                       "--devices-per-machine", n + 1, "--device", "cuda", timeout=60)
    assert r.returncode != 0
    assert f"needs device cuda:{n}, but this machine has {n}" in r.stdout + r.stderr


@emulated_only
def test_local_rank_picks_this_processs_devices(monkeypatch):
    """Two processes per host, one device each: LOCAL_RANK=1 runs cuda:0 on device 1;
    LOCAL_RANK=1 with two devices per machine needs devices 2-3 of a 2-device host."""
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("ACTORFLOW_DEVICES_PER_MACHINE", "1")
    plan = compile_example("mlp_data_parallel", 1, 1)
    with af.Session(plan, timeout=30) as s:
        devices = {a.device.id for slots in s.runtime.memory.values() for slot in slots
                   for a in slot.values() if not isinstance(a, np.ndarray)}
        out = s.run_to_end()["y"]
    assert devices == {1} and mlp_data_parallel.check(out) < TOL
    monkeypatch.setenv("ACTORFLOW_DEVICES_PER_MACHINE", "2")
    with pytest.raises(DeviceError, match=r"needs device cuda:0 \(device 2 with LOCAL_RANK=1\), "
                                          r"but this machine has 2 emulated devices"):
        af.Session(compile_example("mlp_data_parallel", 1, 2), timeout=30)


def test_flowlaunch_device_option_needs_a_builder_that_takes_it(flowlaunch):
    job = Path(__file__).resolve().parents[1] / "launcher" / "jobs" / "slow_pipeline.py"
    r = flowlaunch.run("sim", job, "--machines", 2, "--device", "cuda", timeout=60)
    assert r.returncode != 0
    assert "build_plan() takes no 'device' parameter" in r.stderr
