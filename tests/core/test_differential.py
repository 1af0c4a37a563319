"""The compiled state machines against the specification: same actions, same order.

``protocol/`` is the specification (docs/architecture.md, "The compiled core").  Hypothesis draws
random plans (sources, inputs, normal tasks with one or two inputs, ticks, acc, repeat,
outputs; register_num 1-4; fan-out; random units) and main-job plans (wait_and_send_ids,
reentrant_lock with random conflicts, case, ticks per critical section, esac, callback),
then one random legal run: messages delivered in any order that keeps each sender-receiver
pair FIFO, several at once to a unit (a drain), acts completed at random moments in launch
order, sometimes a drain resumed with ``push([])``.  Every call goes to a Python core and a
native core of the same unit, and both must return the same actions in the same order and
the same ``blocked_on()``.  Some runs corrupt one delivered message (a stale seq, a slot
out of range, an ACK twice): both cores must refuse it with the same words.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from actorflow.actors.cores import available_cores, make_unit_core
from actorflow.errors import PlanValidationError, ProtocolError
from actorflow.protocol.messages import CMD, EORD, READY, Act, Exit, Msg, cmd
from actorflow.protocol.simulate import check_progress
from tests.protocol.by_hand import make_task

pytestmark = pytest.mark.skipif("native" not in available_cores(),
                                reason="the compiled core is not built")


def norm(actions: list[Any]) -> list[tuple]:
    out = []
    for a in actions:
        if type(a) is Msg:
            out.append(("MSG", *a.header()))
        elif type(a) is Act:
            out.append(("ACT", a.task_id, a.act_id, a.piece_id, [tuple(r) for r in a.reads],
                        [tuple(w) for w in a.writes], a.info))
        elif type(a) is Exit:
            out.append(("EXIT", a.task_id))
        else:
            raise AssertionError(f"not an action: {a!r}")
    return out


# -- plans ---------------------------------------------------------------------------------
@st.composite
def dataflow_plans(draw: Any) -> tuple[list, dict[int, int], list[Msg]]:
    """A random DAG of the data kinds; returns (tasks, producer_of, client commands)."""
    rnum = st.integers(1, 4)
    nodes: list[dict] = []  # {id, kind, inputs: [node ids], attrs}
    n_roots = draw(st.integers(1, 2))
    # a node's rate: the acc/repeat steps between it and a root, in order.  A join of two
    # inputs with different rates carries different piece counts: an illegal plan that both
    # cores refuse alike ("its inputs carried different piece counts"), so joins keep rates
    rate: list[tuple] = []
    for _ in range(n_roots):
        nodes.append({"kind": draw(st.sampled_from(["source", "input"])), "inputs": [],
                      "attrs": {}})
        rate.append(())
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["normal", "normal", "tick", "acc", "repeat", "normal2"]))
        a = draw(st.integers(0, len(nodes) - 1))
        inputs = [a]
        if kind == "normal2":
            b = draw(st.integers(0, len(nodes) - 1))
            kind = "normal"
            if b != a and rate[b] == rate[a]:
                inputs.append(b)
        attrs = {}
        if kind == "acc":
            attrs["acc_num"] = draw(st.integers(1, 3))
        if kind == "repeat":
            attrs["repeat_num"] = draw(st.integers(1, 3))
        nodes.append({"kind": kind, "inputs": inputs, "attrs": attrs})
        rate.append(rate[a] + tuple((kind, n) for n in attrs.values()))
    # every node without a consumer feeds an output (so pieces drain to somewhere)
    used = {i for n in nodes for i in n["inputs"]}
    for i in range(len(nodes)):
        if i not in used:
            nodes.append({"kind": "output", "inputs": [i], "attrs": {}})
    consumers: dict[int, list[int]] = {i: [] for i in range(len(nodes))}
    for j, n in enumerate(nodes):
        for i in n["inputs"]:
            consumers[i].append(j)
    tasks, producer_of = [], {}
    for i, n in enumerate(nodes):
        desc = 100 + i
        produced = [] if n["kind"] == "output" else [(desc, draw(rnum), consumers[i])]
        consumed = [100 + k for k in n["inputs"]]
        tasks.append(make_task(i, n["kind"], produced=produced, consumed=consumed, **n["attrs"]))
        producer_of[desc] = i
    pieces = draw(st.integers(1, 5))
    cmds = []
    for i, n in enumerate(nodes):
        if n["kind"] == "source":
            cmds.append(cmd(i, "start", pieces))
        elif n["kind"] == "input":
            cmds += [cmd(i, "feed") for _ in range(pieces)] + [cmd(i, "close")]
    return tasks, producer_of, cmds


@st.composite
def main_job_plans(draw: Any) -> tuple[list, dict[int, int], list[Msg]]:
    """wait -> lock -> case -> a tick per critical section -> esac (+ callbacks) -> lock."""
    n_cs = draw(st.integers(1, 3))
    rnum = st.integers(1, 3)
    conflicts = {str(c): sorted(draw(st.sets(st.integers(0, n_cs - 1)))) for c in range(n_cs)}
    W, L, C, E = 0, 1, 2, 3
    d_start, d_out, d_end = 10, 11, 12
    ticks = list(range(4, 4 + n_cs))
    cbs = list(range(4 + n_cs, 4 + 2 * n_cs))
    cs_descs = [20 + c for c in range(n_cs)]
    tick_descs = [30 + c for c in range(n_cs)]
    tasks = [
        make_task(W, "wait_and_send_ids", produced=[(d_start, draw(rnum), [L])],
                  num_critical_sections=n_cs),
        make_task(L, "reentrant_lock", produced=[(d_out, draw(rnum), [C])],
                  consumed=[d_start, d_end], start_desc=d_start, end_desc=d_end,
                  conflicts=conflicts),
        make_task(C, "case", produced=[(d, draw(rnum), [t]) for d, t in zip(cs_descs, ticks)],
                  consumed=[d_out], cs_descs=cs_descs),
        make_task(E, "esac", produced=[(d_end, draw(rnum), [L])], consumed=tick_descs,
                  cs_of_desc={d: c for c, d in enumerate(tick_descs)}),
    ]
    for c in range(n_cs):
        tasks.append(make_task(ticks[c], "tick", produced=[(tick_descs[c], draw(rnum),
                                                            [E, cbs[c]])],
                               consumed=[cs_descs[c]]))
        tasks.append(make_task(cbs[c], "callback_tick", consumed=[tick_descs[c]]))
    producer_of = {d.regst_desc_id: t.task_id for t in tasks for d in t.produced.values()}
    order = draw(st.lists(st.integers(0, n_cs - 1), min_size=1, max_size=8))
    return tasks, producer_of, [*(cmd(W, "send", c) for c in order), cmd(W, "close")]


# -- one run of a plan on both cores -----------------------------------------------------------
class Twin:
    """The same unit on both cores; every call compared."""

    def __init__(self, tasks: list, producer_of: dict[int, int], name: str) -> None:
        self.py = make_unit_core(tasks, producer_of, name, impl="python")
        self.nat = make_unit_core(tasks, producer_of, name, impl="native")
        assert type(self.nat).__name__ == "NativeUnitCore"
        self.launched: deque[tuple[Act, Act]] = deque()

    def call(self, what: str, arg_py: Any, arg_nat: Any) -> tuple[list, list] | str:
        errors = []
        results = []
        for core, arg in ((self.py, arg_py), (self.nat, arg_nat)):
            try:
                results.append(getattr(core, what)(arg))
            except ProtocolError as e:
                errors.append(str(e))
        if errors:
            assert len(errors) == 2, f"only one core refused: {errors}"
            assert errors[0] == errors[1]
            return errors[0]
        a, b = results
        assert norm(a) == norm(b), f"{what} diverged"
        assert self.py.busy == self.nat.busy and self.py.live == self.nat.live
        return a, b

    def same_state(self) -> None:
        assert self.py.blocked_on() == self.nat.blocked_on()


class _Plan:
    def __init__(self, tasks: list) -> None:
        self.tasks = tasks


def run_twins(tasks: list, producer_of: dict[int, int], cmds: list[Msg], seed: int,
              corrupt: bool) -> None:
    try:  # plans the validator would refuse (stuck, or inputs of different rates) are not runs
        check_progress(_Plan(tasks))
    except PlanValidationError:
        assume(False)
    rng = random.Random(seed)
    n_units = rng.randint(1, 3)
    unit_of = {t.task_id: rng.randrange(n_units) for t in tasks}
    twins = {u: Twin([t for t in tasks if unit_of[t.task_id] == u], producer_of, f"unit {u}")
             for u in sorted(set(unit_of.values()))}
    pairs: dict[tuple[int, int], deque[Msg]] = {}
    for m in cmds:
        pairs.setdefault((m.src, m.dst), deque()).append(m)
    corrupted = not corrupt

    def route(actions: tuple[list, list]) -> None:
        a, b = actions
        for x, y in zip(a, b):
            if type(x) is Msg:
                pairs.setdefault((x.src, x.dst), deque()).append(x)
            elif type(x) is Act:
                twins[unit_of[x.task_id]].launched.append((x, y))

    for _step in range(5000):
        ready = [k for k, q in pairs.items() if q]
        busy = [u for u, t in twins.items() if t.py.busy]
        running = [u for u, t in twins.items() if t.launched]
        choices = ["deliver"] * bool(ready) + ["complete"] * bool(running) + ["resume"] * bool(busy)
        if not choices:
            break
        what = rng.choice(choices)
        if what == "deliver":
            unit = unit_of[rng.choice(ready)[1]]
            batch = []
            for _ in range(rng.randint(1, 4)):  # a drain: several pairs' fronts for one unit
                mine = [k for k, q in pairs.items() if q and unit_of[k[1]] == unit]
                if not mine:
                    break
                batch.append(pairs[rng.choice(mine)].popleft())
            if (not corrupted and rng.random() < 0.2 and not twins[unit].py.busy
                    and batch[0].type != CMD):  # the core handles it at once: refused
                bad = [mutate(batch[0], rng)]
                res = twins[unit].call("push", bad, bad)
                assert isinstance(res, str), "a corrupted message was accepted by both cores"
                return
            res = twins[unit].call("push", batch, batch)
        elif what == "complete":
            t = twins[rng.choice(running)]
            k = rng.randint(1, len(t.launched))
            done = [t.launched.popleft() for _ in range(k)]
            res = t.call("completed", [x for x, _ in done], [y for _, y in done])
        else:
            res = twins[rng.choice(busy)].call("push", [], [])
        assert not isinstance(res, str), f"both cores refused a legal run: {res}"
        route(res)
    for t in twins.values():
        t.same_state()
        assert t.py.live == 0, t.py.blocked_on()


def mutate(m: Msg, rng: random.Random) -> Msg:
    h = m.header()
    if m.type in (READY, EORD):  # a seq out of order
        h[6] += rng.choice([1, 2, -1])
    else:  # an ACK for a slot out of range
        h[4] += 64
    return Msg(*h)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dataflow_plans(), st.integers(0, 2**32), st.booleans())
def test_dataflow_plans_give_the_same_actions_on_both_cores(plan, seed, corrupt):
    tasks, producer_of, cmds = plan
    run_twins(tasks, producer_of, cmds, seed, corrupt)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(main_job_plans(), st.integers(0, 2**32), st.booleans())
def test_main_job_plans_give_the_same_actions_on_both_cores(plan, seed, corrupt):
    tasks, producer_of, cmds = plan
    run_twins(tasks, producer_of, cmds, seed, corrupt)


def test_a_bad_task_is_refused_with_the_same_words():
    for task in (make_task(3, "acc", produced=[(30, 1, [4])], consumed=[]),
                 make_task(3, "reentrant_lock", produced=[(30, 1, [4])], consumed=[10],
                           start_desc=10, end_desc=99),
                 make_task(3, "case", produced=[(30, 1, [4])], consumed=[10], cs_descs=[31])):
        errs = []
        for impl in ("python", "native"):
            with pytest.raises(ProtocolError) as ei:
                make_unit_core([task], {10: 1}, "u", impl=impl)
            errs.append(str(ei.value))
        assert errs[0] == errs[1]


def test_a_kind_the_native_core_lacks_runs_its_unit_on_python_and_says_so():
    from actorflow.protocol.kind_record import Kind
    from actorflow.protocol.kinds import KINDS, register_kind
    from actorflow.protocol.state import ActorState

    class Special(ActorState):
        kind = "special_test_kind"

    register_kind(Kind("special_test_kind", Special, lambda t, s: [], "a test-only kind"))
    try:
        task = make_task(3, "special_test_kind", produced=[(30, 1, [4])], consumed=[10])
        with pytest.warns(RuntimeWarning, match=r"unit w runs on the Python core.*"
                                                r"\['special_test_kind'\]"):
            core = make_unit_core([task], {10: 1}, "unit w", impl="native")
        assert type(core).__name__ == "PyUnitCore"
    finally:
        KINDS._entries.pop("special_test_kind")
