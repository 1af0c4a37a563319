"""The actor protocol, pure: messages, state machines by kind, and the dry run.

``handle(msg) -> actions`` with no threads, sockets, clocks or arrays (DESIGN.md, "The
actor protocol").  This package is the floor of the dependency graph: it imports nothing
of actorflow but ``errors`` and reads tasks through the typed views of ``task.py``.

- ``messages``: ``Msg`` (READY/ACK/EORD/CMD) and the actions ``Act``/``Exit``;
- ``state``: the base state machine (the ``normal`` kind) and its wait descriptions;
- ``kinds``: the refinements by task type (input, source, output, tick, acc, repeat, ...);
- ``simulate``: every actor of a plan on one message queue (the dry run / progress check).
"""
