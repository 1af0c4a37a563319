"""Every kind's structural rule (``protocol.rules``, the main job's in ``protocol.mainjob``)
on tasks of every wrong shape, complaint by complaint: what ``Plan.validate`` prefixes with
the task.  Built from plain plan records, no plan around them but the descs it reads."""

from __future__ import annotations

import pytest

from actorflow.plan.model import BlobDesc, ExecNode, KernelConf, RegstDesc, Task
from actorflow.protocol.kinds import get_kind
from actorflow.protocol.rules import Structure

A = {"out": BlobDesc((4,), "float32")}
B = {"out": BlobDesc((2,), "float64")}
KERNEL = ExecNode(KernelConf("k", "relu"))


def task(kind: str, consumed=(), produced=(), kernels: int = 0, machine: int = 0,
         mem: str = "host", blobs=A, **attrs) -> Task:
    t = Task(1, kind, machine, 0, exec_sequence=[KERNEL] * kernels, attrs=dict(attrs))
    for i, d in enumerate(consumed):
        t.consumed[f"in{i}"] = [d]
    for i, d in enumerate(produced):
        t.produced[f"out{i}"] = RegstDesc(d, 1, [9], 1, dict(blobs), mem)
    return t


def structure(**descs: RegstDesc) -> Structure:
    """Descs by id (``d10=...``): each produced by task 7 on machine 0 unless it says."""
    by_id = {int(k[1:]): v for k, v in descs.items()}
    return Structure(by_id, {7: 0, 8: 1, 1: 0})


def desc(i: int, blobs=A, mem: str = "host", ctrl: bool = False, producer: int = 7) -> RegstDesc:
    return RegstDesc(i, producer, [1], 1, dict(blobs), mem, ctrl)


S = structure(d10=desc(10), d11=desc(11, B), d12=desc(12, ctrl=True),
              d13=desc(13, mem="cuda:0"), d14=desc(14, producer=8))


def complaints(t: Task, s: Structure = S) -> list[str]:
    return get_kind(t.task_type).rule(t, s)


