"""Property test: random DAG plans run exactly, in order, without overwriting held regsts.

Plans of 1-12 tasks (1-2 inputs, elementwise ops with fan-in and fan-out, 1-2 outputs),
register_num 1-4 per regst desc, random thread and machine assignment (cross-machine edges
get comm_net tasks) and piece counts, built with PlanBuilder.  Each runs (a) through the
pure simulator with random legal interleavings and (b) through a real Session on threads.
Checks, made from the outside (messages and acts, not the state machine's bookkeeping):

* every piece reaches every output exactly once, in order, with the numpy value;
* no produced regst is written while a consumer still holds it (READY sent to it and its
  ACK not yet received, per (producer, desc, slot, consumer));
* every actor exits; no unit thread is left running.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorflow as af
import actorflow.protocol.simulate as sim
from actorflow.protocol.messages import ACK, READY, Msg
from tests.actors.recorder import Recorder

UNARY = {
    "relu": lambda x: np.maximum(x, 0),
    "neg": np.negative,
    "tanh": np.tanh,
    "identity": lambda x: x,
    "scalar_add": lambda x: x + 1.5,
    "scalar_mul": lambda x: x * -0.5,
    "sleep": lambda x: x,  # 0.2 ms: lets other threads run mid-act, shaking interleavings
}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum}
SHAPE = (3,)


@dataclass
class Case:
    plan: af.Plan
    inputs: list[str]
    outputs: dict[str, int]  # output name -> index of the node it reads
    nodes: list[tuple[str, list[int]]] = field(default_factory=list)  # (op, arg node ids)

    def expected(self, piece: int) -> dict[str, np.ndarray]:
        vals: list[np.ndarray] = []
        for op, args in self.nodes:
            if op == "input":
                vals.append(feed_value(args[0], piece))
            elif op in UNARY:
                vals.append(UNARY[op](vals[args[0]]))
            else:
                vals.append(BINARY[op](vals[args[0]], vals[args[1]]))
        return {name: vals[i] for name, i in self.outputs.items()}


def feed_value(input_index: int, piece: int) -> np.ndarray:
    return np.linspace(-1.0, 1.0, SHAPE[0]) * (piece + 1) + input_index


@st.composite
def dag_cases(draw: Any) -> Case:
    n_in = draw(st.integers(1, 2))
    n_ops = draw(st.integers(0 if n_in == 1 else 1, 12 - n_in - 1))
    machines = draw(st.integers(1, 2))  # 2: edges across machines get comm_net tasks
    b = af.PlanBuilder(register_num=1, machines=machines)
    thrd = st.integers(0, 3)
    machine = st.integers(0, machines - 1)
    rnum = st.integers(1, 4)
    ports, nodes, inputs = [], [], []
    for i in range(n_in):
        name = f"x{i}"
        ports.append(b.input(name, SHAPE, "float64", thrd=draw(thrd), machine=draw(machine),
                             register_num=draw(rnum)))
        nodes.append(("input", [i]))
        inputs.append(name)
    for _ in range(n_ops):
        binary = len(ports) >= 1 and draw(st.booleans())
        if binary:
            op = draw(st.sampled_from(sorted(BINARY)))
            args = [draw(st.integers(0, len(ports) - 1)) for _ in range(2)]
            if args[0] == args[1]:  # same port twice is one consumed desc: use a unary op
                binary = False
        if not binary:
            op = draw(st.sampled_from(sorted(UNARY)))
            args = [draw(st.integers(0, len(ports) - 1))]
        attrs = {"scalar": 1.5} if op == "scalar_add" else {"scalar": -0.5} if (
            op == "scalar_mul") else {"ms": 0.2} if op == "sleep" else {}
        ports.append(b.op(op, *[ports[a] for a in args], thrd=draw(thrd), machine=draw(machine),
                          register_num=draw(rnum), **attrs))
        nodes.append((op, args))
    room = 12 - n_in - n_ops
    outs = [len(ports) - 1]
    if room >= 2 and len(ports) > 1 and draw(st.booleans()):
        other = draw(st.integers(0, len(ports) - 2))
        outs.append(other)
    outputs = {}
    for k, i in enumerate(outs):
        b.output(f"y{k}", ports[i], thrd=draw(thrd), machine=draw(machine))
        outputs[f"y{k}"] = i
    plan = b.build()
    assert 1 <= len([t for t in plan.tasks if t.task_type != "comm_net"]) <= 12
    return Case(plan, inputs, outputs, nodes)


class HoldChecker:
    """READY-sent / ACK-received counts per (producer, desc, slot, consumer)."""

    def __init__(self) -> None:
        self.holding: dict[tuple[int, int, int, int], int] = {}
        self.violations: list[str] = []

    def sent(self, m: Msg) -> None:
        if m.type == READY:
            k = (m.src, m.regst_desc_id, m.slot, m.dst)
            self.holding[k] = self.holding.get(k, 0) + 1

    def received(self, m: Msg) -> None:
        if m.type == ACK:
            k = (m.dst, m.regst_desc_id, m.slot, m.src)
            self.holding[k] = self.holding.get(k, 0) - 1
            if self.holding[k] < 0:
                self.violations.append(f"ACK without READY: {m!r}")

    def write(self, task_id: int, act: Any) -> None:
        for desc, slot in act.writes:
            held = {k: v for k, v in self.holding.items() if k[:3] == (task_id, desc, slot) and v}
            if held:
                self.violations.append(f"task {task_id} wrote desc {desc} slot {slot} for piece "
                                       f"{act.piece_id} while held: {held}")


class Watched:
    """Wraps one pure state machine to show its messages to a HoldChecker."""

    def __init__(self, state: Any, checker: HoldChecker) -> None:
        self._s, self._c = state, checker

    def _out(self, actions: list) -> list:
        for a in actions:
            if type(a) is Msg:
                self._c.sent(a)
        return actions

    def handle(self, msg: Msg) -> list:
        self._c.received(msg)
        return self._out(self._s.handle(msg))

    def act_done(self, act: Any) -> list:
        return self._out(self._s.act_done(act))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s, name)


SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(case=dag_cases(), pieces=st.integers(0, 8), seed=st.integers(0, 2**32 - 1))
def test_random_dags_in_the_simulator(case: Case, pieces: int, seed: int) -> None:
    checker = HoldChecker()
    rng = random.Random(seed)
    delivered: dict[int, list[int]] = {}

    def on_act(state: Any, act: Any) -> None:
        checker.write(act.task_id, act)
        if state.kind == "output":
            delivered.setdefault(act.task_id, []).append(act.piece_id)

    with pytest.MonkeyPatch.context() as mp:
        real = sim.make_state
        mp.setattr(sim, "make_state", lambda t, p: Watched(real(t, p), checker))
        res = sim.simulate(case.plan, pieces, on_act=on_act, pick=rng.randrange)
    assert res.stuck == []
    assert checker.violations == []
    assert all(v == 0 for v in checker.holding.values())  # every READY answered
    for name, task in case.plan.output_tasks().items():
        assert delivered.get(task.task_id, []) == list(range(pieces)), name


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=dag_cases(), pieces=st.integers(0, 8), window=st.integers(1, 8))
def test_random_dags_on_threads(case: Case, pieces: int, window: int) -> None:
    rec = Recorder(check_writes=True)
    feeds = [{name: feed_value(i, p) for i, name in enumerate(case.inputs)}
             for p in range(pieces)]
    with af.Session(case.plan, recorder=rec, timeout=20) as s:
        outs = list(s.run_many(feeds, window=window))
        rt = s.runtime
    assert len(outs) == pieces
    for p, out in enumerate(outs):
        if len(case.outputs) == 1:
            out = {next(iter(case.outputs)): out}
        want = case.expected(p)
        for name in case.outputs:
            np.testing.assert_allclose(out[name], want[name], rtol=1e-12, atol=0)
    assert rec.violations == []
    assert all(v == 0 for v in rec.holding.values())
    outs_by_task = {t.task_id for t in case.plan.output_tasks().values()}
    for tid in outs_by_task:  # each output actor acted once per piece, in order
        assert [a.piece_id for t, a in rec.acts if t == tid] == list(range(pieces))
    assert rt._exited == {t.task_id for t in case.plan.tasks}
    assert not any(u.thread.is_alive() for u in rt.units.values())


@st.composite
def kind_chains(draw: Any) -> tuple[af.Plan, list[tuple[str, Any]]]:
    """source -> random chain of unary ops, acc(n) and repeat(m) -> output."""
    b = af.PlanBuilder(register_num=1)
    rnum, thrd = st.integers(1, 4), st.integers(0, 2)
    h = b.source("constant", {"shape": [2], "dtype": "float64", "value": 1.0,
                              "piece_scale": 1.0}, thrd=draw(thrd), register_num=draw(rnum))
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["acc", "repeat", "op"]))
        if kind == "acc":
            n = draw(st.integers(1, 3))
            h = b.acc(h, n, thrd=draw(thrd), register_num=draw(rnum))
        elif kind == "repeat":
            n = draw(st.integers(1, 3))
            h = b.repeat(h, n, thrd=draw(thrd), register_num=draw(rnum))
        else:
            n = draw(st.sampled_from(["neg", "scalar_add"]))
            attrs = {"scalar": 1.5} if n == "scalar_add" else {}
            h = b.op(n, h, thrd=draw(thrd), register_num=draw(rnum), **attrs)
        steps.append((kind, n))
    b.output("y", h, thrd=draw(thrd))
    return b.build(), steps


def chain_reference(steps: list[tuple[str, Any]], pieces: int) -> list[float]:
    vals = [1.0 + p for p in range(pieces)]  # constant 1 shifted by piece_scale * piece
    for kind, n in steps:
        if kind == "acc":  # groups of n; a partial last group is flushed at EORD
            vals = [sum(vals[i:i + n]) for i in range(0, len(vals), n)]
        elif kind == "repeat":
            vals = [v for v in vals for _ in range(n)]
        else:
            vals = [float(UNARY[n](np.float64(v))) for v in vals]
    return vals


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chain=kind_chains(), pieces=st.integers(0, 7), seed=st.integers(0, 2**32 - 1))
def test_random_acc_repeat_chains(chain: tuple, pieces: int, seed: int) -> None:
    plan, steps = chain
    want = chain_reference(steps, pieces)
    checker = HoldChecker()
    delivered: list[int] = []

    def on_act(state: Any, act: Any) -> None:
        checker.write(act.task_id, act)
        if state.kind == "output":
            delivered.append(act.piece_id)

    with pytest.MonkeyPatch.context() as mp:
        real = sim.make_state
        mp.setattr(sim, "make_state", lambda t, p: Watched(real(t, p), checker))
        res = sim.simulate(plan, pieces, on_act=on_act, pick=random.Random(seed).randrange)
    assert res.stuck == [] and checker.violations == []
    assert delivered == list(range(len(want)))

    rec = Recorder(check_writes=True)
    with af.Session(plan, recorder=rec, timeout=20) as s:
        got = [float(v[0]) for v in s.run_to_end(pieces=pieces)["y"]]
    assert got == pytest.approx(want, rel=1e-12)
    assert rec.violations == []
