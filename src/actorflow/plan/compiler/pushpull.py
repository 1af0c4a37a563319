"""Push and pull jobs: the client's feeds and fetches as jobs of their own (seed 001).

For every input ``x`` of a job ``J`` the input task moves into a push job ``push:J/x``
(paced by its own critical section), and ``J`` gets a buffer task that reads what was
pushed together with ``J``'s own gate, so ``J`` starts a piece only when the main job
admitted it *and* its data is there.  For every output ``y`` a pull job ``pull:J/y`` reads
``J``'s result (again with its own gate) and hands it to the output task.  Push, job and pull
share no variable, so the lock lets them run side by side; the regsts between them keep
them in step, piece by piece.
"""

from __future__ import annotations

from actorflow.plan.model import BlobRef, ExecNode, JobInfo, KernelConf, RegstDesc, Task

PUSH, PULL = "push:", "pull:"


def is_push_pull(name: str) -> bool:
    return name.startswith((PUSH, PULL))


class _Builder:
    def __init__(self, tasks: list[Task], next_desc: int) -> None:
        self.tasks = tasks
        self.by_id = {t.task_id: t for t in tasks}
        self.next_desc = next_desc

    def copy_task(self, like: Task, job_id: int, name: str, src: RegstDesc) -> Task:
        """A task on ``like``'s unit copying regst desc ``src`` into one of its own; the
        main job's linker adds its gate (attr ``gated_copy``)."""
        t = Task(len(self.tasks), "normal", like.machine_id, like.thrd_id, name=name,
                 parallel_ctx=like.parallel_ctx, job_id=job_id, attrs={"gated_copy": True})
        out = RegstDesc(self.next_desc, t.task_id, [], src.register_num, dict(src.blobs),
                        src.mem_case)
        self.next_desc += 1
        t.produced["out"] = out
        t.consumed["in"] = [src.regst_desc_id]
        src.consumer_task_ids.append(t.task_id)
        for blob in src.blobs:
            t.exec_sequence.append(ExecNode(KernelConf(f"{name}.{blob}", "identity", {}),
                                            {"in": BlobRef(src.regst_desc_id, blob)},
                                            {"out": BlobRef(out.regst_desc_id, blob)}))
        self.tasks.append(t)
        self.by_id[t.task_id] = t
        return t

    def redirect(self, consumer: Task, old: int, new: int) -> None:
        """``consumer`` reads regst desc ``new`` where it read ``old``."""
        consumer.consumed = {k: [new if i == old else i for i in ids]
                             for k, ids in consumer.consumed.items()}
        for node in consumer.exec_sequence:
            for refs in (node.inputs, node.outputs):
                for arg, ref in refs.items():
                    if ref.regst_desc_id == old:
                        refs[arg] = BlobRef(new, ref.blob)


def add_push_pull_jobs(tasks: list[Task], jobs: list[JobInfo], next_desc: int) -> int:
    """Split every job's inputs and outputs into push and pull jobs (appended to ``jobs``,
    their tasks to ``tasks``); returns the next free regst desc id."""
    b = _Builder(tasks, next_desc)
    for info in list(jobs):
        mine = [t for t in tasks if t.job_id == info.job_id]
        for t in [t for t in mine if t.task_type == "input"]:
            name = t.attrs["input_name"]
            push = JobInfo(f"{PUSH}{info.name}/{name}", None, [name], [], [], len(jobs))
            jobs.append(push)
            (data,) = t.produced.values()
            readers = list(data.consumer_task_ids)
            data.consumer_task_ids = []
            buf = b.copy_task(t, info.job_id, f"{info.name}/{name}.pushed", data)
            out = buf.produced["out"]
            for c in readers:
                b.redirect(b.by_id[c], data.regst_desc_id, out.regst_desc_id)
                out.consumer_task_ids.append(c)
            t.job_id = push.job_id
            t.name = f"{push.name}/{t.label.split('/', 1)[-1]}"
        for t in [t for t in mine if t.task_type == "output"]:
            name = t.attrs["output_name"]
            pull = JobInfo(f"{PULL}{info.name}/{name}", None, [], [name], [], len(jobs))
            jobs.append(pull)
            (src_id,) = t.consumed_ids()
            src = b.by_id[next(p for p in tasks if any(
                d.regst_desc_id == src_id for d in p.produced.values())).task_id]
            desc = next(d for d in src.produced.values() if d.regst_desc_id == src_id)
            desc.consumer_task_ids.remove(t.task_id)
            got = b.copy_task(t, pull.job_id, f"{pull.name}/pulled", desc)
            got.produced["out"].consumer_task_ids.append(t.task_id)
            b.redirect(t, src_id, got.produced["out"].regst_desc_id)
            t.job_id = pull.job_id
            t.name = f"{pull.name}/{name}"
    return b.next_desc
