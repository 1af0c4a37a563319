"""Hang diagnosis: actor states -> a wait-for graph -> one sentence naming the cause.

Input is plain data: every actor's ``blocked_on()`` dict (from a flight dump, a live
SIGUSR1 dump or the watchdog) and the plan's task info (``tracefile.plan_info``).  An edge
``A -> B`` means "A cannot act until B does something": A waits for READY on a desc B
produces, or for the ACK of a regst B still holds.  The report names a cycle if there is
one, else the root: an actor stuck inside its kernel, waiting on the client, waiting on
an actor that already exited or does not hold what it is blamed for (a lost message), or
an actor the plan places here that gave no state at all (its unit process is stopped or
does not answer: it is the cause, not the neighbours that wait for it).  The root is
named with its machine, unit and op types.  One machine's dump may only show an actor
waiting across the wire (``remote``); the merge of every machine's dumps
(``analyze_dumps``) names the true root, and does not depend on the dumps' order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CLIENT = -1


@dataclass
class Wait:
    """One reason an actor cannot act."""

    what: str  # "input" | "output" | "ack" | "kernel" | "client" | "silent"
    desc: int
    on: list[int]  # the actors (or CLIENT) it waits for
    lost: bool = False  # the blamed actor exited or does not hold the regst
    detail: str = ""


@dataclass
class StuckReport:
    sentence: str
    cycle: list[int]
    roots: list[int]
    waits: dict[int, list[Wait]]
    lines: list[str] = field(default_factory=list)  # one line per live actor
    pending: bool = False  # some actor has work it cannot finish
    remote: bool = False  # the root only waits for actors this dump does not hold
    root: dict | None = None  # where the root actor lives: task, label, machine, thrd, ops

    @property
    def evidence(self) -> str:
        """What shows the named root is stuck by itself: "lost", "kernel", "silent", or ""
        (a cycle, nothing stuck, or a root that only waits across the wire)."""
        if self.root is None or self.remote:
            return ""
        ws = self.waits.get(self.root["task"], [])
        return next((k for k, hit in (("lost", any(w.lost for w in ws)),
                                      ("kernel", any(w.what == "kernel" for w in ws)),
                                      ("silent", any(w.what == "silent" for w in ws))) if hit), "")

    def to_dict(self) -> dict:
        return {
            "sentence": self.sentence, "cycle": self.cycle, "roots": self.roots,
            "root": self.root, "pending": self.pending, "actors": self.lines,
            "edges": {t: sorted({o for w in ws for o in w.on}) for t, ws in self.waits.items()},
        }


def _name(tasks: dict[int, dict], tid: int) -> str:
    if tid == CLIENT:
        return "the client"
    t = tasks.get(tid)
    return f"task {tid} ({t['label']})" if t else f"task {tid}"


def where(tasks: dict[int, dict], tid: int) -> dict | None:
    """The machine, unit and op types of a task the dump's plan info knows."""
    t = tasks.get(tid)
    if t is None:
        return None
    return {"task": tid, "label": t.get("label", ""), "machine": t.get("machine_id"),
            "thrd": t.get("thrd_id"), "unit": f"m{t.get('machine_id')}-t{t.get('thrd_id')}",
            "op_types": list(t.get("op_types", []))}


def _place(loc: dict | None) -> str:
    if loc is None:
        return ""
    ops = ", ".join(loc["op_types"])
    return (f" [task {loc['task']} runs on machine {loc['machine']}, unit {loc['unit']}"
            f"{', op ' + ops if ops else ''}]")


def _producers(tasks: dict[int, dict]) -> dict[int, int]:
    return {int(d): tid for tid, t in tasks.items() for d in t.get("produced", {})}


