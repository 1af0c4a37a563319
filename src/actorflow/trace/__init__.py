"""actorflow.trace: record what the actors did, and explain it afterwards.

Recording (the runtime calls a recorder; ``recorder.py``):
    always-on flight recorder (last steps per unit) and, with ``Session(trace=DIR)`` or
    ``flowlaunch sim|run --trace DIR``, every event packed into one file per machine
    (``tracefile.py``, ``packed.py``).  ``diagnostics.py`` wires recorder, watchdog
    (``stall_timeout``) and SIGUSR1 dumps to whoever owns a runtime.
Reading (``flowlaunch trace ...``):
    ``merge.py`` puts every file on the master's clock; ``export.py`` writes Chrome/Perfetto
    JSON and ``check.py`` validates it; ``summary.py`` says where time went; ``whystuck.py``
    turns actor states into a wait-for graph and one sentence; ``replay.py`` re-runs one
    actor's recorded messages through its state machine.

Dependency rule: this package imports nothing of the runtime (records are plain data; the
runtime calls into a recorder and hands over plain dicts).  The one exception is
``replay.py``, which imports the *pure* actor state machine (``protocol.state``/``kinds``/
``messages``: no threads, sockets or kernels) to replay a recording through it.
"""
