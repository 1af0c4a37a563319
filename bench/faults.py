"""Kill/stop campaign: random SIGKILL and SIGSTOP of workers, unit processes and the master.

    python bench/faults.py [--trials 4] [--seed 0] [--machines 3] [--quick] [--json OUT.jsonl]

Each trial starts ``flowlaunch sim`` of a long pipeline (sleep kernels on every machine,
process units so unit processes exist), waits until pieces flow, then sends one signal to
one process chosen at random among: a worker of rank >= 1, the master (rank 0's worker), a
unit process of any machine.  It measures, per kind of fault:

- detected: the launcher exited non-zero with a "run failed" line (not a timeout);
- seconds to detect: from the signal to that line (goal <= 3 s for every kind);
- root cause right: the line names the machine that was hit (a unit process: its machine);
- leftovers after the launcher exited: processes of the run, /dev/shm segments and ipc
  socket directories named after the run (goal 0).

The baseline, measured in the same run, is the configured heartbeat timeout (2 s): the time
a lost machine is allowed to stay silent before the master declares it lost.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import Report, bench_args

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "tests" / "launcher" / "jobs" / "slow_pipeline.py"
HEARTBEAT = 2.0
KINDS = [(sig, who) for who in ("worker", "master", "unit")
         for sig in (signal.SIGKILL, signal.SIGSTOP)]


def _env_has(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return needle in f.read().split(b"\0")
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def tagged(tag: str) -> list[int]:
    needle = f"ACTORFLOW_BENCH_TAG={tag}".encode()
    return [int(d) for d in os.listdir("/proc") if d.isdigit() and _env_has(int(d), needle)
            and _alive(int(d))]


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode() for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def workers(tag: str) -> dict[int, int]:
    """rank -> pid of each worker process of the run."""
    out = {}
    for pid in tagged(tag):
        argv = _cmdline(pid)
        if "worker" in argv and "--rank" in argv:
            out[int(argv[argv.index("--rank") + 1])] = pid
    return out


def units(tag: str, worker_pid: int) -> list[int]:
    return [p for p in tagged(tag) if "actorflow.actors.process_unit" in _cmdline(p)
            and _ppid(p) == worker_pid]


def leftovers(tag: str, run_id: str) -> tuple[int, int, int]:
    procs = len(tagged(tag))
    shm = len([n for n in os.listdir("/dev/shm") if n.startswith("actorflow") and run_id in n])
    tmp = tempfile.gettempdir()
    ipc = len([n for n in os.listdir(tmp) if n.startswith(f"actorflow-{run_id}")])
    return procs, shm, ipc


def trial(sig: signal.Signals, who: str, machines: int, rng: random.Random) -> dict:
    tag = uuid.uuid4().hex[:12]
    env = dict(os.environ, ACTORFLOW_BENCH_TAG=tag, PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-m", "actorflow.launcher.cli", "sim", str(JOB),
                          "--machines", str(machines), "--unit", "process",
                          "--start-method", "exec",  # workers told apart by their argv
                          "--heartbeat-timeout", str(HEARTBEAT)],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        assert p.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "progress:" not in p.stderr.readline():
            pass
        ws = workers(tag)
        run_argv = _cmdline(ws[0])
        run_id = run_argv[run_argv.index("--run-id") + 1]
        if who == "master":
            rank, victim = 0, ws[0]
        elif who == "worker":
            rank = rng.randrange(1, machines)
            victim = ws[rank]
        else:
            rank = rng.randrange(machines)
            victim = rng.choice(units(tag, ws[rank]))
        t0 = time.monotonic()
        os.kill(victim, sig)
        head, t_detect = "", None
        for line in p.stderr:
            if line.startswith("flowlaunch: run failed"):
                head, t_detect = line.strip(), time.monotonic() - t0
                break
        p.stderr.read()  # the failure table, to the end (the launcher exits after it)
        p.wait(60)
        procs, shm, ipc = leftovers(tag, run_id)
        return {"kind": f"{sig.name} {who}", "rank": rank, "detected": t_detect is not None
                and p.returncode != 0, "seconds": t_detect,
                "root_right": head.startswith(f"flowlaunch: run failed: machine {rank} "),
                "procs": procs, "shm": shm, "ipc": ipc, "head": head}
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        for pid in tagged(tag):  # never leave a bench process behind, whatever happened
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=4, help="trials per kind of fault")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--machines", type=int, default=3)
    args = bench_args(ap, "one SIGKILL of a unit process, 2 machines").parse_args()
    kinds = KINDS
    if args.quick:
        kinds, args.trials, args.machines = [(signal.SIGKILL, "unit")], 1, 2
    rng = random.Random(args.seed)
    plan = [k for k in kinds for _ in range(args.trials)]
    rng.shuffle(plan)
    results = []
    for i, (sig, who) in enumerate(plan):
        r = trial(sig, who, args.machines, rng)
        results.append(r)
        secs = "-" if r["seconds"] is None else f"{r['seconds']:.2f}s"
        print(f"[{i + 1}/{len(plan)}] {r['kind']} (machine {r['rank']}): {secs} "
              f"root {'ok' if r['root_right'] else 'WRONG'}; left {r['procs']} procs, "
              f"{r['shm']} shm, {r['ipc']} ipc dirs | {r['head'][:140]}", flush=True)
    rows = []
    for sig, who in kinds:
        rs = [r for r in results if r["kind"] == f"{sig.name} {who}"]
        secs = [r["seconds"] for r in rs if r["seconds"] is not None]
        med = statistics.median(secs) if secs else float("nan")
        rows.append([f"{sig.name} {who}", len(rs), sum(r["detected"] for r in rs),
                     med, max(secs) if secs else float("nan"), HEARTBEAT, med / HEARTBEAT,
                     sum(r["root_right"] for r in rs), sum(r["procs"] for r in rs),
                     sum(r["shm"] for r in rs), sum(r["ipc"] for r in rs)])
    Report(__file__, args).table(
        "campaign", f"fault campaign: {len(results)} trials, {args.machines} machines, process "
        f"units, heartbeat timeout {HEARTBEAT:g} s (the baseline)",
        ["fault", "trials", "detected", "median s to detect", "max s", "heartbeat timeout s",
         "median / heartbeat timeout", "root cause right", "leftover procs",
         "leftover shm", "leftover ipc dirs"], rows,
        figure="median s to detect", unit="s", baseline="heartbeat timeout s",
        ratio="median / heartbeat timeout", keys=["fault", "trials"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
