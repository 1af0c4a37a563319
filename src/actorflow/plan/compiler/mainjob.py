"""Build the main job and link every job's critical section into it (seed 001, MainJob).

    wait_and_send_ids -> reentrant_lock -> case --cs i--> source tick i
      -> identity tick (i, m) for every machine m -> the job's first tasks on m
      the job's last tasks on m -> sink tick (i, m) -> callback tick (i, m)   (tells client)
                                                   -> esac -> back edge -> lock

Like seed 001's main job (one parallel conf, the first machine), every main-job task runs
on machine 0, with the client: the per-machine ticks reach the job's tasks on machine m
through comm_net tasks.  Every job's inputs and outputs are on machine 0 too (``multi``),
so a client on machine 0 drives the whole plan.

One critical section per job.  Two sections conflict when one writes (assigns) a variable
the other reads or writes; a writer therefore conflicts with itself, and its pieces run one
at a time.  Edges that cross machines go through ``comm_net`` tasks like any other.
"""

from __future__ import annotations

from actorflow.plan.compiler.pushpull import PULL, PUSH, is_push_pull
from actorflow.plan.model import JobInfo, RegstDesc, Task

MAIN_JOB = "main"


def conflicts(jobs: list[JobInfo]) -> dict[str, list[int]]:
    """Critical-section id -> ids it may not run beside (writers vs. touchers)."""
    out: dict[str, list[int]] = {}
    for a in jobs:
        touch_a, w_a = set(a.reads) | set(a.writes), set(a.writes)
        out[str(a.job_id)] = [
            b.job_id for b in jobs
            if w_a & (set(b.reads) | set(b.writes)) or set(b.writes) & touch_a]
    return out


def request_order(jobs: list[JobInfo]) -> list[int]:
    """The ids one request of each job sends: its push jobs, the job, its pull jobs."""
    def owner(j: JobInfo) -> str:
        return j.name.split(":", 1)[1].rsplit("/", 1)[0]

    order = []
    for j in jobs:
        if is_push_pull(j.name):
            continue
        order += [p.job_id for p in jobs if p.name.startswith(PUSH) and owner(p) == j.name]
        order.append(j.job_id)
        order += [p.job_id for p in jobs if p.name.startswith(PULL) and owner(p) == j.name]
    return order


class _Linker:
    def __init__(self, tasks: list[Task], machines: int, next_desc: int, job_id: int) -> None:
        self.tasks = tasks
        self.next_desc = next_desc
        self.job_id = job_id
        # the main job's unit on each machine: the unit of the client's input/output tasks
        # when there is one (the client's requests then reach the job without a thread
        # switch), else a unit of its own
        self.thrd = {}
        for m in range(machines):
            io = [t.thrd_id for t in tasks if t.machine_id == m
                  and t.task_type in ("input", "output", "source")]
            self.thrd[m] = min(io) if io else 1 + max(
                (t.thrd_id for t in tasks if t.machine_id == m), default=-1)

    def task(self, kind: str, machine: int, name: str, **attrs: object) -> Task:
        t = Task(len(self.tasks), kind, machine, self.thrd[machine], name=f"{MAIN_JOB}/{name}",
                 attrs=dict(attrs), job_id=self.job_id)
        self.tasks.append(t)
        return t

    def desc(self, producer: Task, name: str, register_num: int = 2) -> RegstDesc:
        d = RegstDesc(self.next_desc, producer.task_id, [], register_num, {}, "host", True)
        self.next_desc += 1
        producer.produced[name] = d
        return d

    def consume(self, consumer: Task, desc: RegstDesc, name: str) -> None:
        """``consumer`` reads ``desc``; a remote desc comes through a comm_net task."""
        src = self.tasks[desc.producer_task_id]
        if src.machine_id != consumer.machine_id:
            key = f"comm_{desc.regst_desc_id}_m{consumer.machine_id}"
            comm = next((t for t in self.tasks if t.name == f"{MAIN_JOB}/{key}"), None)
            if comm is None:
                comm = self.task("comm_net", consumer.machine_id, key)
                comm.consumed["in"] = [desc.regst_desc_id]
                desc.consumer_task_ids.append(comm.task_id)
                self.desc(comm, "out", desc.register_num)
            desc = comm.produced["out"]
        consumer.consumed[name] = [desc.regst_desc_id]
        desc.consumer_task_ids.append(consumer.task_id)


