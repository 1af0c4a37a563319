"""Micro-batches in a job (``af.Job(..., micro_batches=k)``): the time shape of its tensors.

Every op of such a job runs either once per request (rate 1: variables, the optimizer's
update, outputs) or once per micro-batch (rate k: the model's forward and backward).  An
input's batch is cut into k pieces (a ``repeat`` task, then ``microbatch_slice``); an op
reading both rates reads its rate-1 inputs through a ``repeat`` task (a variable read by
every micro-batch); a leaf's gradient is summed over the micro-batches by an ``acc`` task
(``backward`` seeds 1/k, so the sum is the mean gradient of the whole batch); an output
computed per micro-batch is stacked into shape ``(k, ...)`` (``microbatch_place`` + ``acc``).
So a pipeline of stages on different machines works on micro-batch i+1 while the next
stage works on micro-batch i, and the update runs once per request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actorflow.errors import CompileError

if TYPE_CHECKING:
    from actorflow.frontend.job import Job
    from actorflow.plan.compiler.graph import LogicalOp


def rate(job: Job, t: Any) -> int:
    return job._rate.get(t.name, 1)


def set_rate(job: Job, op: LogicalOp, inputs: dict[str, Any]) -> None:
    k = job.micro_batches
    if op.op_type == "repeat":
        r = k
    elif op.op_type == "acc":
        r = 1
    else:
        r = max((rate(job, t) for t in inputs.values()), default=1)
    job._rate[op.name] = r


def align_rates(job: Job, name: str, op_type: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Inputs of one rate: a rate-1 input of a per-micro-batch op is read through a repeat."""
    if op_type in ("repeat", "acc", "output"):
        return inputs
    rates = {k: rate(job, t) for k, t in inputs.items()}
    if op_type == "assign":
        if rates.get("value", 1) != 1:
            raise CompileError(f"job '{job.name}': op '{name}' assigns variable "
                               f"'{inputs['ref'].name}' a value computed per micro-batch; "
                               "assign once per request (from a gradient backward() "
                               "accumulated, or an acc of the value)")
        return inputs
    if len(set(rates.values())) == 1:
        return inputs
    return {k: (repeat(job, t) if rates[k] == 1 else t) for k, t in inputs.items()}


def repeat(job: Job, t: Any) -> Any:
    hit = job._repeats.get(t.name)
    if hit is None:
        hit = job._repeats[t.name] = job.add("repeat", {"in": t},
                                             {"repeat_num": job.micro_batches})
    return hit


def unpack(job: Job, t: Any) -> Any:
    """An input's batch (once per request) -> its micro-batches (k pieces)."""
    k = job.micro_batches
    if not t.shape or t.shape[0] % k:
        raise CompileError(f"job '{job.name}': input '{t.name}' of shape {tuple(t.shape)} does "
                           f"not cut into {k} micro-batches along axis 0")
    return job.add("microbatch_slice", {"in": repeat(job, t)}, {"num": k})


def pack(job: Job, t: Any) -> Any:
    """A per-micro-batch result -> one tensor of shape (k, ...) per request."""
    if rate(job, t) == 1:
        return t
    placed = job.add("microbatch_place", {"in": t}, {"num": job.micro_batches})
    return _settle(job, job.add("acc", {"in": placed}, {"acc_num": job.micro_batches}))


def _settle(job: Job, acc: Any) -> Any:
    """A kernel task after an ``acc`` that ends a chain: the main job links a job's last
    tasks to its sink ticks, and an acc task has room for no more than its one output."""
    return job.add("identity", {"in": acc})


def accumulate(job: Job, leaf: Any, g: Any) -> Any:
    """A rate-1 leaf's gradient computed per micro-batch, summed over the micro-batches."""
    if rate(job, g) == 1 or rate(job, leaf) != 1:
        return g
    return job.add("acc", {"in": g}, {"acc_num": job.micro_batches})


def close_open_ends(job: Job) -> None:
    """Per-micro-batch results nobody reads get an ``acc``: the main job counts a request
    done when a job's last tasks acted, and those must act once per request."""
    read = {src for op in job.spec.ops for src in op.inputs.values()}
    for op in list(job.spec.ops):
        if op.out is not None and op.name not in read and job._rate.get(op.name, 1) != 1:
            t = job.tensors.get(op.name)
            if t is not None:
                _settle(job, job.add("acc", {"in": t}, {"acc_num": job.micro_batches}))


__all__ = ["accumulate", "align_rates", "close_open_ends", "pack", "rate", "repeat", "unpack"]
