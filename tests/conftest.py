"""Fixtures shared by every test: leak checks on threads, child processes and /dev/shm.

Every test fails if it leaves behind an actorflow thread, a child process, or a
shared-memory segment whose name starts with ``actorflow``; the failure lists what leaked.
``flowlaunch`` runs the CLI as a subprocess and fails if any process of the run remains.
``cuda_device`` is how a test says it needs a CUDA device: it sets ``ACTORFLOW_DEVICE``
(``tests/device.py`` picks it) for that test and restores it afterwards.
``environment_restored`` puts ``os.environ`` back after every test: what one test (or a
bench module it loads) sets must not reach the processes later tests start.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from tests.device import DEVICE
from tests.launcher.helpers import Launcher


def _af_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("actorflow")}


def _children() -> set[int]:
    pid = os.getpid()
    out = set()
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            out = {int(x) for x in f.read().split()}
    except OSError:
        pass
    alive = set()
    for c in out:
        try:
            with open(f"/proc/{c}/stat") as f:
                if f.read().split(") ", 1)[1][0] != "Z":
                    alive.add(c)
        except OSError:
            pass
    return alive


def _shm() -> set[str]:
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith("actorflow")}
    except OSError:
        return set()


@pytest.fixture(autouse=True)
def environment_restored():
    """``os.environ`` as it was before the test, after it.  ``bench/eager.py`` sets
    ``OPENBLAS_NUM_THREADS=1`` when loaded (``tests/test_examples.py`` loads it in this
    process); left set, every later subprocess ran single-threaded BLAS, whose last bits
    differ, and ``flowlaunch sim examples/train_mlp_digits.py`` drifted past its 1e-4 check
    in full-suite runs only (``tests/test_env_isolation.py``)."""
    before = dict(os.environ)
    yield
    if dict(os.environ) != before:
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture(autouse=True)
def no_leaks():
    """Fail a test that leaks actorflow threads, child processes or shm segments."""
    before_shm = _shm()
    before_children = _children()
    yield
    deadline = time.monotonic() + 5.0
    while True:
        threads = _af_threads()
        children = _children() - before_children
        shm = _shm() - before_shm
        if not (threads or children or shm) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    problems = []
    if threads:
        problems.append(f"threads {sorted(threads)}")
    if children:
        problems.append(f"child processes {sorted(children)}")
    if shm:
        problems.append(f"/dev/shm segments {sorted(shm)}")
    assert not problems, "test leaked " + ", ".join(problems)


@pytest.fixture
def flowlaunch():
    launcher = Launcher()
    yield launcher
    left = launcher.cleanup()
    assert not left, f"processes of a flowlaunch run were left behind: {left}"


@pytest.fixture
def cuda_device(monkeypatch):
    """``ACTORFLOW_DEVICE`` for a test that needs a CUDA device (the emulated one unless a
    GPU with CuPy is here, or the caller chose); restored after the test.  Processes the
    test starts inherit it."""
    monkeypatch.setenv("ACTORFLOW_DEVICE", DEVICE)
    return DEVICE