def _done_tasks(tasks: list[Task]) -> list[Task]:
    """A job's last tasks: every other task of the job acted for a piece once these did."""
    by_id = {t.task_id: t for t in tasks}
    out = []
    for t in tasks:
        if t.task_type in ("output", "comm_net", "copy_h2d", "copy_d2h"):
            continue  # outputs and plain copies touch no variable; the client waits for
            # outputs itself, and copy kinds produce exactly one regst desc
        consumers = [c for d in t.produced.values() for c in d.consumer_task_ids]
        if all(by_id[c].task_type == "output" for c in consumers if c in by_id):
            out.append(t)
    return out


def link_main_job(tasks: list[Task], jobs: list[JobInfo], machines: int,
                  next_desc: int) -> JobInfo:
    """Append the main job's tasks to ``tasks`` (every job already in it); its JobInfo."""
    main_id = len(jobs)
    lk = _Linker(tasks, machines, next_desc, main_id)
    wait = lk.task("wait_and_send_ids", 0, "wait_and_send_ids",
                   num_critical_sections=len(jobs), request_order=request_order(jobs))
    lock = lk.task("reentrant_lock", 0, "reentrant_lock", conflicts=conflicts(jobs))
    case = lk.task("case", 0, "case")
    esac = lk.task("esac", 0, "esac")
    start = lk.desc(wait, "out")
    lk.consume(lock, start, "start")
    admitted = lk.desc(lock, "out")
    lk.consume(case, admitted, "in")
    cs_descs = []
    cs_of_desc: dict[str, int] = {}
    job_tasks: dict[int, list[Task]] = {}
    for t in tasks:
        if t.job_id != main_id:
            job_tasks.setdefault(t.job_id, []).append(t)
    for job in jobs:
        cs = job.job_id
        out = lk.desc(case, f"cs{cs}")
        cs_descs.append(out.regst_desc_id)
        src = lk.task("tick", 0, f"source_tick_cs{cs}", critical_section=cs)
        lk.consume(src, out, "in")
        fan = lk.desc(src, "out")
        mine = job_tasks.get(cs, [])
        done = {t.task_id for t in _done_tasks(mine)}
        for m in range(machines):
            ident = lk.task("tick", 0, f"identity_tick_cs{cs}_m{m}", critical_section=cs)
            lk.consume(ident, fan, "in")
            gate = lk.desc(ident, "out")
            on_m = [t for t in mine if t.machine_id == m]
            for t in on_m:  # the job's first tasks on m: inputs, sources, variables, and
                # the copies of what push jobs pushed / what pull jobs take
                if not t.consumed or t.attrs.get("gated_copy"):
                    lk.consume(t, gate, "gate")
            sink = lk.task("tick", 0, f"sink_tick_cs{cs}_m{m}", critical_section=cs)
            ends = [t for t in on_m if t.task_id in done]
            for t in ends:
                lk.consume(sink, lk.desc(t, f"done_cs{cs}"), f"done_{t.task_id}")
            if not gate.consumer_task_ids or not ends:
                lk.consume(sink, gate, "gate")
            finished = lk.desc(sink, "out")
            cb = lk.task("callback_tick", 0, f"callback_tick_cs{cs}_m{m}", critical_section=cs)
            lk.consume(cb, finished, "in")
            before = set(esac.consumed_ids())
            lk.consume(esac, finished, f"cs{cs}_m{m}")
            (got,) = set(esac.consumed_ids()) - before
            cs_of_desc[str(got)] = cs
    back = lk.desc(esac, "out")
    lk.consume(lock, back, "end")
    lock.attrs.update(start_desc=start.regst_desc_id, end_desc=back.regst_desc_id)
    case.attrs["cs_descs"] = cs_descs
    esac.attrs["cs_of_desc"] = cs_of_desc
    return JobInfo(MAIN_JOB, None, [], [], [], main_id)
