"""What the protocol reads of a plan: a small typed interface, not the Plan classes.

``protocol`` is the floor of the package graph (it imports nothing of actorflow but
``errors`` and ``registry``), so it cannot import ``plan.model``.  ``plan.Task``/
``RegstDesc``/``Plan`` satisfy these structurally; tests may hand in anything else that
has the same fields.  The state machines read ``TaskView``; the kinds' structural rules
(``protocol.rules``, run by ``Plan.validate``) read the wider ``TaskShape``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class RegstDescView(Protocol):
    """A produced regst desc: its id, how many regsts, and who reads them."""

    @property
    def regst_desc_id(self) -> int: ...

    @property
    def register_num(self) -> int: ...

    @property
    def consumer_task_ids(self) -> Sequence[int]: ...


class TaskView(Protocol):
    """One task as the state machine sees it: ids, kind, produced descs, consumed ids."""

    @property
    def task_id(self) -> int: ...

    @property
    def task_type(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def attrs(self) -> Mapping[str, Any]: ...

    @property
    def produced(self) -> Mapping[str, Any]: ...  # name -> RegstDescView

    def consumed_ids(self) -> list[int]: ...


class PlanView(Protocol):
    """A plan for the dry run: just its tasks."""

    @property
    def tasks(self) -> Sequence[Any]: ...  # TaskView


class DescShape(RegstDescView, Protocol):
    """A regst desc as the structural rules see it: also its producer, blobs, memory."""

    @property
    def producer_task_id(self) -> int: ...

    @property
    def blobs(self) -> Mapping[str, Any]: ...  # name -> blob desc (compared with ==)

    @property
    def mem_case(self) -> str: ...

    @property
    def is_ctrl(self) -> bool: ...


class TaskShape(TaskView, Protocol):
    """A task as the structural rules see it: also its machine and its kernels."""

    @property
    def machine_id(self) -> int: ...

    @property
    def exec_sequence(self) -> Sequence[Any]: ...  # kernels (ExecNode); rules count them
