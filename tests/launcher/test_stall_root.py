"""A stall's root cause names the machine, task, op and unit that hold it, through
``flowlaunch sim --stall-timeout`` and ``trace why-stuck``, whichever rank's watchdog
speaks first: the launcher merges every rank's flight dump before it blames a machine.

Cases with a known cause: an actor inside a kernel that does not return (on the last of 2
or 3 machines, so the machines before it only see an actor waiting across the wire); a
consumer that never ACKs because its own downstream is stuck; the upstream rank speaking
first by construction (``sim``, and ``run`` where the control plane carries the root); a
frozen (SIGSTOPped) unit process; a frozen rank 0, which hosts the master.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import textwrap
import threading
import time

import pytest

from actorflow.launcher.stall_root import merged_root
from actorflow.trace.tracefile import load_dumps
from actorflow.trace.whystuck import analyze_dumps
from tests.launcher.helpers import JOBS, cmdline, install_fake_ssh, tagged_pids
from tests.launcher.test_failures import EXEC, _wait_for_line, _worker_pid

# src -> mid -> stuck -> after, one stage per machine from the end: on 3 machines "mid"
# (machine 1) never ACKs src because its own downstream (machine 2) is stuck
STUCK_JOB = textwrap.dedent('''
    import actorflow as af

    def build_plan(machines=2):
        b = af.PlanBuilder(machines=machines, register_num=1, name="stuck_job")
        x = b.source("random_normal", {"shape": [4], "dtype": "float32", "seed": 1},
                     piece_num=8, machine=0, name="src")
        h = b.op("relu", x, machine=machines - 2, name="mid")
        h = b.op("sleep", h, ms=60000.0, only_piece=2, machine=machines - 1, name="stuck")
        b.output("y", b.op("relu", h, machine=machines - 1, name="after"))
        return b.build()
''')


def _tasks(job, machines: int) -> dict:
    plan = runpy.run_path(str(job))["build_plan"](machines)
    return {t.label: t for t in plan.tasks}


def _headline(err: str) -> str:
    return err[err.index("flowlaunch: run failed"):].splitlines()[0]


def _starred(err: str) -> list[str]:
    table = err[err.index("flowlaunch: run failed"):].splitlines()
    return [row.split()[1] for row in table if row.startswith("*")]


@pytest.mark.parametrize("machines,unit,trace", [(2, "thread", True), (2, "process", True),
                                                 (3, "thread", False)])
def test_stuck_kernel_is_named_with_its_machine_unit_and_op(flowlaunch, tmp_path, machines,
                                                            unit, trace):
    job = tmp_path / "stuck_job.py"
    job.write_text(STUCK_JOB)
    stuck = _tasks(job, machines)["stuck"]
    m, thrd = stuck.machine_id, stuck.thrd_id
    root = (f"root: task {stuck.task_id} (stuck) is inside its kernel on piece 2 "
            f"[task {stuck.task_id} runs on machine {m}, unit m{m}-t{thrd}, op sleep]")
    d = tmp_path / "tr"  # with no --trace the dumps go to the launcher's dump directory
    r = flowlaunch.run("sim", job, "--machines", machines, "--unit", unit,
                       *(["--trace", d] if trace else []), "--stall-timeout", "2",
                       "--quiet", timeout=60, env={"ACTORFLOW_DUMP_DIR": str(tmp_path / "dumps")})
    assert r.returncode == 1, r.stderr
    head = _headline(r.stderr)
    assert head.startswith(f"flowlaunch: run failed: machine {m} (rank {m} on "), head
    assert f"stall (every machine's dump merged): {root}" in head, head
    assert _starred(r.stderr) == [str(m)], r.stderr
    # the merged graph also holds the machines upstream: every actor of the run waits on it
    waiting = len(_tasks(job, machines)) - 1
    assert f"; {waiting} actors wait on it" in head, head
    # why-stuck on the directory the launcher names merges one dump per machine alike
    hint = r.stderr.splitlines()[-1]  # right after the failure table
    assert hint.startswith("every machine's actors: flowlaunch trace why-stuck "), r.stderr
    where = hint.rsplit(" ", 1)[1]
    assert where == str(d.resolve()) if trace else where.startswith(str(tmp_path / "dumps"))
    res = flowlaunch.run("trace", "why-stuck", where, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert len(doc["dumps"]) == machines
    assert doc["root"] == {"task": stuck.task_id, "label": "stuck", "machine": m,
                           "thrd": thrd, "unit": f"m{m}-t{thrd}", "op_types": ["sleep"]}
    assert doc["sentence"].startswith(root)
    assert tagged_pids(flowlaunch.tags[-1]) == []


# machine 1 keeps acting on a side branch (busy: 40 x 100 ms) while its "stuck" kernel holds
# the main chain: its watchdog sees progress, so rank 0's speaks first, by construction
BUSY_SIDE_JOB = STUCK_JOB.replace("    return b.build()", textwrap.indent(textwrap.dedent('''
    z = b.source("random_normal", {"shape": [4], "dtype": "float32", "seed": 2},
                 piece_num=40, machine=machines - 1, name="busy_src")
    b.output("z", b.op("sleep", z, ms=100.0, machine=machines - 1, name="busy"))
    return b.build()'''), "    ").lstrip("\n"))
assert "busy_src" in BUSY_SIDE_JOB


def test_rank_that_speaks_first_does_not_decide_the_root(flowlaunch, tmp_path):
    """Rank 0's watchdog reports first (machine 1 still progresses on its side branch) and
    can only name its own actor waiting across the wire; the launcher still blames machine
    1's stuck kernel, and the merge of the dumps is the same in either order."""
    job = tmp_path / "busy_side.py"
    job.write_text(BUSY_SIDE_JOB)
    tasks = _tasks(job, 2)
    stuck = tasks["stuck"]
    d = tmp_path / "tr"
    r = flowlaunch.run("sim", job, "--machines", 2, "--trace", d, "--stall-timeout", "0.3",
                       "--quiet", timeout=60)
    assert r.returncode == 1, r.stderr
    logs = r.stdout + r.stderr  # the workers' lines, prefixed with their rank
    first = next(x for x in logs.splitlines() if "master: run failed:" in x)
    assert first.startswith("[rank 0] "), first
    # alone, rank 0 names its own waiting actor and where the holder lives, from its share
    net = next(t for t in tasks.values() if t.task_type == "comm_net")
    assert (f"root: task {tasks['mid'].task_id} (mid) waits for a free regst of desc "
            f"{next(iter(tasks['mid'].produced.values())).regst_desc_id} held by task "
            f"{net.task_id} [task {tasks['mid'].task_id} runs on machine 0") in first, first
    assert (f"task {net.task_id} (machine 1, unit m1-t{net.thrd_id}) is on another machine"
            in first), first
    assert "[rank 1] actorflow: watchdog" not in logs
    head = _headline(r.stderr)
    assert head.startswith("flowlaunch: run failed: machine 1 (rank 1 on "), head
    assert (f"root: task {stuck.task_id} (stuck) is inside its kernel on piece 2 [task "
            f"{stuck.task_id} runs on machine 1, unit m1-t{stuck.thrd_id}, op sleep]") in head
    assert _starred(r.stderr) == ["1"], r.stderr
    # rank 0 dumped as it stalled, rank 1 when the master aborted it
    dumps = load_dumps(d)
    by_machine = {next(iter(x["tasks"].values()))["machine_id"]: x for x in dumps}
    assert {m: x["reason"] for m, x in by_machine.items()} == {0: "stalled", 1: "aborted"}
    alone = analyze_dumps([by_machine[0]])  # what rank 0's watchdog saw by itself
    assert alone.remote and alone.roots[0] == tasks["mid"].task_id
    merged = [analyze_dumps(order) for order in (dumps, dumps[::-1])]
    assert [m.roots[0] for m in merged] == [stuck.task_id] * 2
    assert merged[0].sentence == merged[1].sentence and merged[0].sentence in head
    # without machine 1's dump there is no merged root: the launcher keeps the first error
    assert merged_root([d], {by_machine[0]["pid"]}) is None
    found = merged_root([d], {x["pid"] for x in dumps})
    assert found is not None and found[1] == 1