def actor_waits(states: list[dict], tasks: dict[int, dict],
                origin: dict[int, int] | None = None) -> dict[int, list[Wait]]:
    """Why each live actor is not acting, with whom it waits for.  ``origin`` (task -> the
    dump it came from) keeps a "lost message" verdict to actors of one dump: dumps of two
    processes are taken at different moments, and a message may be on its way between."""
    by_id = {s["task_id"]: s for s in states}
    producer_of = _producers(tasks)
    out: dict[int, list[Wait]] = {}
    for s in states:
        if s["status"] == "exited":
            continue
        tid, ws = s["task_id"], []
        if s.get("inflight"):
            pieces = s.get("inflight_pieces") or []
            ws.append(Wait("kernel", -1, [], detail=f"piece {pieces[0]}" if pieces else ""))
        elif s["status"] == "zombie":
            for o in s.get("outputs_held", []):
                ws.append(Wait("ack", o["regst_desc_id"], list(o["held_by"])))
        else:
            budget = s.get("budget", -1)
            if "budget" in s and not s.get("closed") and (
                    budget is not None and s.get("pieces_made", 0) >= budget):
                ws.append(Wait("client", -1, [CLIENT]))
            for d in s.get("inputs_empty", []):
                ws.append(Wait("input", d, [producer_of.get(d, CLIENT)]))
            for o in s.get("outputs_full", []):
                ws.append(Wait("output", o["regst_desc_id"], list(o["held_by"])))
        for w in ws:  # blame an actor that exited or holds nothing of the desc: a lost message
            for other in w.on:
                o = by_id.get(other)
                if other == CLIENT or o is None or (
                        origin is not None and origin.get(other) != origin.get(tid)):
                    continue
                if o["status"] == "exited":
                    w.lost, w.detail = True, f"{_name(tasks, other)} already exited"
                elif w.what in ("ack", "output") and not _holds(o, w.desc):
                    w.lost = True
                    w.detail = (f"{_name(tasks, other)} has no regst of desc {w.desc} queued "
                                "or in use: its ACK was lost")
        out[tid] = ws
    for tid in tasks:  # placed here but gave no state: its unit did not answer the dump
        if tid not in by_id:
            out[tid] = [Wait("silent", -1, [], detail="gave no state: its unit did not "
                             "answer (its process is stopped, or stuck outside its actors)")]
    return out


def _holds(s: dict, desc: int) -> bool:
    """Whether a consumer's state shows a regst of ``desc`` queued, in use or kept."""
    queued = {int(k): v for k, v in (s.get("queued") or {}).items()}
    return bool(queued.get(desc) or s.get("inflight") or s.get("kind") in ("acc", "repeat"))


def _describe(tasks: dict[int, dict], tid: int, w: Wait) -> str:
    me = _name(tasks, tid)
    whom = ", ".join(_name(tasks, o) for o in w.on)
    if w.what == "kernel":
        return f"{me} is inside its kernel{(' on ' + w.detail) if w.detail else ''}"
    if w.what == "client":
        return f"{me} waits for the client to feed or close it"
    if w.what == "silent":
        return f"{me} {w.detail}"
    if w.what == "input":
        text = f"{me} waits for READY on regst desc {w.desc} from {whom}"
    elif w.what == "output":
        text = f"{me} waits for a free regst of desc {w.desc} held by {whom}"
    else:
        text = f"{me} (zombie) waits for the ACK of regst desc {w.desc} from {whom}"
    return text + (f", but {w.detail}" if w.lost else "")


def _find_cycle(edges: dict[int, list[int]]) -> list[int]:
    color: dict[int, int] = {}
    stack: list[int] = []

    def visit(n: int) -> list[int]:
        color[n] = 1
        stack.append(n)
        for m in edges.get(n, []):
            if color.get(m) == 1:
                return stack[stack.index(m):]
            if m not in color and m in edges:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        color[n] = 2
        return []

    for n in sorted(edges):
        if n not in color:
            c = visit(n)
            if c:
                return c
    return []


def _pending(s: dict | None, waits: list[Wait]) -> bool:
    """Work that should happen but cannot (an idle actor waiting on the client is fine)."""
    if s is None:  # silent: pending only if some actor waits for it (see analyze)
        return False
    if s["status"] == "exited":
        return False
    if s.get("inflight") or s["status"] == "zombie" or s.get("queued"):
        return True
    if "budget" in s and (s.get("budget") is None or s.get("pieces_made", 0) < s.get("budget")):
        return s.get("budget") != 0 or s.get("closed", False)
    return any(w.lost for w in waits)


