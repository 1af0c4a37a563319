"""One worker = one machine of the plan: control-plane client + the data-plane MachineNode.

Lifecycle (rank 0 also runs the ControlMaster on a thread of this process):

    sync clock -> hello -> receive this machine's plan -> MachineNode(...).bind(host)
    -> send addr -> receive every machine's address -> connect, start -> ready
    -> receive start -> start local sources -> output pieces in batches, heartbeat
    -> every local actor exited: done -> shutdown -> close -> bye

Exit codes: 0 done, 1 this machine failed, 3 aborted because another machine failed,
128+N killed by signal N (SIGTERM/SIGINT close the node first, so nothing leaks).
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actorflow.errors import (
    ActorflowError,
    KernelError,
    LaunchError,
    StallError,
    report_thread_errors,
)
from actorflow.launcher.client import Aborted, ControlClient
from actorflow.launcher.master import ControlMaster
from actorflow.launcher.ports import local_address_towards
from actorflow.launcher.wire import MAX_ROOT_SENTENCE, OUT, OUT_QUEUE, OUT_SEND_TIMEOUT
from actorflow.plan.io import plan_from_bytes
from actorflow.plan.model import Plan, Task
from actorflow.trace.diagnostics import Diagnostics
from actorflow.transport.comm import Comm, connect
from actorflow.transport.registry import shutdown as shutdown_transport

EXIT_OK, EXIT_FAILED, EXIT_ABORTED = 0, 1, 3


@dataclass
class WorkerConfig:
    rank: int
    world_size: int
    master_host: str
    master_port: int
    target: str | None = None   # rank 0: the plan or job file to load
    master_bind_all: bool = False  # rank 0: the master listens on every interface
    unit: str = "thread"
    pieces: int | None = None
    run_id: str = ""
    host: str | None = None     # data-plane address; default: the interface towards the master
    out: str | None = None      # rank 0 without a launcher: save output pieces here
    connect_timeout: float = 30.0
    join_timeout: float = 60.0
    heartbeat_timeout: float = 2.0
    run_timeout: float = 0.0    # 0: no limit (heartbeats still catch dead machines)
    monitor: bool = False       # rank 0: a launcher will watch; start only once it does
    exit_on_stdin_eof: bool = False  # behind ssh: stdin closing means the launcher is gone
    trace: str | None = None    # record every event to this directory (trace/)
    stall_timeout: float | None = None  # watchdog: fail when no actor progressed this long
    deliver: str | None = None  # the launcher's output sink; None: outputs go to the master
    drive: str | None = None    # rank 0 of a multi-job run: the job file whose drive() runs


class _Signalled(BaseException):  # not an Exception: no handler may swallow it
    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)  # SIGHUP: ssh -tt hung up


def _on_signal(signum: int, frame: Any) -> None:
    for s in _STOP_SIGNALS:  # the first signal unwinds; later ones wait
        _set_handler(s, signal.SIG_IGN)
    raise _Signalled(signum)


def _set_handler(s: int, handler: Any) -> None:
    """signal.signal that tolerates a second signal arriving meanwhile (Ctrl-C, then the
    launcher's SIGTERM): CPython raises OSError "ignored due to race condition" there."""
    try:
        signal.signal(s, handler)
    except OSError:
        pass


def _watch_stdin() -> None:
    """Behind ssh, stdin is the launcher's channel: its EOF means the launcher is gone."""
    try:
        while os.read(0, 4096):  # raw fd: a buffered reader's lock would block shutdown
            pass
    except OSError:
        pass
    log("stdin closed (the launcher or its ssh connection is gone); stopping")
    os.kill(os.getpid(), signal.SIGTERM)


def log(msg: str) -> None:
    try:
        print(f"flowlaunch worker: {msg}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # the launcher (our pipe's reader) is gone: keep shutting down cleanly


def plan_source(target: str) -> Callable[[int], Plan]:
    """Rank 0's plan loader for ``world_size`` machines, checked for a launcher run."""
    def load(world_size: int) -> Plan:
        from actorflow.launcher.jobfile import job_options_from_env, load_target, runnable_check

        plan = load_target(target, world_size, **job_options_from_env())
        runnable_check(plan, target)
        return plan
    return load


def run_worker(cfg: WorkerConfig) -> int:
    """Run one machine to the end; returns the exit code (never raises for run failures)."""
    report_thread_errors("flowlaunch worker")
    old = {s: signal.signal(s, _on_signal) for s in _STOP_SIGNALS}
    if cfg.exit_on_stdin_eof:
        threading.Thread(target=_watch_stdin, name="flowlaunch-stdin", daemon=True).start()
    master = None
    client = None
    signalled = False
    code = EXIT_FAILED
    try:
        if cfg.rank == 0:
            if cfg.target is None and not cfg.monitor:
                raise LaunchError("rank 0 needs the plan: pass PLAN (a .plan file or job file)")
            # with a launcher (--monitor) and no PLAN, the plan comes compiled from it
            source = plan_source(cfg.target) if cfg.target is not None else None
            master = ControlMaster(cfg.world_size, source, cfg.master_host,
                                   cfg.master_port, run_id=cfg.run_id, pieces=cfg.pieces,
                                   heartbeat_timeout=cfg.heartbeat_timeout,
                                   join_timeout=cfg.join_timeout, expect_monitor=cfg.monitor,
                                   bind_all=cfg.master_bind_all,
                                   log=lambda s: log(f"master: {s}"))
            master.start()
        client = ControlClient(cfg.master_host, cfg.master_port, cfg.rank, cfg.world_size,
                               connect_timeout=cfg.connect_timeout,
                               master_timeout=max(3.0, cfg.heartbeat_timeout + 1.0))
        code = _Machine(cfg, client).run()
    except _Signalled as e:
        log(f"rank {cfg.rank}: {e}")
        code = 128 + e.signum
        signalled = True
    except ActorflowError as e:
        log(f"error: {str(e).splitlines()[0]}")
        code = EXIT_FAILED
    finally:
        try:
            if not _finish(cfg, master, client, wait=1.0 if signalled else 10.0) and code == 0:
                code = EXIT_FAILED
        finally:
            for s, h in old.items():
                _set_handler(s, h)
            shutdown_transport()  # what is still queued (last output pieces) leaves first
    return code


def _finish(cfg: WorkerConfig, master: ControlMaster | None, client: ControlClient | None,
            wait: float) -> bool:
    """Close the client and (rank 0) the master; save ``--out``.  False if that failed."""
    if client is not None:
        client.close()
    if master is not None:
        try:
            master.wait(wait)
        except ActorflowError as e:
            if wait >= 10.0:  # after a signal, cutting the master short is the point
                log(f"master: {e}")
        summary = master.summary()
        ok = summary["ok"]
        master.close()
        if not cfg.monitor:  # standalone (Slurm, SPMD): no launcher prints the last line
            from actorflow.launcher.report import summary_line

            name = master.plan.job.name if master.plan is not None else str(cfg.target)
            extra = {"ok": ok, **({"out": cfg.out} if cfg.out and ok else {})}
            print(summary_line(name, cfg.world_size, summary, extra), flush=True)
        if cfg.out and ok:
            from actorflow.launcher.outputs import outputs_from_results, save_outputs

            try:
                save_outputs(cfg.out, outputs_from_results(master.results))
            except ActorflowError as e:
                log(f"error: {e}")
                return False
            log(f"saved output pieces to {cfg.out}")
    return True


class _Machine:
    """The worker's run once it reached the master (one thread; owns the client)."""

    def __init__(self, cfg: WorkerConfig, client: ControlClient) -> None:
        self.cfg = cfg
        self.client = client
        self.node: Any = None
        self.diag: Any = None  # trace.Diagnostics: flight recorder, --trace, watchdog
        self.results: queue.SimpleQueue = queue.SimpleQueue()  # batches for the master
        self.delivered = 0
        self.outputs: dict[str, int] = {}  # pieces per output name sent to the launcher
        self._out: Comm | None = None
        self.driver: Any = None  # launcher.drive.Driver on rank 0 of a multi-job run

    def run(self) -> int:
        cfg, client = self.cfg, self.client
        try:
            try:
                return self._run()
            except Aborted as e:
                log(f"rank {cfg.rank}: {e}")
                if self.diag is not None and self.node is not None:  # for the merged report
                    self.diag.dump_once("aborted", str(e))
                    self._offer_root()
                self._close_node()
                client.send("bye")
                return EXIT_ABORTED
            except ActorflowError as e:
                self._report(e)
                return EXIT_FAILED
            except Exception as e:  # a bug below us: still tell the master, then fail
                err = LaunchError(f"machine {cfg.rank}: internal error: {type(e).__name__}: {e}")
                err.__cause__ = e
                self._report(err)
                return EXIT_FAILED
        finally:
            self._close_node()

    def _run(self) -> int:
        from actorflow.actors.node import MachineNode

        cfg, client = self.cfg, self.client
        client.sync_clock()
        host = cfg.host or local_address_towards(cfg.master_host, cfg.master_port)
        msg = client.hello(host, os.getpid(), cfg.join_timeout)
        client.start_heartbeat()  # beats on its own thread even while units start
        plan = plan_from_bytes(msg["plan"], "the plan sent by the master")
        # LOCAL_RANK * devices_per_machine + i is the GPU of this machine's cuda:i
        os.environ.setdefault("ACTORFLOW_DEVICES_PER_MACHINE",
                              str(plan.machines.devices_per_machine))
        run_id = str(msg.get("run_id") or cfg.run_id)
        self.diag = Diagnostics(plan, trace=cfg.trace, stall_timeout=cfg.stall_timeout,
                                clock_offset=client.clock.offset,
                                clock_error=client.clock.delay / 2,
                                plan_file=f"plan-m{cfg.rank}.plan")
        driver = self._driver(plan)  # rank 0 of a multi-job run drives the jobs by name
        if cfg.deliver:
            self._out = connect(cfg.deliver, linger_ms=10_000, queue=OUT_QUEUE,
                                send_timeout=OUT_SEND_TIMEOUT,
                                name=f"rank {cfg.rank} -> the launcher's output sink")
        if driver is not None:  # the jobs' outputs and callback ticks go to its JobClient
            self.node = MachineNode(plan, cfg.rank, unit=cfg.unit, run_id=run_id,
                                    on_deliver=driver.client.on_deliver,
                                    recorder=self.diag.recorder)
        else:
            self.node = MachineNode(plan, cfg.rank, unit=cfg.unit, run_id=run_id,
                                    on_batch=self._on_batch, recorder=self.diag.recorder)
        self.diag.attach(self.node.actor_states, self.node.fail)
        client.send("addr", addr=self.node.bind(host))
        peers = client.wait_for({"peers"}, cfg.join_timeout, "every machine's data address")
        self.node.connect({int(k): v for k, v in peers["peers"].items()})
        self.node.start()  # on this thread: unit processes die with the thread that made them
        client.send("ready")
        start = client.wait_for({"start"}, cfg.join_timeout, "the start signal")
        if not plan.is_multi_job:  # a multi-job plan's main job paces every job
            self._start_sources(plan, start.get("pieces"))
        if driver is not None:
            driver.start(self.node)
        deadline = time.monotonic() + cfg.run_timeout if cfg.run_timeout else None
        next_progress = 0.0
        while True:
            client.poll(0.05)
            self.node.flush_outputs()
            if driver is not None:
                for name, piece, arrays in driver.poll():
                    self._emit(name, [piece], arrays)
            self._forward_results()
            if time.monotonic() >= next_progress:
                next_progress = time.monotonic() + 0.5
                self._count_pieces()
            if self.node.error is not None:
                raise self.node.error
            if self.node.exited():
                self.node.flush_outputs()
                if driver is not None:  # its result, if it was still on its way
                    for name, piece, arrays in driver.poll(wait=5.0):
                        self._emit(name, [piece], arrays)
                self._forward_results()
                if self.node.error is not None:
                    raise self.node.error
                break
            if deadline is not None and time.monotonic() > deadline:
                raise LaunchError(f"machine {cfg.rank}: run exceeded {cfg.run_timeout:.0f}s; "
                                  f"still running: {self.node.describe_live()}")
        self._count_pieces()
        client.send("done", pieces=client.pieces, outputs=self.outputs)
        client.wait_for({"shutdown"}, None, "shutdown (the other machines to finish)")
        self._close_node()
        client.send("bye")
        return EXIT_OK

    def _driver(self, plan: Plan) -> Any:
        if not plan.is_multi_job or self.cfg.rank != 0:
            return None
        from actorflow.launcher.drive import Driver
        from actorflow.launcher.jobfile import jobs_driver

        source = self.cfg.drive or self.cfg.target
        fn = jobs_driver(source) if source else None
        if fn is None:
            raise LaunchError(f"{source or 'rank 0'}: a multi-job plan needs a job file with "
                              "build_jobs(machines) and drive(session) to drive it (--drive)")
        self.driver = Driver(plan, fn, str(source))
        return self.driver

    def _start_sources(self, plan: Plan, pieces: int | None) -> None:
        for t in plan.tasks:
            if t.machine_id != self.cfg.rank:
                continue
            if t.task_type == "source":
                n = pieces if pieces is not None else t.attrs.get("piece_num",
                                                                  plan.job.num_pieces)
                self.node.command(t.task_id, "start", None if n is None else int(n))
            elif t.task_type == "input":
                self.node.command(t.task_id, "close")

    def _on_batch(self, task: Task, piece_ids: list[int], arrays: dict) -> None:
        """Output pieces of this machine (from the node's receiver or a unit thread)."""
        self._emit(task.attrs.get("output_name", task.label), piece_ids, arrays)

    def _emit(self, name: str, piece_ids: list[int], arrays: dict) -> None:
        """Pieces of output ``name`` (arrays of shape ``(n, *blob)``) to the launcher."""
        if self._out is not None:  # straight to the launcher: frames by reference, no copy
            self._out.send(OUT, {"name": name, "pieces": list(piece_ids)}, arrays.items())
            self.outputs[name] = self.outputs.get(name, 0) + len(piece_ids)
            self.delivered += len(piece_ids)
        else:  # to the master (rank 0 keeps them for --out); sent from the client's thread
            self.results.put((name, list(piece_ids), dict(arrays)))

    def _count_pieces(self) -> None:
        """Progress of this machine for heartbeats: pieces through its slowest actor.

        Read from the node's actor states (thread units); where those are not visible
        (process units) it stays the number of output pieces delivered here.
        """
        try:
            states = self.node.actor_states()
        except RuntimeError:  # an actor changed under us; next time
            return
        acts = [st["acts"] for st in states if st.get("kind") not in ("acc", "repeat")]
        if acts:
            self.client.pieces = max(self.delivered, min(acts))

    def _forward_results(self) -> None:
        self.client.pieces = max(self.client.pieces, self.delivered)
        while True:
            try:
                name, ids, arrays = self.results.get_nowait()
            except queue.Empty:
                return
            self.delivered += len(ids)
            self.client.pieces = max(self.client.pieces, self.delivered)
            self.client.send("result", list(arrays.items()), name=name, pieces=ids,
                             delivered=self.delivered)

    def _report(self, e: ActorflowError) -> None:
        first = str(e).splitlines()[0]
        err: dict[str, Any] = {"rank": self.cfg.rank, "message": first,
                               "kind": type(e).__name__}
        if isinstance(e, KernelError):
            err.update(kernel=e.to_dict(), traceback=e.traceback_text)
        report = getattr(e, "report", None) if isinstance(e, StallError) else None
        if report is not None:  # a root that waits across the wire may be bettered
            err["remote_root"] = bool(report.remote)
        log(f"error: {first}")
        if isinstance(e, KernelError) and e.traceback_text:
            log("original traceback:\n" + e.traceback_text.rstrip())
        if self.diag is not None and self.node is not None:  # the states, before closing
            self.diag.dump_failure(e)
        # tell the master before closing the node: closing waits for a unit stuck in a
        # kernel (seconds), and meanwhile another rank's lesser error would be taken first
        self.client.send("error", error=err)  # the socket's linger delivers it on close
        self._close_node()

    def _offer_root(self) -> None:
        """Aborted: if this machine's own actors show a root with evidence (an act in
        flight, an actor that gave no state, a lost message), tell the master.  The rank
        whose watchdog spoke first may only have seen an actor waiting across the wire,
        and the master keeps this one instead (``flowlaunch run``: no dumps to merge)."""
        try:
            report = self.diag.analyze_last() if self.diag is not None else None
        except (KeyError, TypeError, ValueError) as e:  # states of a half-stopped node
            log(f"could not analyse this machine's actors: {e}")
            return
        if report is not None and report.pending and report.evidence:
            self.client.send("root", sentence=report.sentence[:MAX_ROOT_SENTENCE],
                             evidence=report.evidence)

    def _close_node(self) -> None:
        if self.driver is not None:
            driver, self.driver = self.driver, None
            driver.stop()
        if self.diag is not None:  # dump the flight recorder if the run failed; flush --trace
            diag, self.diag = self.diag, None
            diag.close(self.node.error if self.node is not None else None)
        if self.node is not None:
            node, self.node = self.node, None
            node.close()
        if self._out is not None:
            out, self._out = self._out, None
            out.close(10_000)
