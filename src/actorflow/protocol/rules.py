"""Structural rules by kind: what a task of each type must look like before it may run.

Every kind's record (``protocol.kinds``) names one rule; ``Plan.validate`` runs it on every
task of that type.  A rule returns its complaints (empty: fine) as phrases the validator
prefixes with the task, so a task retyped by hand (a kernel task called ``comm_net``, an
``acc`` with kernels its executor would never run) is rejected with what was expected.
Rules read tasks through ``TaskShape`` and plain ids; they never touch a live runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from actorflow.protocol.task import DescShape, TaskShape


@dataclass(frozen=True)
class Structure:
    """The plan around one task: every regst desc by id, every task's machine by id."""

    descs: Mapping[int, DescShape]
    machine_of: Mapping[int, int]


Rule = Callable[[TaskShape, Structure], list[str]]


# -- the pieces rules are made of ---------------------------------------------------------
def kernels(t: TaskShape, wanted: bool) -> list[str]:
    n = len(t.exec_sequence)
    if wanted and n == 0:
        return [f"{article(t.task_type)} task runs kernels, but its exec sequence is empty"]
    if not wanted and n:
        return [f"{article(t.task_type)} task runs no kernels, but its exec sequence has {n} "
                "(its executor would never run them)"]
    return []


def one_in_one_out(t: TaskShape) -> list[str]:
    ids = t.consumed_ids()
    if len(ids) != 1 or len(t.produced) != 1:
        return [f"{article(t.task_type)} task consumes one regst desc and produces one (it "
                f"consumes {len(ids)} and produces {len(t.produced)})"]
    return []


def same_blobs(t: TaskShape, s: Structure) -> list[str]:
    """Its one produced desc holds the blobs of its one consumed desc (a copy by name)."""
    src = s.descs.get(t.consumed_ids()[0])
    if src is None:
        return []  # a dangling id: the plan-wide checks already name it
    dst = next(iter(t.produced.values())).blobs
    if dict(src.blobs) != dict(dst):
        return [f"blobs of consumed regst desc {src.regst_desc_id} {_fmt(src.blobs)} differ "
                f"from produced {_fmt(dst)}"]
    return []


def produces(t: TaskShape) -> list[str]:
    return [] if t.produced else [f"{article(t.task_type)} task must produce a regst desc"]


def consumes(t: TaskShape) -> list[str]:
    if t.consumed_ids():
        return []
    return [f"{article(t.task_type)} task must consume at least one regst desc"]


def control_inputs_only(t: TaskShape, s: Structure) -> list[str]:
    """Generators pace themselves: whatever they consume is a control (tick) regst."""
    data = [i for i in t.consumed_ids() if i in s.descs and not s.descs[i].is_ctrl]
    if data:
        return [f"{article(t.task_type)} task consumes only control regsts, but regst descs {data} "
                "carry data"]
    return []


def positive_attr(t: TaskShape, key: str) -> list[str]:
    try:
        ok = int(t.attrs.get(key, 0)) >= 1
    except (TypeError, ValueError):
        ok = False
    return [] if ok else [f"attr '{key}' must be an integer >= 1, got {t.attrs.get(key)!r}"]


def article(kind: str) -> str:
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _fmt(blobs: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v.shape} {v.dtype}" for k, v in blobs.items()) + "}"


# -- one rule per kind ----------------------------------------------------------------------
def normal(t: TaskShape, s: Structure) -> list[str]:
    return kernels(t, True)


def boxing(t: TaskShape, s: Structure) -> list[str]:
    return kernels(t, True) + consumes(t) + produces(t)


def source(t: TaskShape, s: Structure) -> list[str]:
    return produces(t) + kernels(t, True) + control_inputs_only(t, s)


def input_(t: TaskShape, s: Structure) -> list[str]:
    return produces(t) + control_inputs_only(t, s)


def output(t: TaskShape, s: Structure) -> list[str]:
    errs = kernels(t, False)
    if len(t.consumed_ids()) != 1 or t.produced:
        errs.append("an output task consumes exactly one regst desc and produces none")
    return errs


def tick(t: TaskShape, s: Structure) -> list[str]:
    return kernels(t, False)


def acc(t: TaskShape, s: Structure) -> list[str]:
    errs = kernels(t, False) + positive_attr(t, "acc_num")
    shape = one_in_one_out(t)
    return errs + (shape or same_blobs(t, s))


def repeat(t: TaskShape, s: Structure) -> list[str]:
    errs = positive_attr(t, "repeat_num")
    shape = one_in_one_out(t)
    if shape:
        return errs + shape
    return errs + ([] if t.exec_sequence else same_blobs(t, s))


def copy(to_device: bool) -> Rule:
    """copy_h2d (host -> device memory) or copy_d2h (device -> host memory)."""
    def rule(t: TaskShape, s: Structure) -> list[str]:
        shape = one_in_one_out(t)
        if shape:
            return shape
        errs = [] if t.exec_sequence else same_blobs(t, s)
        src = s.descs.get(t.consumed_ids()[0])
        dst = next(iter(t.produced.values()))
        if src is not None:
            src_host, dst_host = src.mem_case == "host", dst.mem_case == "host"
            if (src_host, dst_host) != (to_device, not to_device):
                want = "host to device" if to_device else "device to host"
                errs.append(f"{article(t.task_type)} task copies {want} memory, but it reads "
                            f"'{src.mem_case}' and writes '{dst.mem_case}'")
        return errs
    return rule


def comm_net(t: TaskShape, s: Structure) -> list[str]:
    """On the receiving machine: brings one regst produced on another machine here."""
    errs = kernels(t, False)
    shape = one_in_one_out(t)
    if shape:
        return errs + shape
    errs += same_blobs(t, s)
    src = s.descs.get(t.consumed_ids()[0])
    if src is not None:
        where = s.machine_of.get(src.producer_task_id)
        if where == t.machine_id:
            errs.append(f"a comm_net task brings a regst from another machine, but regst desc "
                        f"{src.regst_desc_id} is produced on its own machine {where}")
    return errs
