"""The test suite; how it is laid out.

- Every folder of tests or of helpers that tests import is a package (an ``__init__.py``,
  empty but for this one), so two folders may hold modules of the same name and every
  import is explicit.
- ``test_*.py`` are tests.  Anything else is a helper, named after what it holds
  (``launcher/helpers.py``, ``protocol/by_hand.py``, ``trace/plans.py``), with no leading
  underscore, and imported by its full name: ``from tests.trace.plans import chain``.
- Folders of programs are run by path, not imported, and need no ``__init__.py``:
  ``*/scripts/`` (run under ``flowlaunch --nproc-per-node``), ``oneflow/seeds/`` (the
  seeds' samples, run as written), ``oneflow/oracle/``; ``launcher/jobs/`` holds job files
  ``flowlaunch`` loads by path, and one that a test also imports.
- ``conftest.py`` (here) holds the fixtures every test gets: the leak checks on threads,
  child processes and shared memory, and ``flowlaunch``.

``tests/test_layout.py`` checks the first two rules.
"""
