"""Helpers for launcher tests: run flowlaunch as a subprocess, find a run's processes.

Every launcher run gets a unique ``ACTORFLOW_TEST_TAG`` in its environment; children
inherit it, so ``tagged_pids(tag)`` finds every process of the run (workers, their units,
fake ssh) by reading /proc/<pid>/environ.  The ``flowlaunch`` fixture kills any tagged
process left at the end of a test, and the test can assert there were none.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent
JOBS = HERE / "jobs"
REPO = HERE.parent.parent
SAMPLE = REPO / "examples" / "sample_pipeline.py"


def tagged_pids(tag: str) -> list[int]:
    out = []
    needle = f"ACTORFLOW_TEST_TAG={tag}".encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{d}/stat") as f:
                state = f.read().split(") ", 1)[1][0]
        except OSError:
            continue
        if needle in env.split(b"\0") and state != "Z":
            out.append(int(d))
    return out


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode() for a in f.read().split(b"\0") if a]
    except OSError:
        return []


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


class Launcher:
    """Runs ``python -m actorflow.launcher.cli ARGS`` with a unique tag; reaps everything."""

    def __init__(self) -> None:
        self.tags: list[str] = []
        self.procs: list[subprocess.Popen] = []

    def env(self, extra: dict | None = None) -> tuple[str, dict]:
        tag = uuid.uuid4().hex[:12]
        self.tags.append(tag)
        env = dict(os.environ, ACTORFLOW_TEST_TAG=tag, PYTHONUNBUFFERED="1")
        env.update(extra or {})
        return tag, env

    def start(self, *args: str, env: dict | None = None, cwd: str | None = None,
              prefix: list[str] | None = None) -> tuple[str, subprocess.Popen]:
        tag, full_env = self.env(env)
        argv = (prefix or [sys.executable, "-m", "actorflow.launcher.cli"]) + [str(a) for a in args]
        p = subprocess.Popen(argv, env=full_env, cwd=cwd or str(REPO), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.procs.append(p)
        return tag, p

    def run(self, *args: str, timeout: float = 60.0, env: dict | None = None,
            cwd: str | None = None, prefix: list[str] | None = None) -> Result:
        _tag, p = self.start(*args, env=env, cwd=cwd, prefix=prefix)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            pytest.fail(f"flowlaunch {' '.join(map(str, args))} hung for {timeout}s:\n{err}")
        return Result(p.returncode, out, err)

    def cleanup(self) -> list[int]:
        left = []
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.communicate()
        for tag in self.tags:
            for pid in tagged_pids(tag):
                left.append(pid)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        return left




def install_fake_ssh(bin_dir: Path) -> Path:
    """Put an executable ``ssh`` (tests/launcher/fake_ssh.py) first on a PATH dir."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    ssh = bin_dir / "ssh"
    ssh.write_text(f"#!{sys.executable}\n" + (HERE / "fake_ssh.py").read_text())
    ssh.chmod(0o755)
    return ssh
