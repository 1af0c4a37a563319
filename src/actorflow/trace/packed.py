"""Full-trace events packed as int64 words the moment they happen.

A hook packs the few integer fields it needs as native int64 words (``struct``) onto a
bytearray: nothing is retained per event but the words, so a long trace neither keeps
the runtime's messages alive nor gives the garbage collector more to scan, and a flush is
a bytes copy.  The rare CMD message also has a name and payload: those go to a side dict
keyed by the event's word offset.

Layouts (``code`` from ``events``; ``t`` = ``perf_counter_ns``):

    SEND / RECV   code, t, type, src, dst, desc, slot, piece, seq, msg_id        (10 words)
    ACT_BEGIN     code, t, task, act_id, piece, n_reads, n_writes, d, s, d, s ...
    ACT_END       code, t, task, act_id, piece                                    (5 words)
    ACT_DEVICE    code, t, task, act_id, piece, launch_ns, device_ns              (7 words)
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from typing import Any

from actorflow.errors import TraceError
from actorflow.trace.events import ACT_BEGIN, ACT_DEVICE, ACT_END, RECV

MSG_WORDS = 10
BYTEORDER = sys.byteorder


def decode(words: Sequence[int], cmds: dict[int, tuple[str, Any]] | None = None) -> list[list]:
    """Packed words -> event rows (the ``events.from_row`` layout)."""
    cmds = cmds or {}
    rows: list[list] = []
    i, n = 0, len(words)
    try:
        while i < n:
            code = words[i]
            row: list[Any]
            if code <= RECV:
                row = list(words[i:i + MSG_WORDS])
                c = cmds.get(i)
                row += [c[0], c[1]] if c else ["", None]
                i += MSG_WORDS
            elif code == ACT_BEGIN:
                nr, nw = words[i + 5], words[i + 6]
                j = i + 7
                reads = [[words[j + 2 * k], words[j + 2 * k + 1]] for k in range(nr)]
                j += 2 * nr
                writes = [[words[j + 2 * k], words[j + 2 * k + 1]] for k in range(nw)]
                row = [code, words[i + 1], words[i + 2], words[i + 3], words[i + 4], reads,
                       writes]
                i = j + 2 * nw
            elif code == ACT_END:
                row = list(words[i:i + 5])
                i += 5
            elif code == ACT_DEVICE:
                row = list(words[i:i + 7])
                i += 7
            else:
                raise TraceError(f"corrupt packed trace: unknown event code {code} at word {i}")
            rows.append(row)
    except IndexError as e:
        raise TraceError(f"corrupt packed trace: an event is cut short at word {i}") from e
    return rows


def decode_chunk(data: bytes, cmds: list, byteorder: str = BYTEORDER) -> list[list]:
    words = array("q")
    if len(data) % words.itemsize:
        raise TraceError(f"corrupt packed trace: {len(data)} bytes is not whole int64 words")
    words.frombytes(data)
    if byteorder != BYTEORDER:
        words.byteswap()
    return decode(words, {int(k): (c, p) for k, c, p in cmds})
