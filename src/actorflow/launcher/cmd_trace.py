"""``flowlaunch trace``: read what ``--trace DIR`` / ``Session(trace=DIR)`` recorded.

    flowlaunch trace export DIR -o trace.json     # Chrome/Perfetto JSON
    flowlaunch trace check trace.json             # validate an export
    flowlaunch trace summary DIR [--json]         # busy / starved / blocked, latency, path
    flowlaunch trace why-stuck DUMP|DIR [--json]  # explain a hang from a flight dump
    flowlaunch trace why-stuck --pid PID          # ask a live run (SIGUSR1) and explain
    flowlaunch trace replay DIR --actor ID        # replay one actor's messages
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path

from actorflow.errors import TraceError, WaitTimeout

EPILOG = """examples:
  flowlaunch sim examples/sample_pipeline.py --machines 2 --trace /tmp/tr
  flowlaunch trace export /tmp/tr -o /tmp/tr.json    # open in https://ui.perfetto.dev
  flowlaunch trace check /tmp/tr.json
  flowlaunch trace summary /tmp/tr
  flowlaunch trace why-stuck /tmp/tr                 # every machine's dump of the last hang
  flowlaunch trace why-stuck --pid 12345             # a live run: SIGUSR1, then explain
  flowlaunch trace replay /tmp/tr --actor 2
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("trace", help="export, check, summarise, explain hangs, replay",
                       description=__doc__, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ts = p.add_subparsers(dest="trace_command", metavar="ACTION", required=True)
    e = ts.add_parser("export", help="Chrome trace JSON for Perfetto")
    e.add_argument("dir", help="trace directory (from --trace DIR)")
    e.add_argument("-o", "--output", required=True, help="the JSON file to write")
    e.set_defaults(func=_export)
    c = ts.add_parser("check", help="validate an exported Chrome trace JSON")
    c.add_argument("json_file")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.set_defaults(func=_check)
    s = ts.add_parser("summary", help="per actor busy/input/back-pressure, links, critical path")
    s.add_argument("dir")
    s.add_argument("--json", action="store_true", help="one JSON object on stdout")
    s.add_argument("--piece", type=int, default=None, help="piece for the critical path")
    s.set_defaults(func=_summary)
    w = ts.add_parser("why-stuck", help="explain a hang from flight dumps or a live run")
    w.add_argument("paths", nargs="*", help="dump files (*.afdump) or directories")
    w.add_argument("--pid", type=int, help="send SIGUSR1 to this live run and read its dump")
    w.add_argument("--dump-dir", help="where the live run writes dumps (its --trace DIR); "
                                      "default: the run's own dump directory")
    w.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the dump")
    w.add_argument("--json", action="store_true")
    w.set_defaults(func=_why_stuck)
    r = ts.add_parser("replay", help="replay an actor's recorded messages through its state "
                                     "machine and report the first divergence")
    r.add_argument("dir")
    g = r.add_mutually_exclusive_group(required=True)
    g.add_argument("--actor", type=int, help="task id of the actor")
    g.add_argument("--all", action="store_true", help="every recorded actor")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=_replay)


def _export(args: argparse.Namespace) -> int:
    from actorflow.trace.export import export_chrome
    from actorflow.trace.merge import load_trace

    trace = load_trace(args.dir)
    doc = export_chrome(trace, args.output)
    meta = doc["otherData"]["actorflow"]
    print(f"wrote {args.output}: {len(trace.events)} events, {meta['flows']} message flows, "
          f"{len(trace.machines)} machine(s)"
          + (f"; {meta['unmatched_messages']} messages without both ends"
             if meta["unmatched_messages"] else ""))
    return 0


def _check(args: argparse.Namespace) -> int:
    from actorflow.trace.check import check_chrome, load_chrome

    res = check_chrome(load_chrome(args.json_file))
    if args.json:
        print(json.dumps(res.to_dict()))
    elif res.ok:
        print(f"trace check: OK ({res.processes} processes, {res.tracks} tracks, "
              f"{res.slices} slices, {res.flows} flows)")
    else:
        print(f"trace check: {len(res.problems)} problem(s) in {args.json_file}:")
        for prob in res.problems:
            print(f"  {prob}")
    return 0 if res.ok else 1


