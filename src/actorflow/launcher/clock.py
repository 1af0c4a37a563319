"""NTP-style clock offsets between a worker and the master, measured at rendezvous.

One exchange: the worker notes ``t0`` (its clock) and sends it; the master answers with
``t1`` (its clock when the request arrived) and ``t2`` (when it replied); the worker notes
``t3`` on receipt.  Then

    offset = ((t1 - t0) + (t2 - t3)) / 2      (master clock - worker clock, seconds)
    delay  = (t3 - t0) - (t2 - t1)            (round trip spent on the wire)

Of several exchanges the one with the smallest delay is kept: its error is at most
``delay / 2``.  Traces recorded on machine ``m`` are put on the master's clock by adding
``offset[m]`` to each wall-clock timestamp (what ``trace`` merging does).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClockSample:
    offset: float  # master - worker, seconds
    delay: float   # round-trip time minus master processing, seconds

    def to_dict(self) -> dict:
        return {"offset": self.offset, "delay": self.delay}


def sample(t0: float, t1: float, t2: float, t3: float) -> ClockSample:
    return ClockSample(((t1 - t0) + (t2 - t3)) / 2.0, (t3 - t0) - (t2 - t1))


def best(samples: list[ClockSample]) -> ClockSample:
    """The sample with the least round trip (the tightest error bound)."""
    if not samples:
        raise ValueError("no clock samples")
    return min(samples, key=lambda s: s.delay)