def _unit_pids(tag: str, worker: int, n: int, timeout: float = 20.0) -> list[int]:
    """The worker's unit processes in spawn order (its units' thrd order)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = sorted(p for p in tagged_pids(tag)
                      if "actorflow.actors.process_unit" in cmdline(p) and _ppid(p) == worker)
        if len(pids) == n:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"worker {worker} never had {n} unit processes")


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


@pytest.mark.parametrize("first", ["watchdog", "frozen check"])
def test_frozen_unit_process_is_the_root_not_its_neighbours(flowlaunch, first):
    """Whichever speaks first, the run is blamed on machine 1 and the stopped unit, never on
    machine 0.  The order is set, not raced: the watchdogs' stall timeout (3 s) against the
    node's frozen-unit check (``ACTORFLOW_FROZEN_AFTER``: 60 s, or 1 s with no watchdog)."""
    tasks = _tasks(JOBS / "slow_pipeline.py", 2)
    victim_task = tasks["sleep_m1"]
    units = sorted({t.thrd_id for t in tasks.values() if t.machine_id == 1})
    if first == "watchdog":
        extra, env = ["--stall-timeout", "3"], {"ACTORFLOW_FROZEN_AFTER": "60"}
    else:
        extra, env = [], {"ACTORFLOW_FROZEN_AFTER": "1"}
    tag, p = flowlaunch.start("sim", *EXEC, JOBS / "slow_pipeline.py", "--machines", 2,
                              "--unit", "process", *extra, env=env)
    _wait_for_line(p.stderr, "progress:", 30)
    worker = _worker_pid(tag, 1)
    unit_pid = _unit_pids(tag, worker, len(units))[units.index(victim_task.thrd_id)]
    os.kill(unit_pid, signal.SIGSTOP)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 1, err
    head = _headline(err)
    assert head.startswith("flowlaunch: run failed: machine 1 (rank 1 on "), head
    assert _starred(err) == ["1"], err
    unit = f"m1-t{victim_task.thrd_id}"
    if first == "watchdog":  # the silent actor is the root
        assert "stall" in head, head
        assert (f"root: task {victim_task.task_id} (sleep_m1) gave no state: its unit did "
                f"not answer") in head, head
        assert (f"[task {victim_task.task_id} runs on machine 1, unit {unit}, op sleep]"
                in head), head
    else:
        assert f"unit process {unit} (machine 1, thrd {victim_task.thrd_id}, pid " \
               f"{unit_pid}) is stopped" in head, head
    assert tagged_pids(tag) == []


