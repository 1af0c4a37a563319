"""The typed seams of hosting: what a Session drives, and what a MachineNode drives.

Two shapes of "something that runs actors" exist, and each has more than one
implementation, so each is written down once here as a ``typing.Protocol``:

- ``Runtime`` is what a ``Session`` drives: ``MachineRuntime`` (every machine of a plan on
  threads of this process) and ``NodeGroup`` (one ``MachineNode`` per machine, over sockets).
- ``UnitHosting`` is how a ``MachineNode`` runs its machine's units: ``ThreadHosting`` (unit
  threads in this process) and ``ProcessHosting`` (unit processes), picked by name from
  ``actorflow.actors.node.UNIT_KINDS``.

mypy checks the implementations against them where they are used, so a method that drifts
apart fails the type check instead of an ``AttributeError`` at run time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from actorflow.plan.model import Plan, Task
from actorflow.protocol.messages import Act, Msg

if TYPE_CHECKING:
    from actorflow._core.unit_core import NativeReceiver
    from actorflow.actors.node import MachineNode
    from actorflow.actors.routing import Router
    from actorflow.transport.comm import Message

# on_deliver(task, piece_id, arrays): an output piece for the client; (None, -1, {}) wakes it
Deliver = Callable[[Task | None, int, dict], None]
# on_batch(task, piece_ids, arrays): output pieces in batches, arrays of shape (n, *blob)
DeliverBatch = Callable[[Task, list[int], dict], None]


class Runtime(Protocol):
    """Hosts the actors of a plan and routes their messages (what a Session drives)."""

    @property
    def error(self) -> BaseException | None: ...

    @property
    def stopping(self) -> bool: ...

    def start(self) -> None: ...

    def push_feed(self, task_id: int, arrays: dict[str, np.ndarray]) -> None: ...

    def command(self, task_id: int, name: str, arg: int | None = None) -> None: ...

    def wait_exited(self, timeout: float) -> None: ...

    def actor_states(self) -> list[dict]: ...

    def describe_live(self) -> str: ...

    def fail(self, error: BaseException) -> None: ...

    def join(self, timeout: float = 10.0) -> None: ...


class UnitRecorder(Protocol):
    """One unit's trace hooks (``actorflow.trace.recorder``: ``FlightUnit``, ``TraceUnit``).

    ``ring``: the flight recorder, called with every message handed to an actor or sent
    to another unit (None: no ring).  ``timed``: when true the unit calls ``send``,
    ``recv``, ``act_begin`` and ``act_end`` for every event instead of ``ring``, and
    ``act_device`` before the ``act_end`` of an act a device stream timed."""

    @property
    def ring(self) -> Callable[[Msg], None] | None: ...

    @property
    def timed(self) -> bool: ...

    def send(self, msg: Msg) -> None: ...

    def recv(self, msg: Msg) -> None: ...

    def act_begin(self, act: Act) -> None: ...

    def act_end(self, act: Act) -> None: ...

    def act_device(self, act: Act, launch_ns: int, device_ns: int) -> None: ...


class Recorder(Protocol):
    """What the runtime needs of a recorder (``actorflow.trace.recorder.Recorder``)."""

    def unit(self, key: tuple[int, int]) -> UnitRecorder: ...

    def adopt(self, key: tuple[int, int], unit: Any) -> None:
        """A unit that records itself (the native loop) takes that unit's place."""

    def trace_config(self) -> dict | None:
        """How a unit process rebuilds this recorder (None: it records nothing)."""


# build the runtime for a Session: (plan, recorder, on_deliver) -> Runtime
RuntimeFactory = Callable[[Plan, "Recorder | None", Deliver], Runtime]


class UnitHosting(Protocol):
    """How one MachineNode runs its units (threads or processes)."""

    router: Router

    @property
    def error(self) -> BaseException | None: ...

    @property
    def native_rx(self) -> NativeReceiver | None:
        """Takes actor messages for native units straight off the receiver (or None)."""

    def extra_binds(self) -> list[str]: ...

    def on_bind(self, address: str) -> str: ...

    def start(self) -> None: ...

    def command(self, msg: Msg) -> None: ...

    def push_feed(self, task_id: int, arrays: dict[str, np.ndarray]) -> None: ...

    def incoming(self, m: Message) -> None:
        """An actor message from the machine's data-plane socket (a READY from another
        machine carries its blobs: land them, then hand the header to the unit)."""

    def unit_message(self, m: Message) -> None:
        """Any other message on that socket (process units report here)."""

    def flush_outputs(self) -> None:
        """Send output pieces waiting in a batch (thread units; process units send their
        own)."""

    def stop(self, error: BaseException) -> None: ...

    def wait(self, timeout: float) -> bool: ...

    def actor_states(self) -> list[dict]: ...

    def describe_live(self) -> str: ...

    def close(self, timeout: float) -> None: ...


# UNIT_KINDS entries: factory(node) -> the node's hosting
HostingFactory = Callable[["MachineNode"], UnitHosting]
