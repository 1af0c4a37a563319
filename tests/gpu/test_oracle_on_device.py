"""The compiler's numerical oracle with every placement on devices.

Random jobs (tests/plan/compile_oracle.py) on 1-4 machines x 1-2 devices, all placements
``cuda``: the compiled plan (with its copy_h2d/copy_d2h tasks) runs on the device and must
match plain numpy on one CPU.  Thread units for the many draws, process units for a few.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorflow as af
from actorflow.session import ClusterSession
from tests.plan.compile_oracle import build, max_error
from tests.plan.test_compile_oracle import TOL, descriptions

on_device = descriptions().map(lambda d: {**d, "device": "cuda"})


def _unit_per_device(desc: dict) -> dict:
    """One unit process per device and kind (not per task): a few processes per machine."""
    return {**desc, "options": {**desc["options"], "unit_per_task": False}}


def _check(desc: dict, out: list) -> None:
    assert len(out) == desc["pieces"]
    err = max_error(desc, out)
    assert err < TOL, f"max relative error {err:.2e} for {desc}"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(on_device)
def test_random_jobs_on_devices_equal_numpy(desc):
    plan = af.compile(build(desc), machines=desc["machines"], devices_per_machine=desc["dpm"],
                      **desc["options"])
    computes = any(t.exec_sequence and t.task_type not in ("source", "output")
                   for t in plan.tasks)
    on_device = any(d.mem_case.startswith("cuda:") for t in plan.tasks
                    for d in t.produced.values())
    # a job whose steps all fold away (y = x) has no op to place; every other one is on cuda
    assert on_device or not computes, f"no regst on the device for {desc}"
    with af.Session(plan, timeout=30) as s:
        _check(desc, s.run_to_end()["y"])


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(on_device.filter(lambda d: d["machines"] <= 2).map(_unit_per_device),
       st.sampled_from(["ipc", "tcp"]))
def test_random_jobs_on_devices_with_process_units(desc, scheme):
    plan = af.compile(build(desc), machines=desc["machines"], devices_per_machine=desc["dpm"],
                      **desc["options"])
    with ClusterSession(plan, unit="process", scheme=scheme, timeout=30) as s:
        _check(desc, s.run_to_end()["y"])
