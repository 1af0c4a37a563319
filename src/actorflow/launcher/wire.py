"""Control-plane messages on the wire: one msgpack map per ZeroMQ frame, never pickle.

Every message is ``{"v": WIRE_VERSION, "t": type, ...fields}``.  A message of another
version or shape raises ``TransportError`` naming what arrived, so a worker from another
actorflow release fails loudly at rendezvous instead of misreading the plan.
Arrays (output pieces) travel as ``{"dtype", "shape", "data": bytes}``.
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from actorflow.errors import TransportError

WIRE_VERSION = 1


def pack(t: str, **fields: Any) -> bytes:
    fields["v"] = WIRE_VERSION
    fields["t"] = t
    return msgpack.packb(fields, use_bin_type=True)


def unpack(data: bytes, source: str = "peer") -> dict:
    """Decode one control message; the error names the sender and what was wrong."""
    try:
        msg = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as e:  # msgpack raises several unrelated types
        raise TransportError(f"control message from {source} is not msgpack: {e}") from e
    if not isinstance(msg, dict) or "t" not in msg:
        raise TransportError(f"control message from {source} has no type field: {msg!r:.80}")
    if msg.get("v") != WIRE_VERSION:
        raise TransportError(
            f"control message from {source} has wire version {msg.get('v')!r}; this actorflow "
            f"speaks version {WIRE_VERSION} (mixed actorflow versions in one cluster?)")
    return msg


def array_to_wire(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a)
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": a.tobytes()}


def array_from_wire(d: dict) -> np.ndarray:
    arr = np.frombuffer(d["data"], dtype=np.dtype(d["dtype"]))
    return arr.reshape(tuple(d["shape"])).copy()


def blobs_to_wire(arrays: dict[str, np.ndarray]) -> dict[str, dict]:
    return {k: array_to_wire(np.asarray(v)) for k, v in arrays.items()}


def blobs_from_wire(d: dict[str, dict]) -> dict[str, np.ndarray]:
    return {k: array_from_wire(v) for k, v in d.items()}
