"""What a receiver accepts: the largest frame and the most frames of one message.

Checked on every receive (``comm.py``) before a frame is used, so a peer that sends a
header listing a million blobs, or a frame larger than any regst of the run, gets a
``MalformedMessage`` naming the limit and the sender's address instead of exhausting memory.
The rest of the offending message is drained so the next receive starts at a message
boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

from actorflow.errors import UsageError


@dataclass(frozen=True)
class Limits:
    max_frame_bytes: int = 1 << 31   # one array frame (2 GiB); the header frame included
    max_frames: int = 1024           # array frames after the header

    def __post_init__(self) -> None:
        if self.max_frame_bytes < 64 or self.max_frames < 0:
            raise UsageError(f"transport limits out of range: {self} (max_frame_bytes >= 64, "
                             "max_frames >= 0)")


DEFAULT_LIMITS = Limits()
