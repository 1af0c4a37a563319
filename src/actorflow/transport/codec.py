"""Wire codec: one msgpack header frame + raw array frames.  Never pickle.

    frames = encode(kind, body, [("out", arr)])     # arr goes out as its own buffer
    kind, body, metas = decode_head(frames[0])      # on the receiving side (comm.py)
    copy_into(metas, frames[1:], regst_slot, where="regst desc 3")  # straight into memory

The header is ``[WIRE_VERSION, kind, body, metas]``: ``kind`` is a small int whose meaning
belongs to the layer above (actor messages, unit reports, control messages), ``body`` any
msgpack value, ``metas`` lists ``[blob name, dtype str, shape]`` per following frame.  A
peer with another wire version is rejected with a message naming both versions.  This is
the only array codec of actorflow: data plane, unit reports and output pieces to the
launcher all use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgpack
import numpy as np

from actorflow.errors import MalformedMessage, TransportError

WIRE_VERSION = 1

_pack = msgpack.Packer(use_bin_type=True).pack


def encode(kind: int, body: Any, arrays: Iterable[tuple[str, np.ndarray]] = ()) -> list:
    """Frames for one message; array frames are the arrays themselves (no copy here)."""
    metas = []
    frames: list[Any] = [None]
    for name, a in arrays:
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        metas.append([name, a.dtype.str, list(a.shape)])
        frames.append(a)
    frames[0] = _pack([WIRE_VERSION, kind, body, metas or None])
    return frames


def encode_head(kind: int, body: Any) -> bytes:
    """The one frame of a message without arrays (what ``encode`` makes, as bytes)."""
    return _pack([WIRE_VERSION, kind, body, None])


def decode_head(head: bytes, source: str = "peer") -> tuple[int, Any, list | None]:
    """``(kind, body, metas)`` of a header frame; bad bytes name ``source``."""
    try:
        h = msgpack.unpackb(head, raw=False, strict_map_key=False, use_list=True)
        version, kind, body, metas = h
    except Exception as e:  # msgpack raises several unrelated types
        raise MalformedMessage(f"undecodable message header from {source} ({len(head)} "
                               f"bytes): {e}") from e
    if version != WIRE_VERSION:
        raise MalformedMessage(f"{source} speaks wire version {version!r}; this actorflow "
                               f"speaks {WIRE_VERSION} (mixed actorflow versions?)")
    if not isinstance(kind, int) or not (metas is None or isinstance(metas, list)):
        raise MalformedMessage(f"malformed message header from {source}: kind {kind!r}, "
                               f"blob list {type(metas).__name__}")
    return kind, body, metas


_DTYPES: dict[Any, np.dtype] = {}


def _dtype(s: Any) -> np.dtype:
    dt = _DTYPES.get(s)
    if dt is None:
        dt = np.dtype(s)
        if len(_DTYPES) < 256:
            _DTYPES[s] = dt
    return dt


def view(meta: list, frame: Any) -> np.ndarray:
    """A received blob as an array over the frame's memory (no copy; read-only)."""
    buf = getattr(frame, "buffer", frame)  # zmq.Frame -> its buffer
    try:
        return np.frombuffer(buf, dtype=_dtype(meta[1])).reshape(meta[2])
    except (TypeError, ValueError, IndexError) as e:
        raise MalformedMessage(f"blob meta {meta!r:.80} does not describe its "
                               f"{len(buf)}-byte frame: {e}") from e


def copy_into(metas: list, frames: list, dst: Mapping[str, np.ndarray],
              where: str | Callable[[], str]) -> None:
    """Write received blobs straight into preallocated arrays, checking names/shapes/dtypes.

    ``where`` names the destination in errors (a callable is asked only on an error)."""
    if len(metas) != len(frames):
        raise TransportError(f"{_where(where)}: header lists {len(metas)} blobs, got "
                             f"{len(frames)} frames")
    for meta, frame in zip(metas, frames):
        target = dst.get(meta[0])
        if target is None:
            raise TransportError(f"{_where(where)}: unknown blob '{meta[0]}' (expected "
                                 f"{sorted(dst)})")
        src = view(meta, frame)
        if src.shape != target.shape or src.dtype != target.dtype:
            raise TransportError(
                f"{_where(where)}: blob '{meta[0]}' arrived as {src.shape} {src.dtype}, the "
                f"receive buffer is {target.shape} {target.dtype}")
        np.copyto(target, src)


def _where(where: str | Callable[[], str]) -> str:
    return where if isinstance(where, str) else where()


def arrays_of(metas: list | None, frames: list) -> dict[str, np.ndarray]:
    """Received blobs as fresh arrays (owned by the caller)."""
    if not metas:
        return {}
    return {m[0]: view(m, f).copy() for m, f in zip(metas, frames)}


def views_of(metas: list | None, frames: list) -> dict[str, np.ndarray]:
    """Received blobs as read-only views of the frames (valid while the frames live)."""
    if not metas:
        return {}
    return {m[0]: view(m, f) for m, f in zip(metas, frames)}
