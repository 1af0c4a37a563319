"""``Plan.validate``: every rule of DESIGN.md, each error naming the task and regst desc.

Works on plain ids only.  The last check, progress, dry-runs the pure actor state
machines (no threads, no kernels) for a few pieces: a plan whose register_nums cannot make
progress (a cycle, or acc/repeat rates that starve a fan-in) is rejected before it runs.
"""

from __future__ import annotations

import gc

from actorflow.errors import OpError, PlanValidationError
from actorflow.plan.model import SCHEMA_VERSION, Plan, RegstDesc, Task
from actorflow.protocol.kinds import KINDS
from actorflow.protocol.rules import Structure, article


def _fail(source: str, msg: str) -> PlanValidationError:
    return PlanValidationError(f"{source}: {msg}" if source else msg)


def validate_plan(plan: Plan, source: str = "", progress: bool = True) -> None:
    # Validation builds many short-lived acyclic objects (dry-run states and messages); the
    # cyclic GC rescanning them more than doubles the time for 10,000-task plans.
    enabled = gc.isenabled()
    gc.disable()
    try:
        _validate(plan, source, progress)
    finally:
        if enabled:
            gc.enable()


def _validate(plan: Plan, source: str, progress: bool) -> None:
    errs = _collect(plan)
    if errs:
        # several problems often share one cause (a dangling id breaks both ends): show a few
        more = f"; and {len(errs) - 5} more problems" if len(errs) > 5 else ""
        raise _fail(source, "; ".join(errs[:5]) + more)
    _check_cycles(plan, source)
    if progress:
        from actorflow.protocol.simulate import check_progress  # pure state machines only

        check_progress(plan, source)


def _collect(plan: Plan) -> list[str]:
    errs: list[str] = []
    if plan.version != SCHEMA_VERSION:
        errs.append(f"schema version {plan.version} (expected {SCHEMA_VERSION})")
    if plan.machines.count < 1 or plan.machines.devices_per_machine < 1:
        errs.append(f"machines {plan.machines} must have count >= 1 and devices >= 1")
    if not plan.tasks:
        errs.append("plan has no tasks")
    tasks: dict[int, Task] = {}
    descs: dict[int, RegstDesc] = {}
    for t in plan.tasks:
        if t.task_id in tasks:
            errs.append(f"task id {t.task_id} is used twice")
        tasks[t.task_id] = t
        for d in t.produced.values():
            if d.regst_desc_id in descs:
                errs.append(f"regst desc {d.regst_desc_id} is produced twice (tasks "
                            f"{descs[d.regst_desc_id].producer_task_id} and {t.task_id})")
            descs[d.regst_desc_id] = d
    structure = Structure(descs, {t.task_id: t.machine_id for t in plan.tasks})
    # membership sets, so wide fan-in/fan-out stays O(tasks + edges)
    consumes = {t.task_id: set(t.consumed_ids()) for t in plan.tasks}
    consumers = {i: set(d.consumer_task_ids) for i, d in descs.items()}
    for t in plan.tasks:
        where = f"task {t.task_id} ({t.label})"
        if t.task_type not in KINDS:
            errs.append(f"{where}: unknown task type '{t.task_type}' (known: "
                        f"{', '.join(KINDS.names())})")
        if not 0 <= t.machine_id < plan.machines.count:
            errs.append(f"{where}: machine_id {t.machine_id} out of range "
                        f"[0, {plan.machines.count})")
        if t.thrd_id < 0:
            errs.append(f"{where}: thrd_id {t.thrd_id} is negative")
        for d in t.produced.values():
            dw = f"{where}, regst desc {d.regst_desc_id}"
            if d.producer_task_id != t.task_id:
                errs.append(f"{dw}: producer_task_id is {d.producer_task_id}")
            if d.register_num < 1:
                errs.append(f"{dw}: register_num {d.register_num} < 1")
            errs.extend(f"{dw}: {e}" for e in _check_blobs(d))
            for c in d.consumer_task_ids:
                if c not in tasks:
                    errs.append(f"{dw}: consumer task {c} does not exist")
                elif d.regst_desc_id not in consumes[c]:
                    errs.append(f"{dw}: lists consumer task {c}, which does not consume it")
        seen = set()
        for name, ids in t.consumed.items():
            for i in ids:
                if i in seen:
                    errs.append(f"{where}: consumes regst desc {i} twice")
                seen.add(i)
                if i not in descs:
                    errs.append(f"{where}: consumed '{name}' names regst desc {i}, which no "
                                "task produces (dangling id)")
                elif t.task_id not in consumers[i]:
                    errs.append(f"{where}: consumes regst desc {i}, whose consumer list "
                                f"{descs[i].consumer_task_ids} does not include it")
        errs.extend(_check_exec(t, descs))
        errs.extend(_check_kind(t, structure))
    return errs


