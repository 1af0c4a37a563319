"""Eager traces: every instruction as an act on its stream's track, in the trace format
of the actors (``trace/``), so ``flowlaunch trace export|summary DIR`` read them.

Machine 0, one unit and one track per VM stream (the track id plays the task id; its
name, e.g. ``cpu.compute:0``, is written into the file), one act per instruction (act id
= instruction id; reads/writes = the blob ids it reads and writes), named by op and the
user's file:line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from actorflow.trace.recorder import Recorder

if TYPE_CHECKING:
    from actorflow.eager.vm import VirtualMachine


class Tracer:
    def __init__(self, vm: VirtualMachine, directory: str | os.PathLike) -> None:
        self.vm = vm
        self.directory = Path(directory)
        vm.sync()  # what ran before is not part of the trace
        self.recorder = Recorder(trace_dir=self.directory)
        with vm.cv:
            vm.recorder = self.recorder
            for s in vm.stream_list:
                s.names = {}
                s.unit = self.recorder.unit((0, s.track))

    def close(self) -> None:
        """Wait for the traced work, name the tracks and acts, and finish the files."""
        vm = self.vm
        try:
            vm.sync()
        finally:
            with vm.cv:
                vm.recorder = None
                streams = list(vm.stream_list)
                for s in streams:
                    s.unit = None
            tasks = {s.track: {"label": s.label, "type": "stream", "machine_id": 0,
                               "thrd_id": s.track, "ops": [], "op_types": [s.stype.name],
                               "consumed": [], "produced": {}} for s in streams}
            acts = {s.track: dict(s.names) for s in streams}
            for w in self.recorder.writers.values():
                w.write_names(tasks, acts)
            self.recorder.close()
