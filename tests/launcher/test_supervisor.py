"""The launcher's process supervision: first error lines, teardown of whole groups, table."""

from __future__ import annotations

import io
import os
import sys
import time

from actorflow.launcher.report import failure_table, root_cause
from actorflow.launcher.supervisor import Supervisor
from tests.procs import pid_alive as _alive


def test_first_error_line_is_the_exception_of_a_traceback(tmp_path):
    console = io.StringIO()
    sup = Supervisor(str(tmp_path), console)
    code = "print('ok'); import no_such_module_xyz"
    c = sup.spawn(3, "h", [sys.executable, "-u", "-c", code], {})
    assert sup.wait_all(20)
    sup.close()
    assert c.exit_code == 1 and c.status() == "exit 1"
    assert c.first_error == "ModuleNotFoundError: No module named 'no_such_module_xyz'"
    assert "[rank 3] ok" in console.getvalue()
    assert (tmp_path / "rank3.log").read_text().startswith("ok\n")


def test_teardown_kills_the_whole_process_group_and_marks_the_root_cause():
    sup = Supervisor(None, io.StringIO(), grace=0.5)
    # a child that ignores SIGTERM and has a grandchild: SIGKILL of the group gets both
    stubborn = sup.spawn(0, "h", ["sh", "-c", "trap '' TERM; sleep 60 & echo $!; wait"], {})
    quitter = sup.spawn(1, "h", [sys.executable, "-c", "import sys; sys.exit(4)"], {})
    deadline = time.monotonic() + 20
    while (not stubborn.tail or quitter.exit_code is None) and time.monotonic() < deadline:
        sup.poll()
        time.sleep(0.02)
    grandchild = int(stubborn.tail[0])
    assert _alive(grandchild)
    assert sup.first_failure() is quitter
    sup.teardown()
    assert not _alive(grandchild) and stubborn.status() == "signal SIGKILL"
    root, line = root_cause(sup.children, None)
    assert root is quitter
    table = failure_table(sup.children, root, line)
    rows = table.splitlines()
    assert rows[0].split() == ["rank", "host", "pid", "exit", "first", "error", "line"]
    assert rows[2].startswith("*") and "exit 4" in rows[2] and str(quitter.pid) in rows[2]
    assert "signal SIGKILL" in rows[1] and not rows[1].startswith("*")
    assert rows[-1] == "root cause (*): rank 1 on h, the first failure"
    assert os.getpgid(os.getpid()) != stubborn.pid  # children never share our group
