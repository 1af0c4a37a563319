"""One small exception hierarchy for everything actorflow raises on purpose.

Errors that OneFlow raises as built-in exceptions subclass those too, keeping their names
(``OpError`` is a ``RuntimeError``, ``DimensionError`` an ``IndexError``, ``UsageError`` a
``ValueError`` and a ``RuntimeError``, ``ArgumentTypeError`` a ``TypeError``), so code
written for OneFlow (``except RuntimeError``) catches them (``docs/oneflow.md``).

Every error names the thing it is about (file, task, op, regst desc, address) so the
message alone tells the user what to fix.  Causes are chained with ``raise ... from``.
Two branches say whose the problem is:

- ``InputError``: what was given is wrong -- a plan, a job, an argument, a file, a message
  a peer sent.  Fix it; retrying the same thing fails the same way (never retried).
- ``RunError``: the run failed while it ran -- a kernel raised, a wait ran out of time, a
  socket, unit, rank or machine was lost, or actorflow itself has a bug (``InternalError``).

```
ActorflowError
  InputError      PlanError (PlanLoadError, PlanValidationError), CompileError,
                  UsageError, ArgumentTypeError, OpError (DimensionError), RegistryError
                  (UnknownOpError), ProtocolError, MalformedMessage, ConsistencyError,
                  DeviceError, TraceError, AutogradError
  RunError        KernelError, EagerKernelError, JobRunError, WaitTimeout (StallError),
                  SessionClosed, TransportError (CommClosed, UnitLost), LaunchError,
                  CollectiveError (RankLost), InternalError
```
"""

from __future__ import annotations

from typing import Any


class ActorflowError(Exception):
    """Base of every error actorflow raises on purpose."""


class InputError(ActorflowError):
    """What was given is wrong (plan, job, argument, file, a peer's message); never retried."""


class RunError(ActorflowError):
    """The run failed while it ran (kernel, wait, socket, unit, rank, machine, or a bug)."""


class PlanError(InputError):
    """A plan that cannot be loaded, saved or run."""


class PlanLoadError(PlanError):
    """A plan file that is missing, corrupt, or of an unknown schema version."""


class PlanValidationError(PlanError):
    """A plan that breaks one of the rules of ``Plan.validate``."""


class CompileError(InputError, RuntimeError):
    """A job that cannot be lowered into a plan (shape mismatch, bad SBP, ...)."""


class UsageError(InputError, ValueError, RuntimeError):
    """A bad value given to a public API (placement ranks, SBP axis, job settings)."""


class ArgumentTypeError(InputError, TypeError):
    """An argument of the wrong type (functional op signatures, placement, SBP)."""


class OpError(InputError, RuntimeError):
    """An op type, attribute or input that the op definition rejects."""


class ProtocolError(InputError):
    """A message that breaks the actor protocol (unknown desc, double ack, a task that is not
    hosted here, no route): a plan that is wrong or a peer that misbehaves."""


class MalformedMessage(InputError):
    """A received message its receiver refuses: undecodable, over a transport limit, or
    breaking the receiver's wire rules; names the peer.  Receivers drop and count it; on an
    authenticated run (only holders of the run's key can send) it fails the run."""


class KernelError(RunError, RuntimeError):
    """A kernel raised while an actor acted; carries where it happened."""

    def __init__(
        self,
        op_name: str,
        task_id: int,
        machine_id: int,
        piece_id: int,
        error: str,
        traceback_text: str = "",
        job: str | None = None,
    ) -> None:
        """``job``: the job the task belongs to, in a plan of several jobs."""
        self.op_name = op_name
        self.task_id = task_id
        self.machine_id = machine_id
        self.piece_id = piece_id
        self.error = error
        self.traceback_text = traceback_text
        self.job = job
        where = f"job '{job}', " if job else ""
        msg = (
            f"kernel of op '{op_name}' ({where}task {task_id}, machine {machine_id}) failed "
            f"on piece {piece_id}: {error}"
        )
        if traceback_text:
            msg += "\n--- original traceback ---\n" + traceback_text.rstrip()
        super().__init__(msg)

    def to_dict(self) -> dict:
        return {
            "op_name": self.op_name,
            "task_id": self.task_id,
            "machine_id": self.machine_id,
            "piece_id": self.piece_id,
            "error": self.error,
            "traceback": self.traceback_text,
            "job": self.job,
        }

    @classmethod
    def from_dict(cls, d: dict) -> KernelError:
        job = d.get("job")
        return cls(
            d["op_name"], d["task_id"], d["machine_id"], d["piece_id"], d["error"],
            d.get("traceback", ""), str(job) if job else None,
        )