CASES = [
    # kind, task, the complaints exactly
    ("normal", task("normal", [10], [20], kernels=1), []),
    ("normal, no kernels", task("normal", [10], [20]),
     ["a normal task runs kernels, but its exec sequence is empty"]),
    ("boxing", task("boxing", [10], [20], kernels=1), []),
    ("boxing, nothing in or out", task("boxing", kernels=1),
     ["a boxing task must consume at least one regst desc",
      "a boxing task must produce a regst desc"]),
    ("source", task("source", [12], [20], kernels=1), []),
    ("source reading data", task("source", [10], [20], kernels=1),
     ["a source task consumes only control regsts, but regst descs [10] carry data"]),
    ("source, a dangling input", task("source", [99], [20], kernels=1), []),
    ("input", task("input", [], [20]), []),
    ("input, nothing produced", task("input"), ["an input task must produce a regst desc"]),
    ("output", task("output", [10]), []),
    ("output producing", task("output", [10], [20]),
     ["an output task consumes exactly one regst desc and produces none"]),
    ("output, two inputs", task("output", [10, 11]),
     ["an output task consumes exactly one regst desc and produces none"]),
    ("tick", task("tick", [12], [20]), []),
    ("tick with kernels", task("tick", [12], [20], kernels=2),
     ["a tick task runs no kernels, but its exec sequence has 2 (its executor would never "
      "run them)"]),
    ("acc", task("acc", [10], [20], acc_num=3), []),
    ("acc, acc_num 0", task("acc", [10], [20], acc_num=0),
     ["attr 'acc_num' must be an integer >= 1, got 0"]),
    ("acc, acc_num missing", task("acc", [10], [20]),
     ["attr 'acc_num' must be an integer >= 1, got None"]),
    ("acc, acc_num not a number", task("acc", [10], [20], acc_num="x"),
     ["attr 'acc_num' must be an integer >= 1, got 'x'"]),
    ("acc, other blobs", task("acc", [11], [20], acc_num=1),
     ["blobs of consumed regst desc 11 {out: (2,) float64} differ from produced "
      "{out: (4,) float32}"]),
    ("acc, two out", task("acc", [10], [20, 21], acc_num=1),
     ["an acc task consumes one regst desc and produces one (it consumes 1 and produces 2)"]),
    ("acc, none in", task("acc", [], [20], acc_num=1),
     ["an acc task consumes one regst desc and produces one (it consumes 0 and produces 1)"]),
    ("repeat", task("repeat", [10], [20], repeat_num=2), []),
    ("repeat with kernels, other blobs", task("repeat", [11], [20], kernels=1, repeat_num=2),
     []),  # a kernel may change the blobs
    ("repeat, other blobs", task("repeat", [11], [20], repeat_num=2),
     ["blobs of consumed regst desc 11 {out: (2,) float64} differ from produced "
      "{out: (4,) float32}"]),
    ("repeat, two in, bad num", task("repeat", [10, 11], [20], repeat_num=-1),
     ["attr 'repeat_num' must be an integer >= 1, got -1",
      "a repeat task consumes one regst desc and produces one (it consumes 2 and produces 1)"]),
    ("copy_h2d", task("copy_h2d", [10], [20], mem="cuda:0"), []),
    ("copy_h2d the wrong way", task("copy_h2d", [13], [20]),
     ["a copy_h2d task copies host to device memory, but it reads 'cuda:0' and writes "
      "'host'"]),
    ("copy_d2h", task("copy_d2h", [13], [20]), []),
    ("copy_d2h, other blobs", task("copy_d2h", [11], [20], mem="cuda:0"),
     ["blobs of consumed regst desc 11 {out: (2,) float64} differ from produced "
      "{out: (4,) float32}",
      "a copy_d2h task copies device to host memory, but it reads 'host' and writes "
      "'cuda:0'"]),
    ("copy_d2h with a kernel, other blobs", task("copy_d2h", [13], [20], kernels=1, blobs=B),
     []),
    ("copy_h2d, two in", task("copy_h2d", [10, 11], [20]),
     ["a copy_h2d task consumes one regst desc and produces one (it consumes 2 and "
      "produces 1)"]),
    ("comm_net", task("comm_net", [14], [20], machine=0), []),
    ("comm_net from its own machine", task("comm_net", [10], [20]),
     ["a comm_net task brings a regst from another machine, but regst desc 10 is produced "
      "on its own machine 0"]),
    ("comm_net, other blobs, kernels", task("comm_net", [14], [20], kernels=1, blobs=B),
     ["a comm_net task runs no kernels, but its exec sequence has 1 (its executor would never "
      "run them)",
      "blobs of consumed regst desc 14 {out: (4,) float32} differ from produced "
      "{out: (2,) float64}"]),
    ("comm_net, none in", task("comm_net", [], [20]),
     ["a comm_net task consumes one regst desc and produces one (it consumes 0 and produces "
      "1)"]),
    ("comm_net, a dangling input", task("comm_net", [99], [20]), []),
    # the main job's kinds
    ("wait_and_send_ids", task("wait_and_send_ids", [], [20]), []),
    ("wait_and_send_ids reading", task("wait_and_send_ids", [12], [20, 21]),
     ["a wait_and_send_ids task consumes 0 regst desc(s), this one 1",
      "a wait_and_send_ids task produces 1 regst desc(s), this one 2"]),
    ("reentrant_lock", task("reentrant_lock", [10, 11], [20], start_desc=10, end_desc=11), []),
    ("reentrant_lock, wrong attrs", task("reentrant_lock", [10, 11], [20], start_desc=10,
                                         end_desc=12),
     ["attrs start_desc/end_desc must name its consumed regst descs [10, 11]"]),
    ("reentrant_lock, one in", task("reentrant_lock", [10], [20], start_desc=10, end_desc=11),
     ["a reentrant_lock task consumes 2 regst desc(s), this one 1"]),
    ("case", task("case", [10], [20, 21], cs_descs=[21, 20]), []),
    ("case, wrong attrs", task("case", [10], [20, 21], cs_descs=[20]),
     ["attrs cs_descs must list its produced regst descs [20, 21]"]),
    ("case, nothing out", task("case", [10], [], cs_descs=[]),
     ["a case task produces 1+ regst desc(s), this one 0"]),
    ("esac", task("esac", [10, 11], [20], cs_of_desc={"10": 0, "11": 0}), []),
    ("esac, wrong map", task("esac", [10, 11], [20], cs_of_desc={"10": 0}),
     ["attrs cs_of_desc must map each consumed regst desc [10, 11] to a critical section"]),
    ("esac, nothing in", task("esac", [], [20], cs_of_desc={}),
     ["an esac task consumes 1+ regst desc(s), this one 0"]),
    ("callback_tick", task("callback_tick", [10]), []),
    ("callback_tick producing, kernel", task("callback_tick", [10], [20], kernels=1),
     ["a callback_tick task runs no kernels, but its exec sequence has 1 (its executor would "
      "never run them)", "a callback_tick task produces 0 regst desc(s), this one 1"]),
]


@pytest.mark.parametrize("name, t, want", CASES, ids=[c[0] for c in CASES])
def test_each_rule_names_exactly_what_is_wrong(name, t, want):
    assert complaints(t) == want
