"""Setting up the world process group through a rendezvous, once per process.

The rendezvous is a small key-value store every rank can reach (the launcher's control
plane provides one at ``MASTER_ADDR:MASTER_PORT``).  This package does not import the
launcher: the top level installs a factory with ``set_rendezvous_factory`` and
``world()`` calls it on first use, so a script needs no extra ports or setup calls.

The group's sockets use the process's key (``transport.auth.use_key``; the factory takes
it from the launcher): a world of several ranks is refused while no key was decided.

Setup: every rank binds its inbox, publishes its address, reads everyone else's, connects,
and passes a barrier over the data plane itself (which proves every link); then
the rendezvous is closed (its port is only needed while ranks meet).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from actorflow.collective.channel import Channel
from actorflow.collective.group import DEFAULT_TIMEOUT, ProcessGroup
from actorflow.errors import CollectiveError, UsageError
from actorflow.transport.auth import key_decided
from actorflow.transport.mesh import Mesh, reachable_host
from actorflow.transport.registry import at_exit

# s a leaving rank waits for its last messages to leave (a paused or stuck peer's share is
# then dropped); a dead peer's share is dropped at once
EXIT_TIMEOUT = float(os.environ.get("ACTORFLOW_COLLECTIVE_EXIT_TIMEOUT", "30"))


class Rendezvous(Protocol):
    """What the process group needs from a rendezvous: a key-value store with waits."""

    def set(self, key: str, value: str) -> None: ...

    def get(self, key: str, timeout: float) -> str: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class WorldInfo:
    """Where this process stands: its rank, the world size, and the master's address."""

    rank: int
    world_size: int
    master_host: str = "127.0.0.1"
    master_port: int = 0


RendezvousFactory = Callable[[WorldInfo, float], Rendezvous]

_factory: RendezvousFactory | None = None
_info_source: Callable[[], WorldInfo] | None = None
_world: ProcessGroup | None = None
_generation = 0


def set_rendezvous_factory(factory: RendezvousFactory,
                           info: Callable[[], WorldInfo]) -> None:
    """Install how to find this rank (``info``) and how to meet the others (``factory``)."""
    global _factory, _info_source
    _factory, _info_source = factory, info


def world() -> ProcessGroup:
    """The group of every rank, set up on first use."""
    if _world is None:
        if _info_source is None:
            raise CollectiveError("no rendezvous installed: import actorflow (which installs "
                                  "the launcher's) or call init_process_group")
        info = _info_source()
        if info.world_size == 1:
            return init_process_group(info, None)
        if _factory is None:
            raise CollectiveError("no rendezvous factory installed")
        init_process_group(info, _factory(info, DEFAULT_TIMEOUT))
    assert _world is not None
    return _world


def is_initialized() -> bool:
    return _world is not None


def init_process_group(info: WorldInfo, rendezvous: Rendezvous | None, *,
                       timeout: float = DEFAULT_TIMEOUT, **options: Any) -> ProcessGroup:
    """Meet every rank through ``rendezvous`` and return the world group (closes it after)."""
    global _world, _generation
    if _world is not None:
        raise UsageError("the process group is already set up; call destroy() first")
    if not 0 <= info.rank < info.world_size:
        raise UsageError(f"rank {info.rank} out of range for world size {info.world_size}")
    if info.world_size > 1 and not key_decided():  # its sockets would take anyone's bytes
        raise UsageError("init_process_group: this process has no cluster key, so the group's "
                         "sockets would accept anyone: call actorflow.transport.auth.use_key("
                         "ClusterKey.read(FILE)) first (the same key file on every rank), or "
                         "use_key(None) to run without authentication")
    _generation += 1
    mesh = Mesh(info.rank, info.world_size, reachable_host(info.master_host))
    try:
        if info.world_size > 1:
            if rendezvous is None:
                raise UsageError(f"world size {info.world_size} needs a rendezvous")
            _meet(mesh, info, rendezvous, timeout)
        group = ProcessGroup(Channel(mesh), range(info.world_size), timeout=timeout, **options)
        if info.world_size > 1:
            group.barrier()
    except BaseException:
        mesh.close()
        if rendezvous is not None:
            rendezvous.close()
        raise
    if rendezvous is not None:
        rendezvous.close()
    _world = group
    at_exit(destroy)  # before pyzmq's own exit hook frees the frames still queued
    return group


def destroy(timeout: float | None = None) -> None:
    """Leave the world group: tell the peers (so they do not mistake it for a crash), wait
    until what this rank sent has left (at most ``timeout`` s, default
    ``ACTORFLOW_COLLECTIVE_EXIT_TIMEOUT``; run at exit, right after the last collective,
    much may still be queued), close."""
    global _world
    group, _world = _world, None
    if group is None:
        return
    timeout = EXIT_TIMEOUT if timeout is None else timeout
    mesh = group.channel.mesh
    failed = group.channel.failed
    group.close()
    try:
        mesh.goodbye({"lost": failed} if failed is not None else None)
        stuck = mesh.flush(timeout)
        if stuck:
            ranks = ", ".join(map(str, stuck))
            print(f"actorflow: rank {mesh.rank} left before its last messages to "
                  f"rank{'s' if len(stuck) > 1 else ''} {ranks} were sent: they took none "
                  f"for {timeout:g}s (paused or stuck?); ACTORFLOW_COLLECTIVE_EXIT_TIMEOUT "
                  "sets how long to wait", file=sys.stderr, flush=True)
    finally:
        mesh.close()


def _meet(mesh: Mesh, info: WorldInfo, rdv: Rendezvous, timeout: float) -> None:
    prefix = f"collective/{_generation}/addr/"
    rdv.set(f"{prefix}{info.rank}", mesh.address)
    deadline = time.monotonic() + timeout
    addresses = {}
    for r in range(info.world_size):
        if r != info.rank:
            addresses[r] = rdv.get(f"{prefix}{r}", max(0.1, deadline - time.monotonic()))
    mesh.connect(addresses)  # the barrier that follows proves every link