class JobRunError(RunError):
    """A piece of a job of a multi-job plan failed; names the job, the task and the piece."""

    def __init__(self, job: str, piece_id: int, message: str, task_id: int | None = None) -> None:
        self.job = job
        self.piece_id = piece_id
        self.task_id = task_id
        super().__init__(message)


class WaitTimeout(RunError, TimeoutError):
    """A blocking wait ran out of time; the message names what it waited for."""


class SessionClosed(RunError):
    """The session was used after it was closed or after it failed."""


class TransportError(RunError):
    """A socket, address or codec problem; raised from the underlying cause."""


class CommClosed(TransportError):
    """A Comm or Listener was used after it was closed."""


class UnitLost(TransportError):
    """An execution unit (a unit process) died mid-run; names the unit, machine and signal."""


class InternalError(RunError):
    """A bug in actorflow itself: an unexpected exception inside the runtime (a unit's loop,
    a receiver), chained as the cause; the run is stopped rather than left hanging."""


class LaunchError(RunError):
    """flowlaunch could not start, supervise or reach a worker."""


class TraceError(InputError):
    """A trace file or trace directory that cannot be read or is inconsistent."""


class StallError(WaitTimeout):
    """The watchdog saw no progress for ``stall_timeout`` seconds; names the stuck actors."""

    report: Any = None  # the why-stuck report (``trace.whystuck.StuckReport``) behind it
    dump_path: str | None = None  # the flight-recorder dump written for it, if any


class RegistryError(InputError, LookupError):
    """A name registered twice, or looked up but never registered (lists the known ones)."""


class UnknownOpError(OpError, RegistryError):
    """An op type that no op definition registered (an ``OpError`` where ops are checked)."""


class CollectiveError(RunError, RuntimeError):
    """A collective could not complete: a rank died, left, or sent what was not expected."""


class RankLost(CollectiveError):
    """A rank of a process group died or left mid-collective; ``rank`` names it."""

    def __init__(self, rank: int, message: str) -> None:
        self.rank = rank
        super().__init__(message)


class ConsistencyError(InputError, RuntimeError):
    """Ranks disagree on what should be the same global tensor (meta or data); names them."""


class EagerKernelError(RunError, RuntimeError):
    """The kernel of an eagerly issued op failed on its stream; surfaces at the next wait
    (``.numpy()``, ``af.sync()``, printing) naming the op and the user's file:line."""

    def __init__(self, op_name: str, where: str, error: str, stream: str = "",
                 traceback_text: str = "") -> None:
        self.op_name = op_name
        self.where = where
        self.error = error
        self.stream = stream
        self.traceback_text = traceback_text
        on = f" on stream {stream}" if stream else ""
        msg = f"eager op '{op_name}' issued at {where} failed in its kernel{on}: {error}"
        if traceback_text:
            msg += "\n--- kernel traceback ---\n" + traceback_text.rstrip()
        super().__init__(msg)


class DeviceError(InputError, RuntimeError):
    """No usable device: CuPy missing (names the extra to install), a device index past the
    devices this machine has, a device type that is not known."""


class AutogradError(InputError, RuntimeError):
    """``backward()`` cannot proceed: an op with no gradient rule, a gradient whose shape is
    not its tensor's, a graph already freed, a root that does not require grad."""


class DimensionError(OpError, IndexError):
    """A dimension or index out of range (OneFlow raises ``IndexError``); names the range."""


def report_thread_errors(prog: str) -> None:
    """Make an exception that escapes a thread of this process one line on stderr
    (``PROG: internal error in thread NAME: Type: message (at file:line)``) instead of
    Python's bare traceback: a worker or unit process shows the user clear lines, never a
    traceback from deep inside.  ``ACTORFLOW_DEBUG=1`` keeps the full traceback."""
    import os
    import sys
    import threading
    import traceback

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        if os.environ.get("ACTORFLOW_DEBUG") == "1":
            traceback.print_exception(args.exc_type, args.exc_value, args.exc_traceback)
        tb = traceback.extract_tb(args.exc_traceback)
        where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
        name = args.thread.name if args.thread is not None else "?"
        print(f"{prog}: internal error in thread {name}: {args.exc_type.__name__}: "
              f"{args.exc_value}{where}", file=sys.stderr, flush=True)

    threading.excepthook = hook