def _summary(args: argparse.Namespace) -> int:
    from actorflow.trace.merge import load_trace
    from actorflow.trace.summary import format_summary, summarize

    s = summarize(load_trace(args.dir), args.piece)
    print(json.dumps(s) if args.json else format_summary(s))
    return 0


def _why_stuck(args: argparse.Namespace) -> int:
    from actorflow.trace.tracefile import load_dumps
    from actorflow.trace.whystuck import analyze_dumps, format_report

    if args.pid is not None:
        paths = _ask_live(args.pid, args.dump_dir, args.timeout)
    elif args.paths:
        paths = args.paths
    else:
        raise TraceError("why-stuck needs a dump file/directory or --pid PID")
    dumps = [d for p in paths for d in load_dumps(p)]
    report = analyze_dumps(dumps)
    if args.json:
        print(json.dumps({"dumps": [d["path"] for d in dumps], **report.to_dict()}))
    else:
        for d in dumps:
            reason = d.get("reason", "")
            err = f": {d['error']}" if d.get("error") else ""
            print(f"dump {d['path']} ({reason}{err})")
        print(format_report(report))
    return 0


def _ask_live(pid: int, dump_dir: str | None, timeout: float) -> list[str]:
    """SIGUSR1 to ``pid`` (a Session's process, a worker, or a local flowlaunch launcher,
    which forwards it to its workers); return the dumps that appear (every process's)."""
    from actorflow.trace.recorder import default_dump_dir

    d = Path(dump_dir) if dump_dir else default_dump_dir(pid)
    before = set(d.rglob("*.afdump")) if d.is_dir() else set()
    _check_catches_usr1(pid)
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError as e:
        raise TraceError(f"no process {pid} to ask for a state dump") from e
    except PermissionError as e:
        raise TraceError(f"not allowed to signal process {pid}") from e
    deadline = time.monotonic() + timeout
    new: set[Path] = set()
    while time.monotonic() < deadline:
        found = (set(d.rglob("*.afdump")) - before) if d.is_dir() else set()
        if found and found == new:  # nothing more arrived for a moment: every process dumped
            return [str(p) for p in sorted(found)]
        new = found
        time.sleep(0.3)
    if new:
        return [str(p) for p in sorted(new)]
    raise WaitTimeout(f"waited {timeout:.1f}s for process {pid} to write a state dump in {d} "
                      "after SIGUSR1 (is it an actorflow run? pass --dump-dir if it traces "
                      "to a directory)")


def _check_catches_usr1(pid: int) -> None:
    """Refuse, before signalling, a process that does not handle SIGUSR1: for it the signal's
    default action is to terminate, and only actorflow runs (a Session, a worker, a
    launcher) install the handler that dumps their state."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except FileNotFoundError as e:
        raise TraceError(f"no process {pid} to ask for a state dump") from e
    except OSError:
        return  # no /proc (not Linux): cannot tell, keep the old behaviour
    caught = int(fields.get("SigCgt", "0").strip() or "0", 16)
    if not caught & (1 << (signal.SIGUSR1 - 1)):
        name = fields.get("Name", "?").strip()
        raise TraceError(f"process {pid} ({name}) is not an actorflow run: it does not handle "
                         "SIGUSR1, which would kill it; nothing was sent. Pass the pid of a "
                         "flowlaunch launcher or worker, or of a Python process with a Session")


def _replay(args: argparse.Namespace) -> int:
    from actorflow.trace.replay import replay_actor, replay_all

    results = replay_all(args.dir) if args.all else [replay_actor(args.dir, args.actor)]
    if args.json:
        print(json.dumps([r.to_dict() for r in results]))
    else:
        for r in results:
            print(r.format())
    return 0 if all(r.ok for r in results) else 1
