"""Message kinds between a machine node and its units (the ``kind`` of a transport message).

Actor messages travel as ``MSG`` with ``Msg.header()`` as body (a READY that crossed
machines carries its regst's blobs as frames, a fed piece's CMD carries the piece); the
rest are a unit process's reports to its node and the node's orders to its units.
"""

from __future__ import annotations

import hmac
from typing import Any

from actorflow.errors import MalformedMessage

MSG = 0  # an actor message (READY/ACK/EORD/CMD)
DELIVER = 1  # unit -> node: an output piece [task_id, piece_id] + blobs
ERROR = 2  # unit -> node: a failure {"type": ..., ...}
DONE = 3  # unit -> node: every actor of the unit exited
HELLO = 4  # unit -> node: the unit is built and listening
STOP = 5  # node -> unit: stop now (another part of the run failed)
CONNECT = 6  # node -> unit: every machine's data-plane address
CONNECTED = 7  # unit -> node: addresses taken, the unit runs [thrd, its loop]
STATUS = 8  # node -> unit: report your actors' wait states (hang reports)
STATES = 9  # unit -> node: [thrd, [blocked_on() of every live actor], query id]
BATCH = 10  # unit -> unit: several actor messages, [[header, blob count], ...] + blobs in order
KIND_NAMES = ("MSG", "DELIVER", "ERROR", "DONE", "HELLO", "STOP", "CONNECT", "CONNECTED",
              "STATUS", "STATES", "BATCH")


def kind_name(kind: int) -> str:
    return KIND_NAMES[kind] if 0 <= kind < len(KIND_NAMES) else f"kind {kind}"


class Stopped(Exception):
    """A unit process was told to stop (STOP from its node, or its node is gone).  Defined
    here, not in process_unit.py, which runs as ``__main__``: the native loop's callbacks
    (native_process.py) raise the very class the unit's main catches."""


DROPPED = object()  # a unit's receive: a message the transport rejected and it dropped


# A unit process's listener is also reachable from other machines (and, with ``--insecure``,
# from anyone who can reach the port), so everything but actor messages carries the node's
# token: a per-node secret handed to each unit on its stdin, never sent over tcp (node and
# units talk over ipc:// in the node's 0700 directory).  A stranger cannot stop a unit,
# redirect it, or report on its behalf.
TOKEN_BYTES = 16


def seal(token: bytes, body: Any) -> list:
    """The body of a node <-> unit control message: ``[token, body]``."""
    return [token, body]


def unseal(token: bytes, sealed: Any, kind: int) -> Any:
    """The body of a control message, or ``MalformedMessage`` if it lacks the node's token."""
    if (not isinstance(sealed, list) or len(sealed) != 2 or not isinstance(sealed[0], bytes)
            or not hmac.compare_digest(sealed[0], token)):
        raise MalformedMessage(f"{kind_name(kind)} message without the node's token "
                               "(not from this machine's node or units)")
    return sealed[1]
