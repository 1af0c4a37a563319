"""The unit shell (``runtime.ThreadUnit``) carries out what its core returns, and nothing else.

A core that hands back something that is no action (a bug in a core) stops the unit with a
``ProtocolError`` naming it, instead of the action being dropped and a run hanging.
"""

from __future__ import annotations

import pytest

import actorflow as af
from actorflow.actors.runtime import MachineRuntime
from actorflow.errors import ProtocolError
from actorflow.protocol.messages import cmd


class _OddCore:
    live = 1
    busy = False

    def push(self, msgs):
        return ["not an action"]

    def completed(self, acts):
        return []

    def blocked_on(self):
        return []


def test_an_unknown_action_is_an_error_not_dropped():
    b = af.PlanBuilder(machines=1)
    x = b.source("constant", {"shape": [2], "dtype": "float32", "value": 1.0}, piece_num=2)
    b.output("y", x)
    plan = b.build()
    rt = MachineRuntime(plan)
    src = plan.tasks_by_type("source")[0]
    unit = rt.route[src.task_id]
    unit.core = _OddCore()
    with pytest.raises(ProtocolError, match=r"the core returned 'not an action', which is no "
                                            r"action"):
        unit.push([cmd(src.task_id, "start")])


def test_the_stream_runs_the_act_through_the_runner_it_declares():
    """``Stream.launch(host, act)`` calls ``host.run(act)`` (``streams.ActRunner``)."""
    from actorflow.protocol.messages import Act
    from actorflow.streams.stream import CpuStream

    ran = []

    class Runner:
        def run(self, act):
            ran.append(act.act_id)

    s = CpuStream()
    s.launch(Runner(), Act(1, 7, 0, [], []))
    assert ran == [7] and [a.act_id for _h, a in s.completed()] == [7]
