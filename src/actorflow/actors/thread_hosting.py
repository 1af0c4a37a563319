"""Thread units for a MachineNode: the machine's actors on threads of this process.

The node's receiver thread writes the blobs of an incoming cross-machine READY straight into
the local receive buffer (a mirror of the remote regst desc, ``register_num`` slots, in the
runtime's memory under the remote desc id), then hands the message to the unit's inbox.  The
comm_net act copies that buffer into its own regst; its ACK leaves after the copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from actorflow.actors.runtime import MachineRuntime
from actorflow.errors import ProtocolError, TransportError
from actorflow.protocol.messages import READY, Msg
from actorflow.transport import codec
from actorflow.transport.bus import Router

if TYPE_CHECKING:
    from actorflow.actors.node import MachineNode


class ThreadHosting:
    def __init__(self, node: MachineNode) -> None:
        view = node.view
        self.node = node
        self.runtime = MachineRuntime(
            view.plan, [view.machine_id], recorder=node.recorder, on_deliver=node.on_deliver,
            producer_of=view.producer_of)
        mem = self.runtime.memory
        for i, d in view.remote_descs.items():  # receive buffers for remote inputs
            mem[i] = self.runtime.allocator.allocate(d)
        self.router = Router(view.machine_id, view.routing, node.outbox, mem)
        self.runtime.remote_send = self.router.send

    def extra_binds(self) -> list[str]:
        return []

    def on_bind(self, address: str) -> str:
        return address

    def start(self) -> None:
        self.runtime.start()

    def actor_states(self) -> list[dict]:
        return self.runtime.actor_states()

    @property
    def error(self) -> BaseException | None:
        return self.runtime.error

    def command(self, msg: Msg) -> None:
        self.runtime.send(msg)

    def push_feed(self, task_id: int, arrays: dict[str, np.ndarray]) -> None:
        self.runtime.push_feed(task_id, arrays)

    def incoming(self, msg: Msg, metas: list | None, frames: list) -> None:
        if metas:
            if msg.type != READY:
                raise ProtocolError(f"{self.node.name}: {msg!r} carries blobs but is no READY")
            slots = self.runtime.memory.get(msg.regst_desc_id)
            if slots is None or not 0 <= msg.slot < len(slots):
                raise TransportError(f"{self.node.name}: READY with blobs for regst desc "
                                     f"{msg.regst_desc_id} slot {msg.slot}, which has no "
                                     "receive buffer here")
            codec.copy_into(metas, frames, slots[msg.slot],
                            f"{self.node.name}: regst desc {msg.regst_desc_id}")
        self.runtime.send(msg)

    def unit_message(self, kind: int, body: Any, metas: list | None, frames: list) -> None:
        raise TransportError(f"{self.node.name}: unexpected {codec.KIND_NAMES[kind]} message "
                             "(thread units take only actor messages)")

    def stop(self, error: BaseException) -> None:
        self.runtime.fail(error)

    def wait(self, timeout: float) -> bool:
        return self.runtime._all_exited.wait(timeout)

    def describe_live(self) -> str:
        return self.runtime.describe_live()

    def close(self, timeout: float) -> None:
        self.runtime.join(timeout)
