"""actorflow.transport: the data plane (see DESIGN.md, "Transport").

- ``registry``: backends by URI scheme (inproc://, ipc://, tcp://) over pyzmq; one registry.
- ``codec``: msgpack header (wire version) + raw array frames; receive into preallocated memory.
- ``bus``: ``Router`` (dst task -> address, blobs on READYs that leave the machine) and
  ``Outbox`` (one PUSH socket per peer: FIFO per actor pair).
- ``shm``: per-regst-desc shared memory for process units, ``cleanup_run(run_id)``.

Transport knows messages and bytes, not actors: the machine node that hosts actors on
these sockets (``actors/node.py``, ``thread_hosting``, ``process_hosting``, ``cluster``)
sits above it, and the control plane (rendezvous, heartbeats, results) is the launcher's.
"""
