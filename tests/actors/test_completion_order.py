"""Acts that an asynchronous stream completes leave in completion order, on every path.

A unit takes completions in two places: when its loop drains the stream, and after it
executes the messages of a finished act (more acts may have completed meanwhile).  If the
second place ran while the first still held a list of earlier completions, a later act's
READY went out first, with the earlier sequence number: the consumer read piece i+1's
data as piece i.  These tests drive one unit by hand with a scripted stream (no threads),
so the interleaving that once needed a loaded machine happens every time.
"""

from __future__ import annotations

from typing import Any

import actorflow as af
from actorflow.actors.runtime import MachineRuntime
from actorflow.protocol.messages import ACK, READY, Msg, cmd


class ScriptedStream:
    """An asynchronous stream whose ``completed()`` answers from a script of batches:
    each call hands out the next batch of acts (by launch index), then nothing."""

    device = "cpu"
    synchronous = False
    timing = False

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        self.launched: list[tuple[Any, Any]] = []
        self.script: list[list[int]] = []

    def launch(self, host: Any, act: Any) -> None:
        self.launched.append((host, act))

    def completed(self) -> list[tuple[Any, Any]]:
        if not self.script:
            return []
        return [self.launched[i] for i in self.script.pop(0)]

    def has_pending(self) -> bool:
        return bool(self.script)

    def set_waker(self, wake: Any) -> None:
        pass

    def act_timing(self, act: Any) -> None:
        return None

    def close(self, timeout: float = 10.0) -> None:
        pass


def _source_unit(pieces: int):
    b = af.PlanBuilder(machines=1, register_num=3)
    x = b.source("constant", {"shape": [2], "dtype": "float32", "value": 1.0,
                              "piece_scale": 1.0}, piece_num=pieces)
    b.output("y", b.op("relu", x))
    plan = b.build()
    rt = MachineRuntime(plan)
    src = next(t for t in plan.tasks if t.task_type == "source")
    unit = rt.route[src.task_id]
    stream = ScriptedStream(unit.stream.xp)
    unit.stream = stream
    for h in unit.actors.values():
        h.stream = stream
    consumer = rt.route[src.produced["out"].consumer_task_ids[0]]
    assert consumer is not unit
    return src, unit, stream, consumer


def _readies(unit) -> list[tuple[int, int, int]]:
    """(seq, piece, slot) of every READY waiting in ``unit``'s inbox, in arrival order."""
    return [(m.seq, m.piece_id, m.slot) for m in unit.waiting() if m.type == READY]


def test_an_act_completing_while_earlier_ones_are_sent_goes_after_them():
    src, unit, stream, consumer = _source_unit(pieces=3)
    unit.push([cmd(src.task_id, "start")])
    assert [a.piece_id for _, a in stream.launched] == [0, 1, 2]
    # the loop drains pieces 0 and 1; while piece 0's READY goes out, piece 2 completes
    stream.script = [[0, 1], [2]]
    unit.drain_stream()
    assert _readies(consumer) == [(0, 0, 0), (1, 1, 1), (2, 2, 2)]


def test_completions_found_after_a_message_queue_behind_earlier_ones():
    src, unit, stream, consumer = _source_unit(pieces=4)
    unit.push([cmd(src.task_id, "start")])  # three acts launched: every regst is written
    stream.script = [[0], [1, 2]]
    unit.drain_stream()
    assert [p for _, p, _ in _readies(consumer)] == [0, 1, 2]
    # an ACK frees slot 0: the fourth act is launched, then completes on the next drain
    desc = src.produced["out"]
    unit.push([Msg(ACK, desc.consumer_task_ids[0], src.task_id, desc.regst_desc_id, 0, 0)])
    assert [a.piece_id for _, a in stream.launched] == [0, 1, 2, 3]
    stream.script = [[3]]
    unit.drain_stream()
    assert _readies(consumer) == [(3, 3, 0)]
