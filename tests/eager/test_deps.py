"""``eager.deps.link`` on its own, with no streams or threads: which earlier, unfinished
instructions one must wait for (read-after-write, write-after-write, write-after-read),
and the bookkeeping it leaves on the blobs (last writer, readers, pruning)."""

from __future__ import annotations

import numpy as np

from actorflow.eager.blob import BlobObject
from actorflow.eager.deps import PRUNE_AT, link
from actorflow.eager.device import CPU
from actorflow.eager.instruction import Instruction, InstructionType


def _blob() -> BlobObject:
    return BlobObject((1,), "float64", CPU, np.zeros(1))


def _instr(name: str, reads=(), writes=()) -> Instruction:
    return Instruction(InstructionType(), None, name, None, list(reads), list(writes), None)


def test_a_read_waits_for_the_unfinished_writer_only():
    b = _blob()
    w = _instr("w", writes=[b])
    assert link(w) == [] and b.last_writer is w
    r = _instr("r", reads=[b])
    assert link(r) == [w]  # RAW
    assert b.readers == [r] and b.last_writer is w
    w.done = True
    assert link(_instr("r2", reads=[b])) == []  # a finished writer is no dependency


def test_a_write_waits_for_the_last_writer_and_every_unfinished_reader():
    b = _blob()
    w1 = link_and(_instr("w1", writes=[b]))
    r1, r2, r3 = (link_and(_instr(n, reads=[b])) for n in ("r1", "r2", "r3"))
    r2.done = True
    w2 = _instr("w2", writes=[b])
    assert link(w2) == [w1, r1, r3]  # WAW, then WAR for the readers still running
    assert b.readers == [] and b.last_writer is w2  # readers before w2 are forgotten
    w1.done = r1.done = r3.done = True
    assert link(_instr("w3", writes=[b])) == [w2]  # WAW on the new last writer only


def test_an_instruction_that_reads_and_writes_a_blob_does_not_wait_for_itself():
    b = _blob()
    w = link_and(_instr("w", writes=[b]))
    rw = _instr("rw", reads=[b], writes=[b])
    assert link(rw) == [w, w]  # RAW and WAW on w; never on itself as a reader
    assert b.last_writer is rw and b.readers == []


def test_blobs_are_linked_independently():
    a, c = _blob(), _blob()
    wa = link_and(_instr("wa", writes=[a]))
    wc = link_and(_instr("wc", writes=[c]))
    assert link(_instr("ra", reads=[a])) == [wa]
    assert link(_instr("rc", reads=[c])) == [wc]
    assert link(_instr("both", reads=[a, c])) == [wa, wc]


def test_finished_readers_are_pruned_once_there_are_enough():
    b = _blob()
    readers = [link_and(_instr(f"r{i}", reads=[b])) for i in range(PRUNE_AT)]
    assert len(b.readers) == PRUNE_AT and b.prune_at == PRUNE_AT
    for r in readers[:-2]:
        r.done = True
    late = link_and(_instr("late", reads=[b]))
    # the two still running stay, the new one is added; the bound stays at least PRUNE_AT
    assert b.readers == [readers[-2], readers[-1], late]
    assert b.prune_at == PRUNE_AT
    w = _instr("w", writes=[b])
    assert link(w) == [readers[-2], readers[-1], late]  # WAR on exactly the unfinished


def test_the_prune_bound_doubles_with_the_readers_that_stay():
    b = _blob()
    for i in range(PRUNE_AT):
        link_and(_instr(f"r{i}", reads=[b]))  # none finishes
    link_and(_instr("more", reads=[b]))
    assert len(b.readers) == PRUNE_AT + 1 and b.prune_at == 2 * PRUNE_AT
    for i in range(PRUNE_AT - 1):  # below the new bound: no pruning yet
        link_and(_instr(f"s{i}", reads=[b]))
    assert len(b.readers) == 2 * PRUNE_AT and b.prune_at == 2 * PRUNE_AT


def link_and(instr: Instruction) -> Instruction:
    link(instr)
    return instr
