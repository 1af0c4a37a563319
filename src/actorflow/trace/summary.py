"""Where the time went: per actor busy / waiting-for-input / back-pressure, per link
message latency, pieces/s, the bottleneck and the critical path of one piece.

Each actor's idle time is classified from its own recorded events, which tell exactly
what it held at every moment: a consumed desc with no READY left unacked means it waits
for input (blamed on the producer); otherwise a produced desc whose every regst is still
held by consumers means back-pressure (blamed on the desc and the consumer holding the
most of its regsts).  Nothing is sampled; the run's span is the first to the last event.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from actorflow.trace.events import (
    ACK,
    ACT_BEGIN,
    ACT_DEVICE,
    ACT_END,
    READY,
    RECV,
    SEND,
    ActEvent,
    MsgEvent,
)
from actorflow.trace.merge import Trace


@dataclass
class ActorStats:
    task_id: int
    label: str
    kind: str
    machine: int
    acts: int = 0
    busy_ns: int = 0
    input_ns: int = 0
    output_ns: int = 0
    other_ns: int = 0
    input_by: dict[int, int] = field(default_factory=dict)  # desc -> ns
    output_by: dict[tuple[int, int], int] = field(default_factory=dict)  # (desc, consumer) -> ns
    device_acts: int = 0  # acts with ACT_DEVICE timing (device streams)
    launch_ns: int = 0  # host time spent launching them
    device_ns: int = 0  # device time between their events

    def to_dict(self, span: int, trace: Trace) -> dict[str, Any]:
        pct = (lambda ns: round(100.0 * ns / span, 2)) if span else (lambda ns: 0.0)
        blocked = sorted(self.output_by.items(), key=lambda kv: -kv[1])
        starved = sorted(self.input_by.items(), key=lambda kv: -kv[1])
        producer = _producers(trace)
        return {
            "task_id": self.task_id, "label": self.label, "kind": self.kind,
            "machine": self.machine, "acts": self.acts, "busy_pct": pct(self.busy_ns),
            "input_wait_pct": pct(self.input_ns), "backpressure_pct": pct(self.output_ns),
            "other_pct": pct(self.other_ns),
            "input_wait_on": [{"regst_desc_id": d, "producer": producer.get(d, -1),
                               "producer_label": trace.label(producer.get(d, -1)),
                               "pct": pct(ns)} for d, ns in starved],
            "backpressure_on": [{"regst_desc_id": d, "consumer": c,
                                 "consumer_label": trace.label(c), "pct": pct(ns)}
                                for (d, c), ns in blocked],
            "device": None if not self.device_acts else {
                "acts": self.device_acts, "host_launch_pct": pct(self.launch_ns),
                "device_busy_pct": pct(self.device_ns),
                "launch_us_per_act": round(self.launch_ns / self.device_acts / 1e3, 2),
                "device_us_per_act": round(self.device_ns / self.device_acts / 1e3, 2),
                # the device waited for the host when launching took most of its time
                "bound": "host" if self.launch_ns >= HOST_BOUND * self.device_ns else "device"},
        }


HOST_BOUND = 0.8  # launch time / device time at which the device is waiting for the host


def _producers(trace: Trace) -> dict[int, int]:
    return {int(d): tid for tid, t in trace.tasks.items() for d in t.get("produced", {})}


def actor_stats(trace: Trace) -> dict[int, ActorStats]:
    per_task: dict[int, list] = defaultdict(list)
    for ev in trace.events:
        if ev.task >= 0:
            per_task[ev.task].append(ev)
    out = {}
    for task, evs in per_task.items():
        info = trace.tasks.get(task, {})
        st = ActorStats(task, trace.label(task), info.get("type", "?"),
                        info.get("machine_id", evs[0].machine))
        _classify(st, evs, info, trace.t0, trace.t1)
        out[task] = st
    return out


def _classify(st: ActorStats, evs: list, info: dict, t0: int, t1: int) -> None:
    consumed = [int(d) for d in info.get("consumed", [])]
    produced = {int(d): p for d, p in info.get("produced", {}).items() if p.get("consumers")}
    avail = dict.fromkeys(consumed, 0)  # READY received minus ACK sent
    eord: set[int] = set()
    holders: dict[tuple[int, int], set[int]] = defaultdict(set)  # (desc, slot) -> consumers
    writing: dict[int, list[tuple[int, int]]] = {}  # act id -> written (desc, slot)
    inflight: set[int] = set()

    def charge(ns: int) -> None:
        if ns <= 0:
            return
        if inflight:
            st.busy_ns += ns
            return
        for d in consumed:
            if d not in eord and avail[d] <= 0:
                st.input_ns += ns
                st.input_by[d] = st.input_by.get(d, 0) + ns
                return
        for d, p in produced.items():
            busy = {s for (dd, s), h in holders.items() if dd == d and h}
            busy.update(s for w in writing.values() for dd, s in w if dd == d)
            if len(busy) >= int(p.get("register_num", 1)):
                count: dict[int, int] = defaultdict(int)
                for (dd, _s), h in holders.items():
                    if dd == d:
                        for c in h:
                            count[c] += 1
                worst = max(count, key=lambda c: (count[c], -c)) if count else -1
                st.output_ns += ns
                key = (d, worst)
                st.output_by[key] = st.output_by.get(key, 0) + ns
                return
        st.other_ns += ns

    last = t0
    for ev in evs:
        charge(ev.t - last)
        last = max(last, ev.t)
        if isinstance(ev, ActEvent):
            if ev.kind == ACT_BEGIN:
                st.acts += 1
                inflight.add(ev.act_id)
                writing[ev.act_id] = list(ev.writes)
            elif ev.kind == ACT_END:
                inflight.discard(ev.act_id)
            elif ev.kind == ACT_DEVICE:
                st.device_acts += 1
                st.launch_ns += max(0, ev.launch_ns)
                st.device_ns += max(0, ev.device_ns)
            continue
        if ev.kind == RECV:
            if ev.type == READY and ev.desc in avail:
                avail[ev.desc] += 1
            elif ev.type == ACK:
                holders[(ev.desc, ev.slot)].discard(ev.src)
            elif ev.desc in avail and ev.type == 2:  # EORD
                eord.add(ev.desc)
        elif ev.kind == SEND:
            if ev.type == ACK and ev.desc in avail:
                avail[ev.desc] -= 1
            elif ev.type == READY:
                holders[(ev.desc, ev.slot)].add(ev.dst)
                for aid, w in list(writing.items()):  # the written regst is announced now
                    if (ev.desc, ev.slot) in w and aid not in inflight:
                        w.remove((ev.desc, ev.slot))
                        if not w:
                            del writing[aid]
    charge(t1 - last)


def _pct(values: list[int], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    i = min(len(values) - 1, max(0, round(q * (len(values) - 1))))
    return values[i] / 1000.0


def link_latency(trace: Trace) -> list[dict[str, Any]]:
    by_link: dict[tuple[int, int], list[int]] = defaultdict(list)
    types: dict[tuple[int, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for _mid, (s, r) in trace.messages().items():
        if s is None or r is None:
            continue
        key = (s.src, s.dst)
        by_link[key].append(r.t - s.t)
        types[key][s.type_name] += 1
    return [{"src": a, "dst": b, "src_label": trace.label(a), "dst_label": trace.label(b),
             "messages": len(v), "types": dict(types[(a, b)]),
             "p50_us": round(_pct(v, 0.5), 2), "p99_us": round(_pct(v, 0.99), 2)}
            for (a, b), v in sorted(by_link.items())]


def throughput(trace: Trace) -> dict[str, Any]:
    outs = {tid for tid, t in trace.tasks.items() if t.get("type") == "output"}
    begins = [e.t for e in trace.events if isinstance(e, ActEvent) and e.kind == ACT_BEGIN]
    ends = [e for e in trace.events if isinstance(e, ActEvent) and e.kind == ACT_END
            and (e.task in outs or not outs)]
    if not begins or not ends:
        return {"pieces": 0, "seconds": 0.0, "pieces_per_s": 0.0}
    per_out: dict[int, int] = defaultdict(int)
    for e in ends:
        per_out[e.task] += 1
    pieces = min(per_out.values()) if outs else max(per_out.values())
    span = max(e.t for e in ends) - min(begins)
    return {"pieces": pieces, "seconds": span / 1e9,
            "pieces_per_s": round(pieces / (span / 1e9), 2) if span > 0 else 0.0}


def critical_path(trace: Trace, piece: int | None = None) -> dict[str, Any]:
    """Walk back from one piece's output act: each act was enabled by its last input READY
    to arrive, which was sent by an act of its producer; repeat until a source act."""
    acts: dict[int, list[tuple[int, int, ActEvent]]] = defaultdict(list)  # task -> (b, e, ev)
    open_: dict[tuple[int, int], ActEvent] = {}
    readies: dict[int, list[MsgEvent]] = defaultdict(list)
    sends: dict[int, MsgEvent] = {}
    for ev in trace.events:
        if isinstance(ev, ActEvent):
            if ev.kind == ACT_BEGIN:
                open_[(ev.task, ev.act_id)] = ev
            else:
                begin = open_.pop((ev.task, ev.act_id), None)
                if begin is not None:
                    acts[ev.task].append((begin.t, ev.t, begin))
        elif ev.kind == RECV and ev.type == READY and ev.src >= 0:
            readies[ev.dst].append(ev)
        elif ev.kind == SEND:
            sends[ev.msg_id] = ev
    outs = [tid for tid, t in trace.tasks.items() if t.get("type") == "output" and acts[tid]]
    if not outs:
        outs = [max(acts, key=lambda t: acts[t][-1][1])] if acts else []
    if not outs:
        return {"piece": None, "steps": [], "total_us": 0.0}
    final = acts[outs[0]]
    pieces = sorted(a[2].piece for a in final)
    want = pieces[len(pieces) // 2] if piece is None else piece
    cur: tuple[int, int, ActEvent] | None = next((a for a in final if a[2].piece == want),
                                                 final[len(final) // 2])
    steps: list[dict] = []
    seen = 0
    while cur is not None and seen < 10_000:
        seen += 1
        b, e, ev = cur
        steps.append({"kind": "act", "task": ev.task, "label": trace.label(ev.task),
                      "piece": ev.piece, "us": round((e - b) / 1000, 2)})
        reads = set(ev.reads)
        inputs = [r for r in readies[ev.task] if (r.desc, r.slot) in reads and r.t <= b]
        if not inputs:
            break
        # the latest READY per read (desc, slot) before the act; the last of them enabled it
        last_per = {}
        for r in inputs:
            last_per[(r.desc, r.slot)] = r
        r = max(last_per.values(), key=lambda x: x.t)
        steps.append({"kind": "wait", "task": ev.task, "label": trace.label(ev.task),
                      "desc": r.desc, "us": round((b - r.t) / 1000, 2)})
        s = sends.get(r.msg_id)
        if s is None:
            break
        steps.append({"kind": "msg", "src": s.src, "dst": s.dst, "desc": r.desc,
                      "label": f"{trace.label(s.src)} -> {trace.label(s.dst)}",
                      "us": round((r.t - s.t) / 1000, 2)})
        prev = [a for a in acts[s.src] if a[0] <= s.t]
        cur = prev[-1] if prev else None
    steps.reverse()
    total = 0.0
    if steps:
        first = next(s for s in steps if s["kind"] == "act")
        start = next(a[0] for a in acts[first["task"]] if a[2].piece == first["piece"])
        total = round((cur_end(final, want) - start) / 1000, 2)
    return {"piece": want, "steps": steps, "total_us": total}


def cur_end(final: list, piece: int) -> int:
    for _b, e, ev in final:
        if ev.piece == piece:
            return e
    return final[-1][1]


def summarize(trace: Trace, piece: int | None = None) -> dict[str, Any]:
    span = trace.t1 - trace.t0
    stats = actor_stats(trace)
    actors = [stats[t].to_dict(span, trace) for t in sorted(stats)]
    workers = [a for a in actors if a["acts"]]
    bottleneck = max(workers, key=lambda a: a["busy_pct"]) if workers else None
    return {
        "span_s": span / 1e9, "machines": sorted(trace.machines),
        "throughput": throughput(trace), "actors": actors,
        "bottleneck": None if bottleneck is None else {
            "task_id": bottleneck["task_id"], "label": bottleneck["label"],
            "busy_pct": bottleneck["busy_pct"]},
        "blocked_on_output": [a["task_id"] for a in actors
                              if a["backpressure_pct"] > max(a["busy_pct"], a["input_wait_pct"])],
        "links": link_latency(trace), "critical_path": critical_path(trace, piece),
        "clock": {str(m): {"offset_ns": c.offset_ns, "error_ns": c.error_ns}
                  for m, c in trace.machines.items()},
    }


def format_summary(s: dict[str, Any]) -> str:
    th = s["throughput"]
    lines = [f"run: {th['pieces']} pieces in {th['seconds']:.3f}s = {th['pieces_per_s']:.1f} "
             f"pieces/s; machines {s['machines']}; span {s['span_s']:.3f}s"]
    b = s["bottleneck"]
    if b:
        lines.append(f"bottleneck: task {b['task_id']} ({b['label']}), busy {b['busy_pct']:.1f}%")
    lines.append("")
    lines.append(f"{'task':>5} {'actor':<22} {'kind':<8} {'m':>2} {'acts':>6} {'busy%':>6} "
                 f"{'input%':>7} {'backp%':>7}  blocked on")
    for a in s["actors"]:
        why = ""
        if a["backpressure_on"] and a["backpressure_pct"] >= a["input_wait_pct"]:
            o = a["backpressure_on"][0]
            why = (f"free regst of desc {o['regst_desc_id']} held by task {o['consumer']} "
                   f"({o['consumer_label']})")
        elif a["input_wait_on"] and a["input_wait_pct"] > 0:
            i = a["input_wait_on"][0]
            why = (f"READY on desc {i['regst_desc_id']} from task {i['producer']} "
                   f"({i['producer_label']})")
        lines.append(f"{a['task_id']:>5} {a['label'][:22]:<22} {a['kind'][:8]:<8} "
                     f"{a['machine']:>2} {a['acts']:>6} {a['busy_pct']:>6.1f} "
                     f"{a['input_wait_pct']:>7.1f} {a['backpressure_pct']:>7.1f}  {why}")
    lines.append("")
    lines.append(f"{'link':<40} {'msgs':>6} {'p50 us':>9} {'p99 us':>9}")
    for link in s["links"]:
        name = f"{link['src']} {link['src_label']} -> {link['dst']} {link['dst_label']}"
        lines.append(f"{name[:40]:<40} {link['messages']:>6} {link['p50_us']:>9.1f} "
                     f"{link['p99_us']:>9.1f}")
    devs = [a for a in s["actors"] if a.get("device")]
    if devs:
        lines.append("")
        lines.append("device actors (host launch vs device time, from events):")
        lines.append(f"{'task':>5} {'actor':<22} {'acts':>6} {'host%':>6} {'device%':>8} "
                     f"{'launch us':>10} {'device us':>10}  bound")
        for a in devs:
            d = a["device"]
            lines.append(f"{a['task_id']:>5} {a['label'][:22]:<22} {d['acts']:>6} "
                         f"{d['host_launch_pct']:>6.1f} {d['device_busy_pct']:>8.1f} "
                         f"{d['launch_us_per_act']:>10.1f} {d['device_us_per_act']:>10.1f}  "
                         f"{d['bound']} busy")
    cp = s["critical_path"]
    if cp["steps"]:
        lines.append("")
        lines.append(f"critical path of piece {cp['piece']} ({cp['total_us']:.1f} us):")
        for st in cp["steps"]:
            if st["kind"] == "act":
                lines.append(f"  act  {st['label']} (task {st['task']}, piece {st['piece']})"
                             f"  {st['us']:.1f} us")
            elif st["kind"] == "msg":
                lines.append(f"  msg  {st['label']} desc {st['desc']}  {st['us']:.1f} us")
            else:
                lines.append(f"  wait {st['label']} after its input on desc {st['desc']}"
                             f"  {st['us']:.1f} us")
    return "\n".join(lines)