def test_frozen_master_is_named_even_with_a_stall_timeout(flowlaunch):
    """Rank 0 (it hosts the master) stopped: rank 1's watchdog (3 s) speaks first but can
    only report to a master that does not listen; the launcher's frozen check (6 s, set so
    it comes second) names the frozen rank 0, not rank 1."""
    tag, p = flowlaunch.start("sim", *EXEC, JOBS / "slow_pipeline.py", "--machines", 2,
                              "--stall-timeout", "3", env={"ACTORFLOW_FROZEN_AFTER": "6"})
    _wait_for_line(p.stderr, "progress:", 30)
    os.kill(_worker_pid(tag, 0), signal.SIGSTOP)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 1, err
    head = _headline(err)
    assert head.startswith("flowlaunch: run failed: machine 0 (rank 0 on "), head
    assert "process stopped (frozen for 6s or more" in head, head
    assert _starred(err) == ["0"], err
    assert tagged_pids(tag) == []


def test_run_over_ssh_the_master_keeps_the_aborted_ranks_own_root(flowlaunch, tmp_path):
    """``flowlaunch run`` (a fake ssh runs the workers here): on real hosts the launcher
    cannot read the workers' dumps, so the control plane carries the root too: the aborted
    rank offers its own (an act in flight) and the master's summary keeps it instead of
    rank 0's, whose root only waited across the wire."""
    bin_dir = tmp_path / "bin"
    install_fake_ssh(bin_dir)
    job = tmp_path / "busy_side.py"
    job.write_text(BUSY_SIDE_JOB)
    stuck = _tasks(job, 2)["stuck"]
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "ACTORFLOW_DUMP_DIR": str(tmp_path / "dumps")}
    r = flowlaunch.run("run", job, "--hosts", "127.0.0.1,localhost", "--master-port", 0,
                       "--stall-timeout", "0.3", "--json", env=env, timeout=60)
    assert r.returncode == 1, r.stderr
    logs = r.stdout + r.stderr
    first = next(x for x in logs.splitlines() if "master: run failed:" in x)
    assert first.startswith("[rank 0] ") and "is on another machine" in first, first
    own = (f"stall on machine 1 (asked after machine 0's watchdog): root: task "
           f"{stuck.task_id} (stuck) is inside its kernel on piece 2 [task {stuck.task_id} "
           f"runs on machine 1, unit m1-t{stuck.thrd_id}, op sleep]")
    assert f"[rank 0] flowlaunch worker: master: root cause: {own}" in logs
    doc = json.loads(r.stdout.strip().splitlines()[-1])
    assert doc["error"]["rank"] == 1 and doc["error"]["message"].startswith(own), doc
    head = _headline(r.stderr)
    assert head.startswith("flowlaunch: run failed: machine 1 (rank 1 on localhost"), head
    assert _starred(r.stderr) == ["1"], r.stderr


