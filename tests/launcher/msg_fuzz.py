"""Malformed messages for the live-run fuzzer: seeded (bytes too), so a seed gives the
same messages everywhere and a failure names its seed.

They start from real headers of the attacked plan (real task and desc ids) and break one
thing at a time: types, ranges, field counts, blob metas, frame sizes, message kinds, plus
raw msgpack values and random bytes.
"""

from __future__ import annotations

import random
from typing import Any

import msgpack

from actorflow.plan.model import Plan
from actorflow.protocol.messages import ACK, EORD, READY, Msg
from actorflow.transport.codec import WIRE_VERSION

WEIRD: list[Any] = [None, True, -1, -(2**63), 2**64 - 1, 1.5, "x", b"\x00", [], {}, [1, 2], 10**9]


def plausible(plan: Plan, rng: random.Random) -> list:
    d = rng.choice(list(plan.regst_descs().values()))
    dst = rng.choice(d.consumer_task_ids or [d.producer_task_id])
    t = rng.choice([READY, ACK, EORD])
    src, to = (d.producer_task_id, dst) if t != ACK else (dst, d.producer_task_id)
    return Msg(t, src, to, d.regst_desc_id, rng.randrange(d.register_num + 2),
               rng.randrange(100), rng.randrange(100), rng.randrange(1 << 40)).header()


def message(plan: Plan, rng: random.Random) -> list[bytes]:
    r = rng.random()
    if r < 0.1:
        return [rng.randbytes(rng.randrange(1, 64))]
    if r < 0.2:
        return [msgpack.packb(rng.choice([*WEIRD, [WIRE_VERSION, 0, [], None]]),
                              use_bin_type=True)]
    body = plausible(plan, rng)
    for _ in range(rng.randrange(1, 3)):
        i = rng.randrange(len(body) + 1)
        if not body:
            break
        if i == len(body):
            body = body[:rng.randrange(len(body))]
        else:
            body[i] = rng.choice(WEIRD)
    kind = 0 if rng.random() < 0.8 else rng.choice([1, 2, 3, 5, 6, 8, 42, "x", None])
    metas: Any = None
    frames: list[bytes] = []
    if rng.random() < 0.4:
        n = rng.randrange(1, 3)
        metas = [[rng.choice(["out", "x", 3]), rng.choice(["<f4", "<f8", "O", "zz", 7]),
                  rng.choice([[64, 32], [32], [-1], [2**40, 2**40], "s"])] for _ in range(n)]
        frames = [rng.randbytes(rng.choice([0, 7, 128, 8192])) for _ in range(rng.randrange(3))]
    head = msgpack.packb([WIRE_VERSION, kind, body, metas], use_bin_type=True)
    return [head, *frames]
