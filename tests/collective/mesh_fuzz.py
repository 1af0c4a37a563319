"""Malformed mesh messages for the live-run fuzzer: seeded, so a failure names its seed.

They start from what a rank really sends (a ``MESH`` header ``[src, [group op, seq, part,
meta]]`` with the world group's op names, sequence numbers of the run and plausible metas)
and break one or two things: field types and ranges, the header's shape, the message kind,
the frames (a byte count that no dtype of the run divides: never valid data), plus raw
msgpack values and random bytes.  None of them is a valid forgery of a rank's part.
"""

from __future__ import annotations

import os
import random
from typing import Any

import msgpack
import numpy as np

from actorflow.transport.codec import WIRE_VERSION, encode
from actorflow.transport.mesh import MESH

WEIRD: list[Any] = [None, True, -1, -(2**63), 2**64 - 1, 1.5, "x", b"\x00", [], {}, [1, 2],
                    10**9, "0,1,2:all_reduce[direct]"]
OPS = ["0,1,2:all_reduce[direct]", "0,1,2:all_reduce[ring]", "0,1,2:exchange", "0,1:x"]


def plausible(rng: random.Random, world: int) -> list:
    meta = rng.choice([["<f8", [5]], ["<f8", 100_000], ["<f4", [5]], None, ["<f8", [5, 1]]])
    return [rng.randrange(world), [rng.choice(OPS), rng.randrange(1, 45),
                                   rng.choice([0, 1, 2, 1 << 24]), meta]]


def _mutate(body: list, rng: random.Random, target: int) -> list:
    """Break the sender (0), a field of the key or its length (1), or the body's shape (2)."""
    if target == 0:
        body[0] = rng.choice(WEIRD)
    elif target == 1:
        key = body[1]
        i = rng.randrange(len(key) + 1)
        if i == len(key):
            body[1] = key[:rng.randrange(len(key))] if key else [rng.choice(WEIRD)]
        else:
            key[i] = rng.choice(WEIRD)
    else:
        body = body[:rng.randrange(2)] if rng.random() < 0.5 else [*body, rng.choice(WEIRD)]
    return body


def message(rng: random.Random, world: int = 3) -> list[bytes]:
    r = rng.random()
    if r < 0.1:
        return [os.urandom(rng.randrange(1, 64))]
    if r < 0.2:
        return [msgpack.packb(rng.choice([*WEIRD, [WIRE_VERSION, MESH, [], None]]),
                              use_bin_type=True)]
    body = plausible(rng, world)
    if r < 0.6:  # a header of the right shape, with frames no dtype of the run can read
        n = rng.choice([13, 1, 7 * 8 + 3])
        return encode(MESH, body, [("", np.frombuffer(os.urandom(n), np.uint8))])
    if rng.random() < 0.5:  # a second break, always of a field (the shape stays)
        body = _mutate(body, rng, 1)
    body = _mutate(body, rng, rng.randrange(3))
    kind = MESH if rng.random() < 0.8 else rng.choice([0, 1, 33, "x", None])
    head = msgpack.packb([WIRE_VERSION, kind, body, None], use_bin_type=True)
    return [head]
