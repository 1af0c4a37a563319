"""Both sides of a kind name the same kinds; the runtime's registries refuse duplicates."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
from actorflow.actors.executors import EXECUTORS, register_executor, run_exec_sequence
from actorflow.actors.node import UNIT_KINDS, register_unit_kind
from actorflow.actors.thread_hosting import ThreadHosting
from actorflow.errors import RegistryError
from actorflow.protocol.kinds import KINDS


def test_every_kind_has_an_executor_and_every_executor_a_kind():
    assert EXECUTORS.names() == KINDS.names()
    assert len(KINDS.names()) == 16  # 11 + the main job's 5 (protocol/mainjob.py)


def test_a_second_executor_for_a_kind_is_refused():
    with pytest.raises(RegistryError, match="executor for task type 'normal' is registered twice"):
        register_executor("normal", run_exec_sequence)


def test_unit_kinds_refuse_duplicates_and_unknown_names_list_the_known():
    assert UNIT_KINDS.names() == ["process", "thread"]
    with pytest.raises(RegistryError, match="unit kind 'thread' is registered twice"):
        register_unit_kind("thread", ThreadHosting)
    b = af.PlanBuilder()
    b.output("y", b.op("relu", b.source("constant", {"shape": [2], "value": -1.0},
                                         piece_num=2)))
    with pytest.raises(RegistryError, match="unknown unit kind 'fiber'; known: process, thread"):
        af.ClusterSession(b.build(), unit="fiber", scheme="inproc")


def test_a_plan_of_many_kinds_runs_through_the_registries():
    """source -> comm_net -> normal -> acc -> repeat -> output, each by its kind record."""
    b = af.PlanBuilder(machines=2)
    x = b.source("arange", {"stop": 3, "dtype": "float32", "piece_scale": 10}, piece_num=4)
    y = b.acc(b.op("scalar_mul", x, scalar=2.0, machine=1), 2)
    b.output("y", b.repeat(y, 2))
    plan = b.build()
    assert {t.task_type for t in plan.tasks} == {"source", "comm_net", "normal", "acc",
                                                 "repeat", "output"}
    with af.ClusterSession(plan, scheme="inproc", timeout=30) as s:
        got = s.run_to_end()["y"]
    piece = [2 * (np.arange(3) + 10 * p) for p in range(4)]  # source, then scalar_mul
    groups = [piece[0] + piece[1], piece[2] + piece[3]]    # acc of 2
    np.testing.assert_array_equal(np.stack(got), np.stack([groups[0], groups[0], groups[1],
                                                           groups[1]]))  # repeat 2
