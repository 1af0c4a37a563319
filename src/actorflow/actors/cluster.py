"""NodeGroup: every machine of a plan as its own MachineNode, wired over a transport.

    with Session(plan, runtime=nodes(unit="process", scheme="tcp")) as s:
        outs = s.run_to_end(pieces=8)         # or actorflow.session.ClusterSession

Each machine gets a MachineNode bound to a fresh address of ``scheme`` (``tcp`` on
loopback, ``ipc`` or ``inproc``), so cross-machine edges really go through sockets and
comm_net receive buffers; with ``unit="process"`` each unit is a real process.  This is the
data-plane half of ``flowlaunch sim``; the launcher adds processes per machine and the
control plane.
"""

from __future__ import annotations

import secrets
import time

from actorflow.actors.hosting import Deliver, Recorder, RuntimeFactory
from actorflow.actors.node import MachineNode
from actorflow.errors import WaitTimeout
from actorflow.plan.model import Plan
from actorflow.transport.registry import local_address


class NodeGroup:
    """The runtime interface a Session drives, spread over one MachineNode per machine."""

    def __init__(self, plan: Plan, on_deliver: Deliver | None, unit: str, scheme: str,
                 timeout: float, recorder: Recorder | None = None) -> None:
        self.run_id = secrets.token_hex(4)
        self.nodes: dict[int, MachineNode] = {}
        self.routing = plan.routing_table()
        try:
            for m in range(plan.machines.count):
                self.nodes[m] = MachineNode(plan, m, unit=unit, run_id=self.run_id,
                                            on_deliver=on_deliver, timeout=timeout,
                                            recorder=recorder)
            addrs = {m: n.bind(address=local_address(scheme, f"m{m}"))
                     for m, n in self.nodes.items()}
            for n in self.nodes.values():
                n.connect(addrs)
        except BaseException:
            self.join()
            raise

    def start(self) -> None:
        try:
            for n in self.nodes.values():
                n.start()
        except BaseException:
            self.join()
            raise

    def _node(self, task_id: int) -> MachineNode:
        return self.nodes[self.routing[task_id][0]]

    @property
    def error(self) -> BaseException | None:
        for n in self.nodes.values():
            if n.error is not None:
                return n.error
        return None

    @property
    def stopping(self) -> bool:
        return self.error is not None

    def push_feed(self, task_id: int, arrays: dict) -> None:
        self._node(task_id).push_feed(task_id, arrays)

    def command(self, task_id: int, name: str, arg: int | None = None) -> None:
        self._node(task_id).command(task_id, name, arg)

    def wait_exited(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.error is not None:
                raise self.error
            live = [n for n in self.nodes.values() if not n.exited()]
            if not live:
                return
            left = deadline - time.monotonic()
            if left < 0:
                raise WaitTimeout(f"waited {timeout:.1f}s for every actor to exit; still "
                                  f"running: {self.describe_live()}")
            # wake as soon as a node finishes (a fixed sleep made every run up to 10 ms longer)
            live[0].hosting.wait(min(0.01, left))

    def actor_states(self) -> list[dict]:
        """Every machine's local actor states (trace dumps and the watchdog)."""
        return [s for n in self.nodes.values() for s in n.actor_states()]

    def fail(self, error: BaseException) -> None:
        for n in self.nodes.values():
            n.fail(error)

    def describe_live(self) -> str:
        return "; ".join(f"machine {m}: {n.describe_live()}" for m, n in self.nodes.items()
                         if not n.exited())

    def join(self, timeout: float = 10.0) -> None:
        for n in self.nodes.values():
            n.close(timeout)


def nodes(unit: str = "thread", scheme: str = "tcp", timeout: float = 60.0) -> RuntimeFactory:
    """A Session runtime factory: one MachineNode per machine on ``scheme`` sockets, each
    hosting its units as ``unit`` (``thread`` or ``process``)."""
    def make(plan: Plan, recorder: Recorder | None, on_deliver: Deliver) -> NodeGroup:
        return NodeGroup(plan, on_deliver, unit, scheme, timeout, recorder)
    return make
