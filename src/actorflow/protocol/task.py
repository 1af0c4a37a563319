"""What the protocol reads of a plan: a small typed interface, not the Plan classes.

``protocol`` is the floor of the package graph (it imports nothing of actorflow but
``errors``), so it cannot import ``plan.model``.  ``plan.Task``/``RegstDesc``/``Plan``
satisfy these structurally; tests may hand in anything else that has the same fields.
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
