"""The actor protocol, pure: messages, state machines by kind, and the dry run.

``handle(msg) -> actions`` with no threads, sockets, clocks or arrays (docs/architecture.md,
"The actor protocol and the unit loop").  This package is the floor of the dependency
graph: it imports nothing of actorflow but ``errors`` and ``registry`` and reads tasks
through the typed views of ``task.py``.

- ``messages``: ``Msg`` (READY/ACK/EORD/CMD) and the actions ``Act``/``Exit``;
- ``state``: the base state machine (the ``normal`` kind) and its wait descriptions;
- ``kinds``: one ``Kind`` record per task type (state machine, structural rule,
  description), registered once in ``KINDS``; ``kind_states`` holds the refined state
  machines (input, source, output, tick, acc, repeat) and ``rules`` the structural rules
  that ``Plan.validate`` runs;
- ``simulate``: every actor of a plan on one message queue (the dry run / progress check).
"""
