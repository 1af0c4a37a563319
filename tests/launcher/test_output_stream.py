"""Output pieces stream from the output actors to the launcher: flat memory, --out as they come.

Real ``flowlaunch sim`` runs; the launcher's resident memory is sampled from /proc while
it receives far more output bytes than it could hold.
"""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest

from tests.launcher.helpers import JOBS, cmdline, tagged_pids
from tests.launcher.test_failures import _wait_for_line, _worker_pid
from tests.launcher.test_frozen import _ppid

JOB = JOBS / "stream_pieces.py"
WIDTH = 2048  # float64: 16 KiB per piece


def _sample_rss(p, limit: float) -> list[int]:
    """The launcher's RSS (KiB) every 20 ms until it exits (or ``limit`` s pass)."""
    samples = []
    deadline = time.monotonic() + limit
    while p.poll() is None and time.monotonic() < deadline:
        rss = _rss_kib(p.pid)
        if rss is not None:
            samples.append(rss)
        time.sleep(0.02)
    return samples


def _rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def test_launcher_memory_stays_flat_without_out(flowlaunch):
    pieces = 40_000  # 625 MiB of output through the launcher
    _tag, p = flowlaunch.start("sim", JOB, "--pieces", str(pieces), "--json", "--quiet")
    samples = _sample_rss(p, 120)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    summary = json.loads(out)
    assert summary["outputs"] == {"y": pieces}
    assert summary["pieces"] == pieces
    assert len(samples) > 20, "the run was too short to sample"
    peak_mib = max(samples) / 1024
    data_mib = pieces * WIDTH * 8 / 2**20
    assert peak_mib < 200, f"launcher RSS peaked at {peak_mib:.0f} MiB for {data_mib:.0f} MiB"
    # no growth with the number of pieces: the second half of the run stays within 10% of
    # the data volume of the first half's level (a slow launcher on a loaded box may have
    # a backlog of batches in its socket buffers for a moment, but never the run's output)
    half = samples[len(samples) // 2:]
    growth_mib = (max(half) - min(samples[:len(samples) // 2])) / 1024
    assert growth_mib < data_mib / 10, f"launcher RSS grew by {growth_mib:.0f} MiB"


def test_out_is_written_as_pieces_arrive_and_reads_back(flowlaunch, tmp_path):
    out = tmp_path / "y.npz"
    pieces = 3000
    r = flowlaunch.run("sim", JOB, "--machines", "2", "--unit", "process", "--pieces",
                       str(pieces), "--out", out, "--json", "--quiet", timeout=90)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"] == {"y": pieces}
    with np.load(out) as got:
        y = got["y"]
    assert y.shape == (pieces, WIDTH) and y.dtype == np.float64
    np.testing.assert_array_equal(y, np.arange(WIDTH) + np.arange(pieces)[:, None])
    assert [f.name for f in tmp_path.iterdir()] == ["y.npz"]  # no spill files left


@pytest.mark.slow
def test_a_million_pieces_stream_to_out_with_flat_memory(flowlaunch, tmp_path):
    """10**6 pieces of 128 bytes (122 MiB) through the launcher into ``--out``: its memory
    does not grow with the pieces, and the file holds every piece with its numbers."""
    pieces, width = 1_000_000, 16
    out = tmp_path / "y.npz"
    _tag, p = flowlaunch.start("sim", JOBS / "tiny_pieces.py", "--pieces", str(pieces),
                               "--unit", "thread", "--out", out, "--json", "--quiet")
    samples = _sample_rss(p, 240)
    stdout, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert json.loads(stdout)["outputs"] == {"y": pieces}
    assert len(samples) > 100, "the run was too short to sample"
    data_mib = pieces * width * 8 / 2**20
    quarter = len(samples) // 4
    settled = min(samples[quarter:2 * quarter]) / 1024  # after start-up, a quarter in
    growth_mib = max(samples[2 * quarter:]) / 1024 - settled
    # a launcher that held the pieces (or a Python int per piece id) would grow by the
    # data's size (122 MiB) or more; building the .npz at the end takes ~16 MiB of buffers
    # whatever the number of pieces
    assert growth_mib < data_mib / 4, (
        f"launcher RSS grew by {growth_mib:.0f} MiB over the second half of "
        f"{data_mib:.0f} MiB of output (from {settled:.0f} MiB)")
    with np.load(out) as got:
        y = got["y"]
    assert y.shape == (pieces, width) and y.dtype == np.int64
    np.testing.assert_array_equal(y[:, 0], np.arange(pieces))
    np.testing.assert_array_equal(y[:, 1:] - y[:, :1], np.broadcast_to(np.arange(1, width),
                                                                       (pieces, width - 1)))


def _units_of(tag: str, worker: int) -> list[int]:
    return [q for q in tagged_pids(tag)
            if "actorflow.actors.process_unit" in cmdline(q) and _ppid(q) == worker]


def _wait_gone(tag: str, worker: int, limit: float) -> None:
    deadline = time.monotonic() + limit
    while _units_of(tag, worker) and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_units_last_batches_arrive_intact_after_its_node_was_paused(flowlaunch, tmp_path):
    """A unit process's output batches and DONE leave as zero-copy frames that libzmq sends
    after ``send`` returned.  Machine 1's node is paused (SIGSTOP) while its units finish
    and exit; the batches they queued must still reach it whole once it resumes.  (Before
    the fix the interpreter's exit freed them first: the batch arrived with malloc's
    free-list pointers in its first row, or the unit's last messages never arrived.)"""
    out = tmp_path / "y.npz"
    tag, p = flowlaunch.start(
        "sim", "--start-method", "exec", JOBS / "paused_sink.py", "--machines", "2",
        "--unit", "process", "--out", out, "--json", "--heartbeat-timeout", "120",
        env={"ACTORFLOW_FROZEN_AFTER": "120"})  # the pause is the test's, not a failure
    _wait_for_line(p.stderr, "progress:", 60)
    node0, node1 = _worker_pid(tag, 0), _worker_pid(tag, 1)
    os.kill(node1, signal.SIGSTOP)
    try:
        assert _units_of(tag, node1), "machine 1's units were gone before the pause"
        _wait_gone(tag, node0, 60)  # machine 0 is done: every piece landed on machine 1
        assert not _units_of(tag, node0), "machine 0 did not finish while machine 1 paused"
        # machine 1 then has a few pieces left to deliver; a unit whose queued frames are
        # freed at exit is gone within this, one that waits for libzmq stays
        _wait_gone(tag, node1, 2.0)
    finally:
        os.kill(node1, signal.SIGCONT)
    stdout, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    pieces = 600
    assert json.loads(stdout)["outputs"] == {"y": pieces}
    with np.load(out) as got:
        y = got["y"]
    assert y.shape == (pieces, WIDTH) and y.dtype == np.float64
    np.testing.assert_array_equal(y, np.arange(WIDTH) + np.arange(pieces)[:, None])
