"""How much regst memory a plan needs on each machine, and whether this machine has it.

Every regst desc owns ``register_num`` preallocated slots of its blobs on its producer's
machine, and a machine that consumes a desc produced elsewhere keeps a receive mirror of
it (same slots, same bytes).  ``plan show`` prints the totals; runtimes call
``check_fits`` before allocating so an oversized plan fails with the numbers instead of a
``MemoryError`` (or the OOM killer) halfway through allocation.
"""

from __future__ import annotations

import os

from actorflow.errors import PlanError
from actorflow.plan.model import Plan, RegstDesc


def desc_bytes(d: RegstDesc) -> int:
    """Bytes of all slots of one desc (blobs of unknown dtype count as 0: validate rejects)."""
    try:
        return d.register_num * d.nbytes()
    except TypeError:
        return 0


def bytes_per_machine(plan: Plan) -> dict[int, int]:
    """machine_id -> bytes of regst memory it allocates (own descs + receive mirrors)."""
    need: dict[int, int] = {}
    descs = plan.regst_descs()
    producer_machine = {d.regst_desc_id: t.machine_id for t in plan.tasks
                        for d in t.produced.values()}
    for t in plan.tasks:
        m = t.machine_id
        need[m] = need.get(m, 0) + sum(desc_bytes(d) for d in t.produced.values())
    for t in plan.tasks:
        for i in t.consumed_ids():
            if i in descs and producer_machine.get(i) != t.machine_id:
                need[t.machine_id] = need.get(t.machine_id, 0) + desc_bytes(descs[i])
    return need


def available_bytes() -> int | None:
    """Memory this process could still get: MemAvailable, capped by RLIMIT_AS if set."""
    avail: int | None = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            avail = None
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            avail = soft if avail is None else min(avail, soft)
    except (ImportError, OSError, ValueError):
        pass
    return avail


def fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def check_fits(need: int, what: str, available: int | None = None) -> None:
    """Raise ``PlanError`` if ``need`` bytes of regsts exceed what this machine has."""
    have = available_bytes() if available is None else available
    if have is not None and need > have:
        raise PlanError(
            f"{what} needs {fmt_bytes(need)} of regst memory (sum of register_num x blob "
            f"bytes) but this machine has {fmt_bytes(have)} available; lower register_num or "
            "the blob shapes, or run on more machines (flowlaunch plan show lists the bytes)")
