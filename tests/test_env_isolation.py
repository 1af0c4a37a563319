"""A test's changes to ``os.environ`` do not reach the next test or the processes it starts
(``environment_restored`` in ``tests/conftest.py``).

The two tests run in file order: the first sets variables the way ``bench/eager.py`` does
when a test loads it (``OPENBLAS_NUM_THREADS`` among them, which made the MLP example's
flowlaunch run single-threaded BLAS in full-suite runs), the second checks that neither it
nor a child process sees them.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SENTINEL = "ACTORFLOW_TEST_ENV_LEAK"
_ran: list[str] = []


def test_a_test_sets_variables_the_way_a_loaded_bench_does():
    os.environ[SENTINEL] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "leaked-by-an-earlier-test"
    _ran.append("first")
    assert os.environ[SENTINEL] == "1"


def test_the_next_test_and_its_subprocesses_do_not_see_them():
    if not _ran:
        pytest.skip("runs after test_a_test_sets_variables_the_way_a_loaded_bench_does")
    assert SENTINEL not in os.environ
    assert os.environ.get("OPENBLAS_NUM_THREADS") != "leaked-by-an-earlier-test"
    child = subprocess.run(
        [sys.executable, "-c",
         f"import os; print(os.environ.get('{SENTINEL}'), os.environ.get('OPENBLAS_NUM_THREADS'))"],
        capture_output=True, text=True, timeout=60, check=True)
    assert child.stdout.split()[0] == "None"
    assert "leaked-by-an-earlier-test" not in child.stdout
