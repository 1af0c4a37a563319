"""Run a plan's pure state machines with no threads, no kernels and no clock.

Used by ``Plan.validate`` to prove a plan makes progress with its register_nums, and by
tests as an exact reference of the protocol.  Messages are delivered one at a time from
one FIFO, which respects per-pair FIFO order (the only ordering the protocol assumes).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from actorflow.errors import PlanValidationError, ProtocolError
from actorflow.protocol.kinds import make_state
from actorflow.protocol.messages import Act, Exit, Msg, cmd
from actorflow.protocol.state import ActorState, describe_wait
from actorflow.protocol.task import PlanView as Plan


@dataclass
class SimResult:
    states: dict[int, ActorState]
    exited: set[int]
    acts: list[Act] = field(default_factory=list)
    messages: int = 0
    truncated: bool = False  # max_steps ran out with messages still queued

    @property
    def stuck(self) -> list[int]:
        return [t for t in self.states if t not in self.exited]


def simulate(
    plan: Plan,
    pieces: int,
    on_act: Callable[[ActorState, Act], None] | None = None,
    pick: Callable[[int], int] | None = None,
    max_steps: int = 10_000_000,
    keep_acts: bool = True,
) -> SimResult:
    """Feed/start ``pieces`` pieces, close, and deliver messages until none is left.

    ``pick(n)`` chooses which of the ``n`` pending per-destination queues to deliver from
    next (default: oldest first); random picks explore other legal interleavings.
    """
    producer_of = {d.regst_desc_id: t.task_id for t in plan.tasks for d in t.produced.values()}
    states = {t.task_id: make_state(t, producer_of) for t in plan.tasks}
    res = SimResult(states, set())
    # one FIFO per (src, dst) pair: pair order is all the protocol promises
    queues: dict[tuple[int, int], deque[Msg]] = {}
    order: deque[tuple[int, int]] = deque()

    def post(m: Msg) -> None:
        key = (m.src, m.dst)
        q = queues.get(key)
        if q is None:
            q = queues[key] = deque()
        if not q:
            order.append(key)
        q.append(m)

    def run(state: ActorState, actions: list[Any]) -> None:
        work = deque([(state, actions)])
        while work:
            st, acts = work.popleft()
            for a in acts:
                if type(a) is Msg:
                    res.messages += 1
                    post(a)
                elif type(a) is Act:
                    if keep_acts:
                        res.acts.append(a)
                    if on_act is not None:
                        on_act(st, a)
                    work.append((st, st.act_done(a)))
                elif type(a) is Exit:
                    res.exited.add(a.task_id)

    for t in plan.tasks:
        if t.task_type == "input":
            post(cmd(t.task_id, "feed", pieces))
            post(cmd(t.task_id, "close"))
        elif t.task_type == "source":
            post(cmd(t.task_id, "start", pieces))
        hook = getattr(states[t.task_id], "dry_run_commands", None)
        if hook is not None:  # kinds the client drives with their own commands (main job)
            for name, payload in hook(pieces):
                post(cmd(t.task_id, name, payload))
    steps = 0
    while order and steps < max_steps:
        steps += 1
        i = pick(len(order)) if pick is not None else 0
        if i:
            order.rotate(-i)
        key = order.popleft()
        q = queues[key]
        m = q.popleft()
        if q:
            order.append(key)
        st = states[m.dst]
        run(st, st.handle(m))
    res.truncated = bool(order)
    return res


DRY_RUN_BASE = 400_000  # messages any plan's dry run may use: a few seconds on a busy core
DRY_RUN_PER_EDGE = 100  # and this many more per task and per producer->consumer edge


def _rate(t: Any, key: str) -> int:
    v = t.attrs.get(key, 1) if t.task_type in ("acc", "repeat") else 1
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else 1


def _flows(plan: Plan, pieces: int) -> dict[int, int] | None:
    """Upper bound of acts (= regsts written) per task for ``pieces`` pieces; None on a cycle.

    Sources and inputs act ``pieces`` times, acc ``n // acc_num + 1`` (a partial group is
    flushed), repeat ``n * repeat_num``, any other kind at most as often as its busiest input.
    """
    producer_of = {d.regst_desc_id: t.task_id for t in plan.tasks for d in t.produced.values()}
    preds: dict[int, list[int]] = {t.task_id: [producer_of[i] for i in t.consumed_ids()
                                               if i in producer_of] for t in plan.tasks}
    succs: dict[int, list[int]] = {tid: [] for tid in preds}
    for tid, ps in preds.items():
        for p in ps:
            succs.setdefault(p, []).append(tid)
    indeg = {tid: len(ps) for tid, ps in preds.items()}
    by_id = {t.task_id: t for t in plan.tasks}
    todo = deque(tid for tid, n in indeg.items() if n == 0)
    flow: dict[int, int] = {}
    while todo:
        tid = todo.popleft()
        t = by_id[tid]
        n_in = max((flow.get(p, 0) for p in preds[tid]), default=0)
        if t.task_type in ("input", "source"):
            f = pieces
        elif t.task_type == "acc":
            f = n_in // _rate(t, "acc_num") + 1
        elif t.task_type == "repeat":
            f = n_in * _rate(t, "repeat_num")
        else:
            f = n_in
        flow[tid] = f
        for s in succs.get(tid, ()):
            indeg[s] -= 1
            if indeg[s] == 0:
                todo.append(s)
    return flow if len(flow) == len(by_id) else None


@dataclass
class _Desc:
    regst_desc_id: int
    register_num: int
    consumer_task_ids: Any


@dataclass
class _Clamped:
    """A task whose register_nums are cut to the regsts a dry run can ever write: slots are
    taken in order from a FIFO, so slots past that count are never touched and the run is
    the same, but its memory no longer grows with the number written in the plan."""

    task_id: int
    task_type: str
    label: str
    attrs: Any
    produced: dict[str, _Desc]
    _consumed: list[int]

    def consumed_ids(self) -> list[int]:
        return self._consumed


def _bounded(plan: Plan, pieces: int, prefix: str) -> tuple[list[_Clamped], int]:
    """Tasks with clamped register_nums and the delivery budget; refuse a dry run too big."""
    edges = sum(len(d.consumer_task_ids) for t in plan.tasks for d in t.produced.values())
    budget = DRY_RUN_BASE + DRY_RUN_PER_EDGE * (len(plan.tasks) + edges)
    flow = _flows(plan, pieces)
    if flow is not None:
        cost = {t.task_id: flow[t.task_id] * (1 + sum(2 * len(d.consumer_task_ids) + 1
                                                      for d in t.produced.values()))
                for t in plan.tasks}
        if sum(cost.values()) > budget:
            worst = max(plan.tasks, key=lambda t: cost[t.task_id])
            raise PlanValidationError(
                f"{prefix}the dry run that proves progress would deliver about "
                f"{sum(cost.values())} messages, over its budget of {budget} for a plan of this "
                f"size: task {worst.task_id} ({worst.label}) alone acts up to "
                f"{flow[worst.task_id]} times for {pieces} pieces. Lower acc_num/repeat_num "
                "(the dry run feeds 2 x the largest of them)")
    tasks = []
    for t in plan.tasks:
        cap = None if flow is None else max(1, flow[t.task_id])
        prod = {k: _Desc(d.regst_desc_id,
                         d.register_num if cap is None else min(d.register_num, cap),
                         d.consumer_task_ids) for k, d in t.produced.items()}
        tasks.append(_Clamped(t.task_id, t.task_type, t.label, t.attrs, prod,
                              list(t.consumed_ids())))
    return tasks, budget


@dataclass
class _PlanOf:
    tasks: list[Any]


def check_progress(plan: Plan, source: str = "") -> None:
    """Raise ``PlanValidationError`` naming the stuck actors if the plan cannot drain.

    Time and memory are bounded by the plan's size: register_nums are clamped to what the
    dry run can use and the deliveries to a budget, whatever numbers the plan holds.
    """
    width = 1
    for t in plan.tasks:
        width = max(width, _rate(t, "acc_num"), _rate(t, "repeat_num"))
    pieces = 2 * width
    prefix = f"{source}: " if source else ""
    tasks, budget = _bounded(plan, pieces, prefix)
    try:
        res = simulate(_PlanOf(tasks), pieces, max_steps=budget, keep_acts=False)
    except ProtocolError as e:
        raise PlanValidationError(f"{prefix}dry run of {pieces} pieces broke the protocol: "
                                  f"{e}") from e
    if res.truncated:
        raise PlanValidationError(
            f"{prefix}the dry run of {pieces} pieces did not finish within its budget of "
            f"{budget} deliveries; lower acc_num/repeat_num")
    if res.stuck:
        lines = []
        for tid in res.stuck[:6]:
            s = res.states[tid].blocked_on()
            lines.append(f"task {tid} ({s['label']}): {describe_wait(s)}")
        raise PlanValidationError(
            f"{prefix}plan cannot make progress with its register_nums: a dry run of {pieces} "
            f"pieces stops with {len(res.stuck)} actors stuck: " + " | ".join(lines)
            + ". Raise register_num on the regst descs named above.")
