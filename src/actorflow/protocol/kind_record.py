"""The record of one actor kind (kept apart from the ``KINDS`` registry in ``kinds.py`` so
that modules defining kinds, such as ``mainjob.py``, need not import the registry that
imports them)."""

from __future__ import annotations

from dataclasses import dataclass

from actorflow.protocol.rules import Rule
from actorflow.protocol.state import ActorState


@dataclass(frozen=True)
class Kind:
    """One task type: state machine, structural rule, and what it is for (``plan show``).

    ``remote_inputs``: tasks of this kind may consume regsts produced on another machine
    (only ``comm_net``: every other edge between machines goes through one).
    ``shape``: the Graphviz node shape of ``flowlaunch plan dot``.
    """

    name: str
    state: type[ActorState]
    rule: Rule
    description: str
    remote_inputs: bool = False
    shape: str = "box"