def analyze(states: list[dict], tasks: dict[int, dict],
            origin: dict[int, int] | None = None,
            elsewhere: dict[int, tuple[int, int]] | None = None) -> StuckReport:
    """The wait-for graph of the live actors and the sentence that explains it.
    ``elsewhere`` (task -> (machine, thrd) of the neighbours on other machines, from a
    worker's plan share) names where a root that waits across the wire should be looked for."""
    waits = actor_waits(states, tasks, origin)
    by_id: dict[int, dict | None] = {s["task_id"]: s for s in states}
    silent = {t for t in waits if t not in by_id}
    by_id.update(dict.fromkeys(silent))
    waited = {o for ws in waits.values() for w in ws for o in w.on}
    pending = any(_pending(by_id[t], ws) for t, ws in waits.items()) or bool(silent & waited)
    lines = [f"{_name(tasks, t)} [{_status(by_id[t])}]: "  # reasons without the subject
             + ("; ".join(_describe(tasks, t, w)[len(_name(tasks, t)) + 1:] for w in ws)
                or "idle")
             for t, ws in sorted(waits.items())]
    live = set(waits)
    edges = {t: [o for w in ws for o in w.on if o in live] for t, ws in waits.items()}
    if not live:
        return StuckReport("nothing is stuck: every actor exited", [], [], waits, lines)
    cycle = _find_cycle(edges)
    if cycle and origin is not None and len({origin.get(t) for t in cycle}) > 1 and any(
            w.what == "kernel" for ws in waits.values() for w in ws):
        # pieced together from dumps of different moments while an act was still running:
        # the run may have been moving, so the act in flight is the better evidence
        cycle = []
    if cycle:
        steps = []
        for i, t in enumerate(cycle):
            nxt = cycle[(i + 1) % len(cycle)]
            w = next(w for w in waits[t] if nxt in w.on)
            steps.append(_describe(tasks, t, w))
        lost = [w for t in cycle for w in waits[t] if w.lost]
        cause = " (a message between them was lost)" if lost else ""
        sentence = (f"deadlock: a cycle of {len(cycle)} actors{cause}: " + "; ".join(steps))
        return StuckReport(sentence, cycle, [], waits, lines, pending)
    if not pending:
        return StuckReport("nothing is stuck: the live actors wait for the client to feed, "
                           "close or start them", [], [], waits, lines, False)
    # no cycle: roots are live actors with a reason but no live actor to wait for
    waited_by: dict[int, set[int]] = {t: set() for t in live}
    for t in live:  # transitive waiters
        seen, todo = set(), list(edges[t])
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            waited_by[n].add(t)
            todo.extend(edges.get(n, []))
    candidates = [t for t in live if (not edges[t] or any(w.lost for w in waits[t]))
                  and waits[t] and (_pending(by_id[t], waits[t]) or bool(waited_by[t]))
                  and (t not in silent or bool(waited_by[t]))]
    if not candidates:
        candidates = [t for t in live if waits[t] and (t not in silent or waited_by[t])]
    if not candidates:
        return StuckReport("stuck, but no live actor says what it waits for", [], [], waits,
                           lines, pending)
    roots = sorted(candidates, key=lambda t: (-_severity(waits[t]), -len(waited_by[t]), t))
    root = roots[0]
    loc = where(tasks, root)
    why = "; ".join(_describe(tasks, root, w) for w in waits[root]) + _place(loc)
    n = len(waited_by[root])
    behind = f"; {n} actor{'s wait' if n != 1 else ' waits'} on it" if n else ""
    near = [t for t in sorted(waited_by[root]) if root in edges[t]][:3]
    also = "".join(f"; {_describe(tasks, t, w)}" for t in near for w in waits[t]
                   if root in w.on)
    blamed = [o for w in waits[root] for o in w.on]
    remote = bool(blamed) and all(o not in tasks and o != CLIENT for o in blamed)
    if remote:  # the true root is further down, in a dump this one does not hold
        known = elsewhere or {}
        others = ", ".join(f"task {o}" + (f" (machine {known[o][0]}, unit m{known[o][0]}-t"
                                          f"{known[o][1]})" if o in known else "")
                           for o in sorted(set(blamed)))
        behind += (f"; {others} {'is' if len(set(blamed)) == 1 else 'are'} on another "
                   "machine: merge every machine's dump (trace why-stuck DIR) to name the root")
    return StuckReport(f"root: {why}{behind}{also}", [], roots, waits, lines, pending, remote,
                       loc)


def _status(s: dict | None) -> str:
    return "no answer" if s is None else str(s["status"])


def _severity(ws: list[Wait]) -> int:
    """Which root to name first: a lost message, then an act in flight (positive evidence
    of being stuck), then an actor that gave no state (a unit merely slow to answer a
    dump looks the same as a frozen one), then one waiting for an ACK or the client."""
    if any(w.lost for w in ws):
        return 4
    if any(w.what == "kernel" for w in ws):
        return 3
    if any(w.what == "silent" for w in ws):
        return 2
    return 1 if any(w.what in ("ack", "client") for w in ws) else 0


def format_report(report: StuckReport, source: str = "") -> str:
    head = f"why-stuck{(' (' + source + ')') if source else ''}:"
    body = "\n".join(f"  {line}" for line in report.lines)
    return f"{head}\n{report.sentence}\nactors:\n{body}" if body else f"{head}\n{report.sentence}"


def analyze_dumps(dumps: list[dict[str, Any]]) -> StuckReport:
    """Several processes' dumps of one run (one per worker) analysed as one cluster; the
    union does not depend on their order, so neither does the report."""
    latest: dict[int, tuple[int, int, dict]] = {}  # task -> (dump time, dump, its state)
    tasks: dict[int, dict] = {}
    for i, d in enumerate(dumps):
        tasks.update(d.get("tasks", {}))
        for s in d.get("states", []):  # a unit process's own dump repeats its actors
            key = (int(d.get("time_ns", 0)), i)
            if s["task_id"] not in latest or key > latest[s["task_id"]][:2]:
                latest[s["task_id"]] = (*key, s)
    states = [v[2] for _, v in sorted(latest.items())]
    origin = {t: v[1] for t, v in latest.items()}
    return analyze(states, tasks, origin if len(dumps) > 1 else None)
