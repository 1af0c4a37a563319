"""Control-plane messages: a dict ``{"t": type, ...fields}`` as the body of a transport message.

They travel on the transport's comms (master: a "router" listener; workers and the
launcher's monitor: "dealer" comms) with kind ``CTRL``; the codec's header carries the wire
version, so a worker from another actorflow release is rejected by name.  Arrays (output
pieces) travel as the message's frames, never inside the dict.  ``body_of`` checks what
arrived and names the sender when it is not a control message.
"""

from __future__ import annotations

from typing import Any

from actorflow.errors import MalformedMessage
from actorflow.transport.comm import Message

CTRL = 1  # a control message (master <-> workers, master <-> the launcher's monitor)
OUT = 2  # worker -> the launcher's output sink: {"name", "pieces": [ids]} + blob frames
# batches (of up to 256 pieces / 8 MiB) that may wait on each side of a worker -> sink link
# before a worker's send waits: flow control, so a slow launcher slows the run down
# instead of holding its output in memory
OUT_QUEUE = 4
OUT_SEND_TIMEOUT = 120.0  # s a worker's send may wait for room before the run fails
MAX_ROOT_SENTENCE = 2000  # chars of a "root" message's why-stuck sentence the master keeps


def body_of(m: Message, source: str = "peer") -> dict[str, Any]:
    """The control message in ``m``; anything else is a ``MalformedMessage`` naming ``source``."""
    body = m.body
    if m.kind != CTRL or not isinstance(body, dict) or not isinstance(body.get("t"), str):
        raise MalformedMessage(f"control message from {source} has no type field "
                               f"(kind {m.kind}, body {body!r:.80})")
    return body
