"""Actors: the runtime that hosts the protocol's state machines (``actorflow.protocol``).

- ``runtime``: ``MachineRuntime``, thread units with inboxes, streams, executors, memory.
- ``node``: ``MachineNode``, one machine of a run over the transport (what the launcher
  drives); ``thread_hosting`` / ``process_hosting``: how a node runs its units (a registry
  by name); ``process_unit``: the unit process; ``cluster``: ``NodeGroup``, every
  machine as a node in this process (``actorflow.session.ClusterSession`` drives it).
- ``hosting``: the typed seams (``Runtime`` a Session drives, ``UnitHosting`` a node drives).
"""
