"""``Plan.validate``: every rule of a valid plan (docs/architecture.md, "From a job to running
actors", step 2), each error naming the task and regst desc.

Works on plain ids only.  The last check, progress, dry-runs the pure actor state
machines (no threads, no kernels) for a few pieces: a plan whose register_nums cannot make
progress (a cycle, or acc/repeat rates that starve a fan-in) is rejected before it runs.
"""

from __future__ import annotations

import gc
import re

from actorflow.errors import ActorflowError, OpError, PlanValidationError
from actorflow.plan import limits as lim
from actorflow.plan.model import SCHEMA_VERSION, Plan, RegstDesc, Task
from actorflow.protocol.kinds import KINDS
from actorflow.protocol.rules import Structure, article

_MEM_CASE = re.compile(r"^(host|cpu|([a-z][a-z0-9_]{0,15})(?::(\d{1,5}))?)$")


def _fail(source: str, msg: str) -> PlanValidationError:
    return PlanValidationError(f"{source}: {msg}" if source else msg)


def validate_plan(plan: Plan, source: str = "", progress: bool = True) -> None:
    # Validation builds many short-lived acyclic objects (dry-run states and messages); the
    # cyclic GC rescanning them more than doubles the time for 10,000-task plans.
    enabled = gc.isenabled()
    gc.disable()
    try:
        _validate(plan, source, progress)
    except ActorflowError:
        raise
    except (RecursionError, MemoryError) as e:
        raise _fail(source, f"plan too large or deep to validate ({type(e).__name__})") from e
    except Exception as e:  # a validator bug must still name the plan, never escape raw
        raise _fail(source, f"validator bug: {type(e).__name__}: {e} (please report; the "
                    "plan may be malformed in a way no rule names yet)") from e
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
    m = plan.machines
    if not 1 <= m.count <= lim.MAX_MACHINES or not 1 <= m.devices_per_machine <= lim.MAX_DEVICES:
        errs.append(f"machines {m} must have count in [1, {lim.MAX_MACHINES}] and "
                    f"devices_per_machine in [1, {lim.MAX_DEVICES}]")
    if not plan.tasks:
        errs.append("plan has no tasks")
    n = plan.job.num_pieces
    if n is not None and not 0 <= n <= lim.MAX_PIECES:
        errs.append(f"job num_pieces {n} out of range [0, {lim.MAX_PIECES}]")
    errs.extend(_check_ids(plan))
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
        pc = t.parallel_ctx
        if not 0 <= pc.parallel_id < pc.parallel_num:
            errs.append(f"{where}: parallel_ctx ({pc.parallel_id}, {pc.parallel_num}) needs "
                        "0 <= parallel_id < parallel_num")
        for d in t.produced.values():
            dw = f"{where}, regst desc {d.regst_desc_id}"
            if d.producer_task_id != t.task_id:
                errs.append(f"{dw}: producer_task_id is {d.producer_task_id}")
            if d.register_num < 1:
                errs.append(f"{dw}: register_num {d.register_num} < 1")
            elif d.register_num > lim.MAX_REGISTER_NUM:
                errs.append(f"{dw}: register_num {d.register_num} is over the limit "
                            f"{lim.MAX_REGISTER_NUM} (regsts of one desc, preallocated)")
            errs.extend(f"{dw}: {e}" for e in _check_blobs(d))
            mem = _MEM_CASE.match(d.mem_case)
            if not mem or (mem.group(3) and int(mem.group(3)) >= plan.machines.devices_per_machine):
                errs.append(f"{dw}: mem_case '{d.mem_case[:40]}' is not 'host' or 'DEVICE:i' with "
                            f"i < devices_per_machine {plan.machines.devices_per_machine}")
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
        errs.extend(_check_numbers(t))
    return errs


def _check_ids(plan: Plan) -> list[str]:
    """Ids and unit numbers within the limits (message ids are ``task_id << 32 | n``)."""
    errs = []
    for t in plan.tasks:
        where = f"task {t.task_id} ({t.label})"
        if not 0 <= t.task_id <= lim.MAX_ID:
            errs.append(f"{where}: task_id out of range [0, {lim.MAX_ID}]")
        if t.thrd_id < 0:
            errs.append(f"{where}: thrd_id {t.thrd_id} is negative")
        elif t.thrd_id > lim.MAX_THRD_ID:
            errs.append(f"{where}: thrd_id {t.thrd_id} is over the limit {lim.MAX_THRD_ID}")
        for d in t.produced.values():
            if not 0 <= d.regst_desc_id <= lim.MAX_ID:
                errs.append(f"{where}: regst desc id {d.regst_desc_id} out of range "
                            f"[0, {lim.MAX_ID}]")
    return errs


def _check_numbers(t: Task) -> list[str]:
    """Rates and piece counts as plain integers within the limits (the dry run and the
    runtime trust them), and kernels that write every data blob the task hands on."""
    where = f"task {t.task_id} ({t.label})"
    errs = []
    for key in ("acc_num", "repeat_num"):
        if key in t.attrs or t.task_type == key[:-4]:
            n = t.attrs.get(key)
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= lim.MAX_RATE:
                errs.append(f"{where}: attr '{key}' is {n!r:.40}; expected an integer in "
                            f"[1, {lim.MAX_RATE}]")
    n = t.attrs.get("piece_num")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int)
                          or not 0 <= n <= lim.MAX_PIECES):
        errs.append(f"{where}: attr 'piece_num' is {n!r:.40}; expected null or an integer in "
                    f"[0, {lim.MAX_PIECES}]")
    if t.exec_sequence and t.task_type != "input":
        written = {(r.regst_desc_id, r.blob) for e in t.exec_sequence for r in e.outputs.values()}
        for d in t.produced.values():
            missing = [b for b in d.blobs if (d.regst_desc_id, b) not in written]
            if missing:
                errs.append(f"{where}: no kernel writes blob '{missing[0]}' of produced regst "
                            f"desc {d.regst_desc_id}")
    return errs


def _check_blobs(d: RegstDesc) -> list[str]:
    """Blob shapes and dtypes the allocator can make (checked before any memory exists)."""
    import numpy as np

    errs = []
    for name, b in d.blobs.items():
        if len(b.shape) > lim.MAX_DIMS or any(not isinstance(s, int) or s < 0 for s in b.shape):
            errs.append(f"blob '{name}' has shape {str(b.shape)[:60]}; expected non-negative "
                        f"ints (at most {lim.MAX_DIMS} of them)")
            continue
        elements = 1
        for s in b.shape:
            elements *= s
        if elements > lim.MAX_ELEMENTS:
            errs.append(f"blob '{name}' has {elements} elements; the limit is {lim.MAX_ELEMENTS}")
        try:
            dt = np.dtype(b.dtype)
        except (TypeError, ValueError, SyntaxError) as e:  # numpy parses some strings as exprs
            errs.append(f"blob '{name}' has unknown dtype '{str(b.dtype)[:40]}' "
                        f"({type(e).__name__})")
            continue
        if dt.hasobject or dt.kind not in "biufc":
            errs.append(f"blob '{name}' has dtype '{str(b.dtype)[:40]}'; expected a numeric dtype")
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
        except Exception as e:  # attrs come from a file: any type may reach the op's infer
            errs.append(f"{where}: attrs {k.attrs!r:.80} rejected by the op ({type(e).__name__}: "
                        f"{e})")
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