@pytest.mark.parametrize("remote", [True, False])
def test_master_takes_an_offered_root_only_over_a_remote_stall(remote):
    """The master's rule on its own (real sockets): a malformed root offer is dropped and
    counted; a valid one replaces a first stall error whose root waited across the wire,
    and never a first error that had a root of its own."""
    from actorflow.launcher.client import Aborted
    from actorflow.launcher.master import ControlMaster
    from actorflow.launcher.ports import free_port
    from tests.launcher.test_control import _client, _in_threads, sample_pipeline

    m = ControlMaster(2, sample_pipeline.build_plan, "127.0.0.1", free_port(), run_id="t",
                      heartbeat_timeout=5.0, join_timeout=20)
    m.start()
    joined = threading.Barrier(2)
    other_said_bye = threading.Event()

    def stalled():
        c = _client(m, 0)
        try:
            c.sync_clock()
            c.hello("h0", 1, 10)
            joined.wait()
            c.send("error", error={"message": "watchdog: root: task 1 waits ...",
                                   "kind": "StallError", "remote_root": remote})
            assert other_said_bye.wait(30)  # connected until machine 1 offered its root
        finally:
            c.close()

    def aborted():
        c = _client(m, 1)
        try:
            c.sync_clock()
            c.hello("h1", 2, 10)
            joined.wait()
            with pytest.raises(Aborted):
                for _ in range(100):
                    c.poll(0.05)
            c.send("root", sentence=5, evidence="kernel")  # malformed: dropped
            c.send("root", sentence="root: task 2 (stuck) is inside its kernel",
                   evidence="kernel")
            c.send("bye")
        finally:
            other_said_bye.set()
            c.close()

    try:
        _in_threads(stalled, aborted)
        deadline = time.monotonic() + 5
        while m.phase != "closed" and not m.finished.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        if remote:
            assert m.error["rank"] == 1 and m.error["message"] == (
                "stall on machine 1 (asked after machine 0's watchdog): root: task 2 (stuck) "
                "is inside its kernel")
        else:
            assert m.error["rank"] == 0 and m.error["message"].startswith("watchdog:")
        assert sum(m.ignored.values()) == 1  # the malformed offer
    finally:
        m.close()
