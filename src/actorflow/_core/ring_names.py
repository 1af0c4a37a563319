"""Names of the ring segments of a run: one per reading process of a machine.

``actorflow<run>_m<machine>_ring<reader>``: the ``actorflow<run>_m<machine>_`` prefix is the
one ``launcher/leftovers.py`` removes after a killed worker and the test fixtures check, so
a ring segment is never left behind, SIGKILL included.  (Pure Python: importable when the
compiled core is not built.)
"""

from __future__ import annotations


def ring_segment_name(run_id: str, machine_id: int, reader: int | str) -> str:
    """The segment holding the rings into ``reader`` (a unit's thrd_id, or ``node``)."""
    return f"actorflow{run_id}_m{machine_id}_ring{reader}"
