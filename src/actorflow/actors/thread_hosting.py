"""Thread units for a MachineNode: the machine's actors on threads of this process.

The node's receiver thread lands an incoming cross-machine READY (``landing.land``: its
blobs go straight into the local receive buffer, a mirror of the remote regst desc in the
runtime's memory under the remote desc id), then hands the message to the unit's inbox.
The comm_net act copies that buffer into its own regst; its ACK leaves after the copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from actorflow.actors import native_sockets
from actorflow.actors.delivery import Batcher
from actorflow.actors.landing import land
from actorflow.actors.native_sockets import NativeSender
from actorflow.actors.routing import Router
from actorflow.actors.runtime import MachineRuntime
from actorflow.actors.unit_wire import kind_name
from actorflow.errors import TransportError
from actorflow.protocol.messages import Msg
from actorflow.transport.comm import Message

if TYPE_CHECKING:
    from actorflow._core.unit_core import NativeReceiver
    from actorflow.actors.machine_view import MachineView
    from actorflow.actors.node import MachineNode


def native_receiver(runtime: MachineRuntime, view: MachineView,
                    memory: Mapping[int, list[dict]]) -> NativeReceiver | None:
    """The compiled core's receiver for this machine's native units (None: none runs)."""
    hosted = {t.task_id: u.core for u in runtime.units.values() if u.native for t in u.tasks}
    if not hosted:
        return None
    from actorflow._core.unit_core import NativeReceiver

    return NativeReceiver(view.routing.keys(), view.descs, hosted, memory)


class ThreadHosting:
    def __init__(self, node: MachineNode) -> None:
        view = node.view
        self.node = node
        self.runtime = MachineRuntime(
            view.plan, [view.machine_id], recorder=node.recorder, on_deliver=node.on_deliver,
            producer_of=view.producer_of)
        if node.on_batch is not None:  # output pieces in batches, flushed by the node's owner
            self.runtime.batcher = Batcher(node.on_batch)
        mem = self.runtime.memory
        for i, d in view.remote_descs.items():  # receive buffers for remote inputs
            mem[i] = self.runtime.allocator.allocate(d)
        self.router = Router(view.machine_id, view.routing, node.outbox, mem)
        self.runtime.remote_send = self.router.send
        self._rx: NativeReceiver | None = None

    def extra_binds(self) -> list[str]:
        return []

    def on_bind(self, address: str) -> str:
        return address

    def start(self) -> None:
        # each unit's messages to other machines wait in one batch per machine while its
        # loop has more to do, and go before it sleeps (node receivers unpack a BATCH); a
        # router of its own, as a batch is one thread's (client commands use the shared one)
        view, node = self.node.view, self.node
        for u in self.runtime.units.values():
            # a unit on the native loop sends through the compiled libzmq driver as well
            native = NativeSender() if u.native and native_sockets.unavailable() is None else None
            u.remote = Router(view.machine_id, view.routing, node.outbox, self.runtime.memory,
                              node.machine_addrs, coalesce=True, coalesce_nodes=True,
                              native=native)
        self.runtime.start()
        self._rx = native_receiver(self.runtime, view, self.runtime.memory)

    @property
    def native_rx(self) -> NativeReceiver | None:
        """What takes actor messages for native units straight from the receiver (None:
        the Python way for all: no native unit, or a test's fault injection is armed)."""
        return self._rx if self.runtime._losing is None else None

    def actor_states(self) -> list[dict]:
        return self.runtime.actor_states()

    @property
    def error(self) -> BaseException | None:
        return self.runtime.error

    def command(self, msg: Msg) -> None:
        self.runtime.send(msg)

    def push_feed(self, task_id: int, arrays: dict[str, np.ndarray]) -> None:
        self.runtime.push_feed(task_id, arrays)

    def incoming(self, m: Message) -> None:
        msg = land(m, self.runtime.memory, self.runtime.push_feed, self.node.name)
        if msg is not None:
            self.runtime.send(msg)

    def unit_message(self, m: Message) -> None:
        raise TransportError(f"{self.node.name}: unexpected {kind_name(m.kind)} message "
                             "(thread units take only actor messages)")

    def flush_outputs(self) -> None:
        if self.runtime.batcher is not None:
            self.runtime.batcher.flush()

    def stop(self, error: BaseException) -> None:
        self.runtime.fail(error)

    def wait(self, timeout: float) -> bool:
        return self.runtime.exited_within(timeout)

    def describe_live(self) -> str:
        return self.runtime.describe_live()

    def close(self, timeout: float) -> None:
        self.runtime.join(timeout)
