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

    @property
    def stuck(self) -> list[int]:
        return [t for t in self.states if t not in self.exited]


def simulate(
    plan: Plan,
    pieces: int,
    on_act: Callable[[ActorState, Act], None] | None = None,
    pick: Callable[[int], int] | None = None,
    max_steps: int = 10_000_000,
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
    return res


def check_progress(plan: Plan, source: str = "") -> None:
    """Raise ``PlanValidationError`` naming the stuck actors if the plan cannot drain."""
    width = 1
    for t in plan.tasks:
        width = max(width, int(t.attrs.get("acc_num", 1)), int(t.attrs.get("repeat_num", 1)))
    pieces = 2 * width
    prefix = f"{source}: " if source else ""
    try:
        res = simulate(plan, pieces)
    except ProtocolError as e:
        raise PlanValidationError(f"{prefix}dry run of {pieces} pieces broke the protocol: "
                                  f"{e}") from e
    if res.stuck:
        lines = []
        for tid in res.stuck[:6]:
            s = res.states[tid].blocked_on()
            lines.append(f"task {tid} ({s['label']}): {describe_wait(s)}")
        raise PlanValidationError(
            f"{prefix}plan cannot make progress with its register_nums: a dry run of {pieces} "
            f"pieces stops with {len(res.stuck)} actors stuck: " + " | ".join(lines)
            + ". Raise register_num on the regst descs named above.")
