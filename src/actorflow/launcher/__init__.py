"""actorflow.launcher: ``flowlaunch`` -- spreads a plan over machines and supervises the run.

The CLI (``cli.py``, one ``cmd_*.py`` per subcommand), the control plane (rank 0's
``master.py``, every worker's ``client.py``: rendezvous, plan shares, heartbeats, results,
failures), the workers (``worker.py``; ``forked.py`` for ``sim``) and their cleanup
(``reaper.py``, ``leftovers.py``).  How a run starts: docs/architecture.md, "Starting a run";
how a stuck or failed run is explained: docs/hangs.md; its keys: docs/security.md.
"""
