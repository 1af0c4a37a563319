"""Dependency linking on its own, with no streams or threads, on each core (``eager.deps.link``
and the compiled core's): which earlier, unfinished instructions one must wait for
(read-after-write, write-after-write, write-after-read), and the bookkeeping it leaves on
the blobs (last writer, readers, pruning)."""

from __future__ import annotations

import numpy as np
import pytest

from actorflow.eager import deps
from actorflow.eager.deps import PRUNE_AT
from actorflow.eager.device import CPU
from actorflow.eager.instruction import InstructionType


class Core:
    """The VM's core as this file uses it: blobs, instructions, link."""

    def __init__(self, core) -> None:
        self.core = core
        self.link = getattr(core, "py_link", deps.link)  # the compiled core's, or Python's

    def blob(self):
        return self.core.Blob((1,), "float64", CPU, np.zeros(1))

    def instr(self, name: str, reads=(), writes=()):
        return self.core.Instruction(InstructionType(), None, name, None, list(reads),
                                     list(writes), None)

    def linked(self, name: str, reads=(), writes=()):
        i = self.instr(name, reads, writes)
        self.link(i)
        return i


@pytest.fixture
def k(vm) -> Core:
    return Core(vm.core)


def test_a_read_waits_for_the_unfinished_writer_only(k):
    b = k.blob()
    w = k.instr("w", writes=[b])
    assert k.link(w) == [] and b.last_writer is w
    r = k.instr("r", reads=[b])
    assert k.link(r) == [w]  # RAW
    assert b.readers == [r] and b.last_writer is w
    w.done = True
    assert k.link(k.instr("r2", reads=[b])) == []  # a finished writer is no dependency


def test_a_write_waits_for_the_last_writer_and_every_unfinished_reader(k):
    b = k.blob()
    w1 = k.linked("w1", writes=[b])
    r1, r2, r3 = (k.linked(n, reads=[b]) for n in ("r1", "r2", "r3"))
    r2.done = True
    w2 = k.instr("w2", writes=[b])
    assert k.link(w2) == [w1, r1, r3]  # WAW, then WAR for the readers still running
    assert b.readers == [] and b.last_writer is w2  # readers before w2 are forgotten
    w1.done = r1.done = r3.done = True
    assert k.link(k.instr("w3", writes=[b])) == [w2]  # WAW on the new last writer only


def test_an_instruction_that_reads_and_writes_a_blob_does_not_wait_for_itself(k):
    b = k.blob()
    w = k.linked("w", writes=[b])
    rw = k.instr("rw", reads=[b], writes=[b])
    assert k.link(rw) == [w, w]  # RAW and WAW on w; never on itself as a reader
    assert b.last_writer is rw and b.readers == []


def test_blobs_are_linked_independently(k):
    a, c = k.blob(), k.blob()
    wa = k.linked("wa", writes=[a])
    wc = k.linked("wc", writes=[c])
    assert k.link(k.instr("ra", reads=[a])) == [wa]
    assert k.link(k.instr("rc", reads=[c])) == [wc]
    assert k.link(k.instr("both", reads=[a, c])) == [wa, wc]


def test_finished_readers_are_pruned_once_there_are_enough(k):
    b = k.blob()
    readers = [k.linked(f"r{i}", reads=[b]) for i in range(PRUNE_AT)]
    assert len(b.readers) == PRUNE_AT and b.prune_at == PRUNE_AT
    for r in readers[:-2]:
        r.done = True
    late = k.linked("late", reads=[b])
    # the two still running stay, the new one is added; the bound stays at least PRUNE_AT
    assert b.readers == [readers[-2], readers[-1], late]
    assert b.prune_at == PRUNE_AT
    w = k.instr("w", writes=[b])
    assert k.link(w) == [readers[-2], readers[-1], late]  # WAR on exactly the unfinished


def test_the_prune_bound_doubles_with_the_readers_that_stay(k):
    b = k.blob()
    for i in range(PRUNE_AT):
        k.linked(f"r{i}", reads=[b])  # none finishes
    k.linked("more", reads=[b])
    assert len(b.readers) == PRUNE_AT + 1 and b.prune_at == 2 * PRUNE_AT
    for i in range(PRUNE_AT - 1):  # below the new bound: no pruning yet
        k.linked(f"s{i}", reads=[b])
    assert len(b.readers) == 2 * PRUNE_AT and b.prune_at == 2 * PRUNE_AT


def test_a_finished_last_writer_is_no_dependency_of_the_next_write(k):
    b = k.blob()
    w1 = k.linked("w1", writes=[b])
    w1.done = True
    w2 = k.instr("w2", writes=[b])
    assert k.link(w2) == [] and b.last_writer is w2


def test_every_read_is_counted_on_its_blob(k):
    a, c = k.blob(), k.blob()
    k.linked("r1", reads=[a])
    k.linked("r2", reads=[a, c])
    k.linked("w", writes=[a])  # writes are not reads
    assert (a.nreads, c.nreads) == (2, 1)
