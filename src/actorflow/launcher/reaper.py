"""The remote end of ``flowlaunch run``: run one worker, then leave its host clean.

``flowlaunch run`` starts, over ssh on each host::

    python -m actorflow.launcher.reaper --run-id R --machine M --grace G -- \\
        python -m actorflow.launcher.cli worker ...

A worker that is SIGKILLed (or whose unit processes are) cannot remove its shared memory
and ipc directory, and the launcher cannot reach another host's /dev/shm.  So the ssh
session runs this small parent instead of the worker itself.  It

- starts the worker as its child, in a process group of its own (its unit processes
  join it), with the ssh session's stdin relayed into the worker's stdin: the run's key
  line passes through as bytes (never argv or environment) and the worker still sees EOF
  when the session closes;
- is the *subreaper* of everything below it, so a killed worker's orphans come back to it;
- ends the worker when the session ends: ssh stdin at EOF (the launcher died or tore
  down) gives the worker ``grace`` seconds to stop by itself, then SIGTERM (and SIGCONT,
  for a stopped one), then SIGKILL after ``grace`` more; SIGTERM/SIGINT/SIGHUP to the
  reaper are forwarded at once, SIGKILL following after ``grace``;
- once the worker has exited, whatever way: SIGKILLs what is left of its group and its
  orphans, reaps them, removes this host's leftovers of its machine
  (``leftovers.remove_leftovers``), says so in one line when it had to, and exits with
  the worker's code (``128 + N`` for signal N, as a shell would).

Only a SIGKILL of the reaper itself skips the clean-up (the worker then still stops: its
stdin pipe closes and it dies with its parent).  Standard library only: it starts fast.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any

from actorflow.errors import LaunchError
from actorflow.launcher.leftovers import check_run_id, remove_leftovers
from actorflow.launcher.supervisor import _die_with_parent

_PR_SET_CHILD_SUBREAPER = 36
_POLL = 0.02  # s between looks at the worker: its exit is noticed this fast
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Options before ``--``, the worker's argv after it."""
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        raise LaunchError("expected OPTIONS -- COMMAND (the worker's argv after --)")
    cut = argv.index("--")
    p = argparse.ArgumentParser(prog="python -m actorflow.launcher.reaper",
                                description="Run a flowlaunch worker; clean its host after.")
    p.add_argument("--run-id", required=True, help="the run whose leftovers to remove")
    p.add_argument("--machine", type=int, required=True, help="the worker's machine id")
    p.add_argument("--grace", type=float, default=2.0,
                   help="seconds between each step of stopping the worker (default 2)")
    opts = p.parse_args(argv[:cut])
    check_run_id(opts.run_id)
    for flag, value in (("--machine", opts.machine), ("--grace", opts.grace)):
        if value < 0:
            raise LaunchError(f"{flag} {value:g}: must not be negative")
    return opts, argv[cut + 1:]


def _become_subreaper() -> None:
    """Orphans below us (a killed worker's unit processes) are re-parented to us."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1)
    except (OSError, AttributeError):
        pass  # not Linux: the worker's process group still catches its units


def _child_setup() -> None:  # in the worker, between fork and exec
    os.setpgid(0, 0)  # a group of its own (its units join it): ours to signal as one
    _die_with_parent()


def _say(msg: str) -> None:
    try:
        print(f"flowlaunch reaper: {msg}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # the ssh session is gone: nobody to tell, keep cleaning


def _relay(into: IO[bytes], on_eof: threading.Event) -> None:
    """ssh stdin -> the worker's stdin, bytes as they come; EOF is the session's end."""
    try:
        while chunk := os.read(0, 4096):
            try:
                into.write(chunk)
                into.flush()
            except OSError:
                return  # the worker is gone: its exit, not EOF, ends the reaper
    except OSError:
        pass
    try:
        into.close()  # the worker sees EOF too, and stops by itself
    except OSError:
        pass
    on_eof.set()


def _exited(pid: int) -> bool:
    """Has the worker exited?  (Not reaped: its group id stays ours to signal.)"""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _our_children() -> set[int]:
    out: set[int] = set()
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                out |= {int(x) for x in f.read().split()}
    except OSError:
        pass
    return out


def _reap_orphans(timeout: float) -> None:
    """SIGKILL and reap every process still below us: the worker is gone, they are its."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            continue
        for c in _our_children():
            try:
                os.kill(c, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(_POLL)


class Reaper:
    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.signum = 0  # a stop signal we received (and forward)
        self.eof = threading.Event()
        self.proc: subprocess.Popen | None = None

    def start(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, preexec_fn=_child_setup)
        assert self.proc.stdin is not None
        threading.Thread(target=_relay, args=(self.proc.stdin, self.eof),
                         name="flowlaunch-reaper-stdin", daemon=True).start()

    def on_signal(self, signum: int, frame: Any) -> None:
        self.signum = self.signum or signum

    def wait(self) -> int:
        """Until the worker exits; stops it when the session ends.  Its exit status."""
        assert self.proc is not None
        pid = self.proc.pid
        term_at = kill_at = None
        while not _exited(pid):
            now = time.monotonic()
            if self.signum and (term_at is None or term_at > now):
                term_at = now
            elif self.eof.is_set() and term_at is None:
                term_at = now + self.grace  # it watches its stdin: let it stop by itself
            if term_at is not None and kill_at is None and now >= term_at:
                _killpg(pid, self.signum or signal.SIGTERM)
                _killpg(pid, signal.SIGCONT)  # a stopped worker must run to stop
                kill_at = now + self.grace
            if kill_at is not None and now >= kill_at:
                _killpg(pid, signal.SIGKILL)
            time.sleep(_POLL)
        _killpg(pid, signal.SIGKILL)  # its unit processes; the group id is still its own
        return self.proc.wait()


def _signame(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def main(argv: list[str] | None = None) -> int:
    try:
        opts, command = parse(sys.argv[1:] if argv is None else argv)
    except LaunchError as e:
        _say(f"error: {e}")
        return 2
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a closed ssh channel: EPIPE, not death
    _become_subreaper()
    reaper = Reaper(opts.grace)
    for s in _STOP_SIGNALS:  # before the worker starts: a stop never finds us unprepared
        signal.signal(s, reaper.on_signal)
    try:
        reaper.start(command)
    except OSError as e:
        _say(f"error: cannot start {command[0]}: {e.strerror or e}")
        return 127
    code = reaper.wait()
    _reap_orphans(timeout=5.0)
    removed = remove_leftovers(opts.run_id, opts.machine)
    what = f"removed {len(removed)} leftover(s) of run {opts.run_id} on this host"
    if code < 0:
        _say(f"the worker of machine {opts.machine} failed: killed by {_signame(-code)}; {what}")
    elif removed:
        _say(f"the worker of machine {opts.machine} exited {code}; {what}")
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
