"""An exception escaping a thread of a worker or unit process is one clear line, not
Python's bare traceback (``actorflow.errors.report_thread_errors``)."""

from __future__ import annotations

import os
import subprocess
import sys

_SCRIPT = """
import threading
from actorflow.errors import report_thread_errors
report_thread_errors("flowlaunch worker")
def boom():
    raise ValueError("socket closed under the thread")
t = threading.Thread(target=boom, name="actorflow-zap")
t.start()
t.join()
print("main went on")
"""


def _run(debug: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ACTORFLOW_DEBUG"}
    if debug:
        env["ACTORFLOW_DEBUG"] = "1"
    return subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                          timeout=60, env=env)


def test_a_threads_exception_is_one_line_naming_the_thread_and_where():
    r = _run(debug=False)
    assert r.returncode == 0 and r.stdout == "main went on\n", r
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("flowlaunch worker: internal error in thread actorflow-zap: "
                               "ValueError: socket closed under the thread (at "), lines
    assert "Traceback" not in r.stderr


def test_actorflow_debug_keeps_the_whole_traceback():
    r = _run(debug=True)
    assert "Traceback (most recent call last)" in r.stderr and "in boom" in r.stderr
    assert "internal error in thread actorflow-zap: ValueError" in r.stderr
