"""actorflow.transport: header + frames between processes and machines.

How a regst's bytes travel through it: docs/architecture.md, "A regst's data path"; how its
sockets are authenticated: docs/security.md.

- ``comm``: ``Listener``/``Comm`` by URI scheme, ``listen()``/``connect()``, ``Message``; the
  only module that makes sockets.  Data plane, unit status lines and the control plane
  all go through it.
- ``registry``: schemes (``inproc://``, ``ipc://``, ``tcp://``) in one ``Registry``.
- ``codec``: msgpack header (wire version, kind, body, blob metas) + raw array frames; the
  one array codec; receive straight into preallocated memory.
- ``limits`` / ``security``: what a receiver accepts, and the authentication hook every
  listener and comm applies to its socket.
- ``outbox``: one comm per peer address, shared by a process's senders.
- ``shm``: shared-memory slots (described by plain shapes/dtypes) for process units.

Transport knows header and frames, never actor messages: what a message kind means, where
an actor message goes and which READY carries blobs is decided in ``actors/`` (routing,
unit reports) and ``launcher/`` (control messages).  This is the only package that
imports ``zmq``.
"""

from actorflow.transport.comm import (
    Comm,
    CommLike,
    Listener,
    ListenerLike,
    Message,
    connect,
    listen,
)
from actorflow.transport.limits import Limits
from actorflow.transport.outbox import Outbox
from actorflow.transport.security import Security

__all__ = ["Comm", "CommLike", "Limits", "Listener", "ListenerLike", "Message", "Outbox",
           "Security", "connect", "listen"]
