"""Actor kinds by task type: one record per kind, registered once.

A ``Kind`` holds everything the layers below the runtime know of a task type: its pure
state machine, the structural rule ``Plan.validate`` checks on every task of that type,
and the description ``flowlaunch plan show`` prints.  The runtime side (how an act moves
data) registers an executor under the same name in ``actorflow.actors.executors``; a test
checks that both registries name exactly the same kinds.  Adding a kind is one record
here (or ``register_kind`` from a plugin module) plus one executor.
"""

from __future__ import annotations

from actorflow.errors import RegistryError
from actorflow.protocol import rules
from actorflow.protocol.kind_record import Kind
from actorflow.protocol.kind_states import (
    AccState,
    InputState,
    OutputState,
    RepeatState,
    SourceState,
    TickState,
)
from actorflow.protocol.mainjob import MAIN_JOB_KINDS
from actorflow.protocol.state import RUNNING, ActorState
from actorflow.protocol.task import TaskView as Task
from actorflow.registry import Registry

KINDS: Registry[Kind] = Registry("task type")


def register_kind(kind: Kind) -> Kind:
    """Register a kind by its name; a second kind of the same name is a RegistryError."""
    return KINDS.register(kind.name, kind)


def get_kind(task_type: str) -> Kind:
    return KINDS.get(task_type)


def kind_names() -> list[str]:
    return KINDS.names()


def make_state(task: Task, producer_of: dict[int, int]) -> ActorState:
    """The state machine of ``task``'s kind; an unknown kind names the task and the known."""
    try:
        kind = KINDS.get(task.task_type)
    except RegistryError as e:
        raise RegistryError(f"task {task.task_id} ({task.label}): {e}") from None
    return kind.state(task, producer_of)


for _kind in (
    Kind("normal", ActorState, rules.normal,
         "runs its exec sequence of kernels on every piece"),
    Kind("input", InputState, rules.input_,
         "one piece per feed from the client (Session.run / feed)", shape="invhouse"),
    Kind("source", SourceState, rules.source,
         "a generator kernel run for a piece count (started by CMD start)", shape="invhouse"),
    Kind("output", OutputState, rules.output,
         "hands every piece it reads to the client", shape="house"),
    Kind("tick", TickState, rules.tick,
         "control only: passes the beat on, no kernels", shape="point"),
    Kind("acc", AccState, rules.acc,
         "accumulates acc_num pieces into one (sum), emits once per group"),
    Kind("repeat", RepeatState, rules.repeat,
         "emits every piece it reads repeat_num times"),
    Kind("copy_h2d", ActorState, rules.copy(to_device=True),
         "copies a regst from host memory to device memory"),
    Kind("copy_d2h", ActorState, rules.copy(to_device=False),
         "copies a regst from device memory to host memory"),
    Kind("comm_net", ActorState, rules.comm_net,
         "on the receiving machine: brings a regst produced on another machine here",
         remote_inputs=True, shape="cds"),
    Kind("boxing", ActorState, rules.boxing,
         "slices, concatenates or adds parallel pieces to change SBP/placement",
         shape="hexagon"),
    *MAIN_JOB_KINDS,
):
    register_kind(_kind)

__all__ = ["KINDS", "RUNNING", "AccState", "InputState", "Kind", "OutputState", "RepeatState",
           "SourceState", "TickState", "get_kind", "kind_names", "make_state", "register_kind"]