def _check_blobs(d: RegstDesc) -> list[str]:
    """Blob shapes and dtypes the allocator can make (checked before any memory exists)."""
    import numpy as np

    errs = []
    for name, b in d.blobs.items():
        if any(not isinstance(s, int) or s < 0 for s in b.shape):
            errs.append(f"blob '{name}' has shape {b.shape}; expected non-negative ints")
        try:
            np.dtype(b.dtype)
        except TypeError:
            errs.append(f"blob '{name}' has unknown dtype '{b.dtype}'")
    return errs


def _check_exec(t: Task, descs: dict[int, RegstDesc]) -> list[str]:
    from actorflow.kernels.registry import get_op

    errs = []
    readable = set(t.consumed_ids()) | {d.regst_desc_id for d in t.produced.values()}
    own = {d.regst_desc_id for d in t.produced.values()}
    for node in t.exec_sequence:
        k = node.kernel
        where = f"task {t.task_id} ({t.label}), op '{k.op_name}'"
        try:
            op = get_op(k.op_type)
        except OpError as e:
            errs.append(f"{where}: {e}")
            continue
        ins = {}
        bad = False
        for arg, ref in node.inputs.items():
            if ref.regst_desc_id not in readable or ref.regst_desc_id not in descs:
                errs.append(f"{where}: input '{arg}' reads regst desc {ref.regst_desc_id}, which "
                            "the task neither consumes nor produces")
                bad = True
            elif ref.blob not in descs[ref.regst_desc_id].blobs:
                errs.append(f"{where}: input '{arg}' reads blob '{ref.blob}' missing from regst "
                            f"desc {ref.regst_desc_id}")
                bad = True
            else:
                ins[arg] = descs[ref.regst_desc_id].blobs[ref.blob]
        for arg, ref in node.outputs.items():
            if ref.regst_desc_id not in own:
                errs.append(f"{where}: output '{arg}' writes regst desc {ref.regst_desc_id}, "
                            "which the task does not produce")
                bad = True
            elif ref.blob not in descs[ref.regst_desc_id].blobs:
                errs.append(f"{where}: output '{arg}' writes blob '{ref.blob}' missing from "
                            f"regst desc {ref.regst_desc_id}")
                bad = True
        if bad:
            continue
        try:
            inferred = op.infer_checked(k.op_name, ins, k.attrs)
        except OpError as e:
            errs.append(f"task {t.task_id} ({t.label}): {e}")
            continue
        for arg, ref in node.outputs.items():
            want = inferred.get(arg)
            have = descs[ref.regst_desc_id].blobs[ref.blob]
            if want is None:
                errs.append(f"{where}: op has no output '{arg}' (outputs: {sorted(inferred)})")
            elif (want.shape, want.dtype) != (have.shape, have.dtype):
                errs.append(
                    f"{where}: output '{arg}' is {want.shape} {want.dtype} but regst desc "
                    f"{ref.regst_desc_id} blob '{ref.blob}' is {have.shape} {have.dtype}")
    return errs


def _check_kind(t: Task, s: Structure) -> list[str]:
    """The kind's own structural rule, and: only kinds that may (comm_net) read regsts
    produced on another machine."""
    if t.task_type not in KINDS:
        return []  # reported above
    kind = KINDS.get(t.task_type)
    where = f"task {t.task_id} ({t.label})"
    errs = [f"{where}: {e}" for e in kind.rule(t, s)]
    if not kind.remote_inputs:
        for i in t.consumed_ids():
            d = s.descs.get(i)
            m = s.machine_of.get(d.producer_task_id) if d is not None else None
            if m is not None and m != t.machine_id:
                errs.append(f"{where}: reads regst desc {i} produced on machine {m}; "
                            f"{article(t.task_type)} task reads only regsts of its own machine "
                            f"{t.machine_id} (an edge between machines goes through a "
                            "comm_net task on the receiving machine)")
    return errs


def _check_cycles(plan: Plan, source: str) -> None:
    """Reject a directed cycle: with no initial tokens, no actor on it can ever act."""
    succ: dict[int, list[int]] = {t.task_id: [] for t in plan.tasks}
    # the main job's back edge (esac -> reentrant_lock) is the one cycle allowed: the lock
    # acts on its start input alone, so the cycle starts without an initial token
    back = {t.attrs.get("end_desc") for t in plan.tasks if t.task_type == "reentrant_lock"}
    for t in plan.tasks:
        for d in t.produced.values():
            if d.regst_desc_id not in back:
                succ[t.task_id].extend(d.consumer_task_ids)
    color = dict.fromkeys(succ, 0)
    for root in succ:
        if color[root]:
            continue
        stack = [(root, iter(succ[root]))]
        path = [root]
        color[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
                path.pop()
            elif color.get(nxt, 2) == 1:
                cyc = [*path[path.index(nxt):], nxt]
                raise _fail(source, "tasks form a cycle that can never make progress (no regst "
                            f"is ready before its first act): {' -> '.join(map(str, cyc))}")
            elif color.get(nxt) == 0:
                color[nxt] = 1
                stack.append((nxt, iter(succ[nxt])))
                path.append(nxt)
