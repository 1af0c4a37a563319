"""The plan-file fuzzer shared by the CI test and the long campaign (``bench/plan_fuzz.py``).

A mutant is a compiled plan's document with a few fields replaced, deleted or retyped
(hypothesis draws which and with what).  ``check_mutant`` loads it the way a user's file is
loaded (msgpack bytes, or JSON text) and validates it, under an alarm: the only allowed
outcomes are "accepted" or an ``ActorflowError`` that is not a validator bug.  An accepted
mutant whose changes leave the computation alone (ids, threads, register_nums, names) must
run and give the original numbers.
"""

from __future__ import annotations

import copy
import json
import random
import signal
from typing import Any

import msgpack
import numpy as np
from hypothesis import strategies as st

import actorflow as af
from actorflow.errors import ActorflowError
from actorflow.plan.io import FORMAT, plan_from_bytes
from actorflow.plan.model import SCHEMA_VERSION, Plan
from actorflow.protocol.kinds import KINDS

X = np.array([[0.5, -1.0, 2.0], [3.0, -0.25, 1.5]], "float32")


def base_plan() -> Plan:
    """The client-fed kinds: input, normal (fused kernels), comm_net, repeat, acc, output."""
    b = af.PlanBuilder(machines=2, register_num=3, name="fuzz")
    x = b.input("x", (2, 3), "float32")
    y = b.op("add", x, b.op("scalar_mul", x, scalar=-0.5, name="half"), machine=1)
    y = b.fused([("relu", {}), ("scalar_mul", {"scalar": 2.0})], y)
    y = b.acc(b.repeat(y, 2), 2, register_num=1)
    b.output("y", y)
    return b.build()


def run_plan(plan: Plan, pieces: int = 3) -> list[np.ndarray]:
    with af.Session(plan, timeout=10.0, flight=False) as s:
        return [s.run({"x": X + i}) for i in range(pieces)]


class Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Hang()


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, (*prefix, i))
    return out


# values a corrupt or hostile file may hold where a field should be
VALUES = st.one_of(
    st.none(), st.booleans(),
    st.integers(-3, 12), st.sampled_from([2**31, 2**40, 10**9, 2**63 - 1, 2**63, -(2**63) - 1,
                                          2**70, 10**18]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
    st.sampled_from([*KINDS.names(), "host", "cuda:0", "cuda:9", "float32", "object", "O", "S3",
                     "V8", "int64", "x"]),
    st.lists(st.integers(-2, 2**33), max_size=4),
    st.dictionaries(st.text(max_size=3), st.integers(-2, 5), max_size=2),
)

# a mutation: (which path, what to do, the new value)
MUTATION = st.tuples(st.integers(0, 10**6), st.sampled_from(["set", "set", "set", "delete",
                                                             "retype", "bignum"]), VALUES)

# the same kinds of values as a fixed pool, for seeded campaigns whose counts are stable
POOL: list[Any] = [None, True, False, -3, -1, 0, 1, 2, 3, 7, 12, 2**31, 2**40, 2**63 - 1,
                   2**63, -(2**63) - 1, 2**70, 10**18, 0.5, float("nan"), float("inf"), "",
                   "x", "host", "cuda:0", "cuda:9", "float32", "object", "S3", "int64",
                   *KINDS.names(), [], [1, 2], [-2, 2**33], {}, {"a": 1}]
NEUTRAL_VALUES = [1, 2, 3, 7, 65536, 0, -1, 2**31]


def seeded_mutations(rng: random.Random, neutral_only: bool = False) -> list[tuple]:
    """One to three mutations drawn from ``rng`` (a ``random.Random``): the same for a
    seed on every machine and every hypothesis version."""
    if neutral_only:
        return [(rng.randrange(10**6), "neutral", rng.choice(NEUTRAL_VALUES))
                for _ in range(rng.randint(1, 2))]
    actions = ["set", "set", "set", "delete", "retype", "bignum"]
    return [(rng.randrange(10**6), rng.choice(actions), rng.choice(POOL))
            for _ in range(rng.randint(1, 3))]


def mutate(doc: dict, mutations: list[tuple[int, str, Any]]) -> tuple[dict, list[tuple]]:
    """Apply mutations to a deep copy; returns it and the paths touched."""
    d = copy.deepcopy(doc)
    touched = []
    for index, action, value in mutations:
        ps = paths(d)[1:]
        if not ps:
            break
        if action == "retype":
            ps = [q for q in ps if q[-1] == "task_type"] or ps
        elif action == "neutral":
            ps = [q for q in ps if q[-1] in ("thrd_id", "register_num")] or ps
        p = ps[index % len(ps)]
        parent = d
        for k in p[:-1]:
            parent = parent[k]
        key = p[-1]
        if action == "delete":
            if isinstance(parent, dict):
                del parent[key]
            else:
                parent.pop(key)
        elif action == "retype":
            parent[key] = KINDS.names()[index % len(KINDS.names())]
        elif action == "bignum":
            parent[key] = 10**9 if not isinstance(value, int) else abs(value) * 10**9 + 10**9
        else:  # "set", "neutral"
            parent[key] = value
        touched.append(p)
    return d, touched


def encode(plan_doc: dict) -> tuple[str, bytes | str]:
    """msgpack bytes when msgpack can carry every value, else JSON text (NaN, 2**70)."""
    doc = {"format": FORMAT, "version": SCHEMA_VERSION, "plan": plan_doc}
    try:
        return "msgpack", msgpack.packb(doc, use_bin_type=True)
    except (OverflowError, TypeError, ValueError):
        return "json", json.dumps(doc)


def load(kind: str, data: bytes | str) -> Plan:
    if kind == "msgpack":
        assert isinstance(data, bytes)
        return plan_from_bytes(data, "mutant.plan")
    from actorflow.plan.io import _plan_from_doc

    return _plan_from_doc(json.loads(data), "mutant.json")


# changes that must not change what the plan computes
NEUTRAL = ("thrd_id", "register_num", "name", "op_name", "is_ctrl", "variables")


def neutral(touched: list[tuple]) -> bool:
    return all(any(isinstance(k, str) and k in NEUTRAL for k in p[-1:]) for p in touched)


def check_mutant(doc: dict, mutations: list, expected: list[np.ndarray] | None = None,
                 seconds: int = 20) -> str:
    """Load + validate one mutant; returns "rejected", "accepted" or "ran". Raises on a
    crash (non-actorflow exception), a hang, a validator bug or wrong numbers."""
    mutant, touched = mutate(doc, mutations)
    kind, data = encode(mutant)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        try:
            plan = load(kind, data)
            plan.validate()
        except ActorflowError as e:
            assert "validator bug" not in str(e), str(e)
            return "rejected"
        if expected is None or not neutral(touched):
            return "accepted"
        try:
            got = run_plan(plan, len(expected))
        except ActorflowError:
            return "rejected"  # refused at run time, clearly: allowed
        for a, b in zip(got, expected, strict=True):
            assert a.shape == b.shape and np.allclose(a, b), (touched, a, b)
        return "ran"
    except Hang:
        raise AssertionError(f"mutant hung for {seconds}s: {touched}") from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)

