"""actorflow.transport: the data plane (see DESIGN.md, "Transport").

- ``registry``: backends by URI scheme (inproc://, ipc://, tcp://) over pyzmq; one registry.
- ``codec``: msgpack header (wire version) + raw array frames; receive into preallocated memory.
- ``bus``: ``Router`` (dst task -> address, blobs on READYs that leave the machine) and
  ``Outbox`` (one PUSH socket per peer: FIFO per actor pair).
- ``node``: ``MachineNode``, one machine of a run (what the launcher drives).
- ``thread_hosting`` / ``process_hosting``: how a node runs its units (a registry by name);
  ``shm``: per-regst-desc shared memory for process units, ``cleanup_run(run_id)``.
- ``cluster``: ``ClusterSession``, every machine as a node in this process (tests, benches).

The control plane (rendezvous, heartbeats, results) is the launcher's (launcher/master.py).
"""
