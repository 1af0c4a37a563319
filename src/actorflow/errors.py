"""One small exception hierarchy for everything actorflow raises on purpose.

Every error names the thing it is about (file, task, op, regst desc, address) so the
message alone tells the user what to fix.  Causes are chained with ``raise ... from``.
"""

from __future__ import annotations

from typing import Any


class ActorflowError(Exception):
    """Base of every error actorflow raises on purpose."""


class FatalError(ActorflowError):
    """An error that must never be retried (bad plan, bad input, protocol violation)."""


class PlanError(FatalError):
    """A plan that cannot be loaded, saved or run."""


class PlanLoadError(PlanError):
    """A plan file that is missing, corrupt, or of an unknown schema version."""


class PlanValidationError(PlanError):
    """A plan that breaks one of the rules of ``Plan.validate``."""


class CompileError(FatalError):
    """A job that cannot be lowered into a plan (shape mismatch, bad SBP, ...)."""


class UsageError(FatalError, ValueError):
    """A bad value given to a public API (placement ranks, SBP axis, job settings)."""


class ArgumentTypeError(FatalError, TypeError):
    """An argument of the wrong type (functional op signatures, placement, SBP)."""


class OpError(FatalError):
    """An op type, attribute or input that the op definition rejects."""


class ProtocolError(FatalError):
    """A message that breaks the actor protocol (unknown desc, double ack, ...)."""


class KernelError(ActorflowError):
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


class JobRunError(ActorflowError):
    """A piece of a job of a multi-job plan failed; names the job, the task and the piece."""

    def __init__(self, job: str, piece_id: int, message: str, task_id: int | None = None) -> None:
        self.job = job
        self.piece_id = piece_id
        self.task_id = task_id
        super().__init__(message)


class WaitTimeout(ActorflowError, TimeoutError):
    """A blocking wait ran out of time; the message names what it waited for."""


class SessionClosed(ActorflowError):
    """The session was used after it was closed or after it failed."""


class TransportError(ActorflowError):
    """A socket, address or codec problem; raised from the underlying cause."""


class MessageRejected(TransportError):
    """A received message broke a transport limit or could not be decoded (names the peer)."""


class MalformedMessage(TransportError):
    """A decoded message that breaks the wire rules of its receiver; names the peer and what
    was wrong (raised when the run is authenticated, so the sender holds the run's key)."""


class CommClosed(TransportError):
    """A Comm or Listener was used after it was closed."""


class UnitLost(TransportError):
    """An execution unit (a unit process) died mid-run; names the unit, machine and signal."""


class LaunchError(ActorflowError):
    """flowlaunch could not start, supervise or reach a worker."""


class TraceError(ActorflowError):
    """A trace file or trace directory that cannot be read or is inconsistent."""


class StallError(WaitTimeout):
    """The watchdog saw no progress for ``stall_timeout`` seconds; names the stuck actors."""

    report: Any = None  # the why-stuck report (``trace.whystuck.StuckReport``) behind it
    dump_path: str | None = None  # the flight-recorder dump written for it, if any


class RegistryError(FatalError, LookupError):
    """A name registered twice, or looked up but never registered (lists the known ones)."""


class UnknownOpError(OpError, RegistryError):
    """An op type that no op definition registered (an ``OpError`` where ops are checked)."""


class CollectiveError(ActorflowError):
    """A collective could not complete: a rank died, left, or sent what was not expected."""


class RankLost(CollectiveError):
    """A rank of a process group died or left mid-collective; ``rank`` names it."""

    def __init__(self, rank: int, message: str) -> None:
        self.rank = rank
        super().__init__(message)


class ConsistencyError(FatalError):
    """Ranks disagree on what should be the same global tensor (meta or data); names them."""


class EagerKernelError(ActorflowError):
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


class DeviceError(FatalError):
    """No usable device: CuPy missing (names the extra to install), a device index past the
    devices this machine has, a device type that is not known."""


class DimensionError(OpError, IndexError):
    """A dimension or index out of range (OneFlow raises ``IndexError``); names the range."""
