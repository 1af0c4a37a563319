"""Wire codec: one msgpack header frame + raw array frames.  Never pickle.

    frames = encode(MSG, msg.header(), [("out", arr)])   # arr goes out as its own buffer
    kind, body, metas, frames = recv(sock)                # on the receiving side
    copy_into(metas, frames, regst_slot, where="regst desc 3")       # straight into memory

The header is ``[WIRE_VERSION, kind, body, metas]`` where ``metas`` lists
``[blob name, dtype str, shape]`` per following frame.  A peer with another wire version
is rejected with a message naming both versions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgpack
import numpy as np
import zmq

from actorflow.errors import TransportError

WIRE_VERSION = 1

# message kinds (the second header field)
MSG = 0  # an actor message (READY/ACK/EORD/CMD); READY across machines carries blobs
DELIVER = 1  # unit -> node: an output piece [task_id, piece_id] + blobs
ERROR = 2  # unit -> node: a failure {"type": ..., ...}
DONE = 3  # unit -> node: every actor of the unit exited
HELLO = 4  # unit -> node: the unit is built and listening
STOP = 5  # node -> unit: stop now (another part of the run failed)
CONNECT = 6  # node -> unit: every machine's data-plane address
CONNECTED = 7  # unit -> node: addresses taken, the unit runs
STATUS = 8  # node -> unit: report your actors' wait states (hang reports)
STATES = 9  # unit -> node: [thrd, [blocked_on() of every live actor]]
KIND_NAMES = ("MSG", "DELIVER", "ERROR", "DONE", "HELLO", "STOP", "CONNECT", "CONNECTED",
              "STATUS", "STATES")

_pack = msgpack.Packer(use_bin_type=True).pack


def encode(kind: int, body: Any, arrays: Sequence[tuple[str, np.ndarray]] = ()) -> list:
    """Frames for one message; array frames are the arrays themselves (no copy here)."""
    if not arrays:
        return [_pack([WIRE_VERSION, kind, body, None])]
    metas = []
    frames: list[Any] = [None]
    for name, a in arrays:
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        metas.append([name, a.dtype.str, list(a.shape)])
        frames.append(a)
    frames[0] = _pack([WIRE_VERSION, kind, body, metas])
    return frames


def encode_head(kind: int, body: Any) -> bytes:
    """The one frame of a message without arrays (what ``encode`` makes, as bytes)."""
    return _pack([WIRE_VERSION, kind, body, None])


def send(sock: zmq.Socket, frames: list) -> None:
    """Send frames: the header copied (small), array buffers by reference (``copy=False``)."""
    if len(frames) == 1:
        sock.send(frames[0])
        return
    sock.send(frames[0], zmq.SNDMORE)
    last = len(frames) - 1
    for i in range(1, len(frames)):
        sock.send(frames[i], 0 if i == last else zmq.SNDMORE, copy=False)


def recv(sock: zmq.Socket, flags: int = 0) -> tuple[int, Any, list | None, list]:
    """One message: ``(kind, body, metas, frames)``; array frames are ``zmq.Frame`` (no copy).

    The header says how many array frames follow, so small messages cost one ``recv``.
    ``flags=zmq.NOBLOCK`` raises ``zmq.Again`` when nothing is waiting.
    """
    kind, body, metas = decode_head(sock.recv(flags))
    if not metas:
        return kind, body, metas, []
    frames = [sock.recv(copy=False) for _ in metas]
    if sock.getsockopt(zmq.RCVMORE):
        raise TransportError(f"message header lists {len(metas)} blobs but more frames follow")
    return kind, body, metas, frames


def decode_head(head: bytes) -> tuple[int, Any, list | None]:
    try:
        h = msgpack.unpackb(head, raw=False, strict_map_key=False, use_list=True)
        version, kind, body, metas = h
    except Exception as e:  # msgpack raises several unrelated types
        raise TransportError(f"undecodable message header ({len(head)} bytes): {e}") from e
    if version != WIRE_VERSION:
        raise TransportError(f"peer speaks wire version {version!r}; this actorflow speaks "
                             f"{WIRE_VERSION}")
    return kind, body, metas


def _view(meta: list, frame: Any) -> np.ndarray:
    buf = frame.buffer if isinstance(frame, zmq.Frame) else frame
    return np.frombuffer(buf, dtype=np.dtype(meta[1])).reshape(meta[2])


def copy_into(metas: list, frames: list, dst: Mapping[str, np.ndarray], where: str) -> None:
    """Write received blobs straight into preallocated arrays, checking names/shapes/dtypes."""
    if len(metas) != len(frames):
        raise TransportError(f"{where}: header lists {len(metas)} blobs, got {len(frames)} frames")
    for meta, frame in zip(metas, frames):
        target = dst.get(meta[0])
        if target is None:
            raise TransportError(f"{where}: unknown blob '{meta[0]}' (expected {sorted(dst)})")
        src = _view(meta, frame)
        if src.shape != target.shape or src.dtype != target.dtype:
            raise TransportError(
                f"{where}: blob '{meta[0]}' arrived as {src.shape} {src.dtype}, the receive "
                f"buffer is {target.shape} {target.dtype}")
        np.copyto(target, src)


def arrays_of(metas: list | None, frames: list) -> dict[str, np.ndarray]:
    """Received blobs as fresh arrays (owned by the caller)."""
    if not metas:
        return {}
    return {m[0]: _view(m, f).copy() for m, f in zip(metas, frames)}
