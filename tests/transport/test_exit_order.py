"""What a process does with ZeroMQ as it exits: hooks that wait for zero-copy frames run
while pyzmq's garbage collector still holds them.  Run in a fresh interpreter (its exit
is the subject)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.launcher.helpers import REPO


def _python(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=str(REPO),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_an_at_exit_hook_runs_while_pyzmq_still_holds_the_zero_copy_frames():
    """The hook is registered before the first zero-copy send (when pyzmq registers its
    own hook, lazily): it still runs first, and a frame it waits for can still be done."""
    out = _python("""
        import sys

        import numpy as np
        from actorflow.transport import listen
        from actorflow.transport.comm import connect
        from actorflow.transport.registry import at_exit

        inbox = listen("tcp://127.0.0.1:0")
        out = connect(inbox.address)

        def hook():
            garbage = sys.modules["zmq.utils.garbage"]  # not imported here: that would order it
            print("gc alive at exit:", garbage.gc.is_alive())
            print("received:", inbox.recv(10).arrays()["x"].sum())
            print("tracker done:", tracker.wait(10) is None and tracker.done)
            out.close(); inbox.close()

        at_exit(hook)
        out.send(1, {}, [("x", np.ones(1 << 16))])  # zero-copy: starts pyzmq's collector
        tracker = out.send_tracked(1, {"last": True})
    """)
    assert out.splitlines() == ["gc alive at exit: True", "received: 65536.0",
                                "tracker done: True"]

