"""Landing: a received actor message -> the message a unit dispatches, data in place.

The one place where a READY that crossed machines writes its frames into local regst
memory (the receive buffer mirroring the remote desc, ``register_num`` slots), and where a
fed piece's CMD hands its arrays to the input actor's feed queue.  Thread units (on the
node's receiver), process units (in their own loop) and the node relaying to unit
processes all call ``land``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from actorflow.errors import MalformedMessage, ProtocolError
from actorflow.protocol.messages import CMD, READY, Msg
from actorflow.transport.comm import Message

Feed = Callable[[int, dict], None]


def land(m: Message, memory: Mapping[int, list[dict]], feed: Feed, where: str) -> Msg | None:
    """The actor message of ``m`` with its blobs landed; ``None`` when a feed took it.

    ``memory``: regst desc id -> slots of this process; ``feed(task_id, arrays)`` queues a
    fed piece.  A message whose blobs have no place here is a ``ProtocolError`` naming the
    desc and slot.
    """
    try:
        msg = Msg(*m.body)
    except TypeError as e:
        raise MalformedMessage(f"{where}: an actor message with a malformed header "
                               f"{m.body!r:.80}") from e
    if not m.metas:
        return msg
    if msg.type == CMD:  # a fed piece: the CMD carries its arrays
        feed(msg.dst, m.arrays())
        return None
    slots = memory.get(msg.regst_desc_id)
    if msg.type != READY or slots is None or not 0 <= msg.slot < len(slots):
        raise ProtocolError(f"{where}: {msg!r} carries blobs but regst desc "
                            f"{msg.regst_desc_id} slot {msg.slot} has no receive buffer here")
    m.copy_into(slots[msg.slot], lambda: f"{where}: regst desc {msg.regst_desc_id}")
    return msg
