"""Read/write dependencies on blob objects: which earlier instructions one must follow.

``link(instr)`` records the instruction as a reader of what it reads and as the last
writer of what it writes, and returns the earlier, still unfinished instructions it must
wait for: the last writer of each blob it reads (read-after-write), and for each blob it
writes, the last writer (write-after-write) and every reader since (write-after-read).
Both schedulers use it; they differ in *where* it runs (the issuing thread or the
scheduler thread) and in how the waiting is done.
"""

from __future__ import annotations

from actorflow.eager.instruction import Instruction

PRUNE_AT = 16  # prune finished readers once a blob has this many recorded


def link(instr: Instruction) -> list[Instruction]:
    deps: list[Instruction] = []
    for b in instr.reads:
        w = b.last_writer
        if w is not None and not w.done:
            deps.append(w)  # RAW
        readers = b.readers
        if len(readers) >= b.prune_at:  # amortized: the bound doubles with what stays
            readers[:] = [r for r in readers if not r.done]
            b.prune_at = max(PRUNE_AT, 2 * len(readers))
        readers.append(instr)
        b.nreads += 1
    for b in instr.writes:
        w = b.last_writer
        if w is not None and not w.done:
            deps.append(w)  # WAW
        readers = b.readers
        if readers:
            for r in readers:
                if not r.done and r is not instr:
                    deps.append(r)  # WAR
            b.readers = []
        b.last_writer = instr
    return deps
