"""The rendezvous SPMD scripts meet through: the control plane's key-value store.

Rank 0 hosts a ``ControlMaster`` with no plan at ``MASTER_ADDR:MASTER_PORT``; every rank
(rank 0 too) joins it as a ``ControlClient``.  Joining waits until all ranks are there, so
the store is complete before anyone reads it.  The process group publishes its addresses
here, then closes the rendezvous: the master's port is free again once ranks have met.
"""

from __future__ import annotations

import os
import socket

from actorflow.errors import LaunchError
from actorflow.launcher.client import ControlClient
from actorflow.launcher.master import ControlMaster


class ControlRendezvous:
    """``set``/``get``/``close`` over the control plane (what ``collective.world`` needs)."""

    def __init__(self, rank: int, world_size: int, master_host: str, master_port: int,
                 timeout: float) -> None:
        if master_port == 0:
            raise LaunchError("MASTER_PORT is 0: SPMD ranks need rank 0's real port "
                              "(flowlaunch --nproc-per-node picks and exports one)")
        self.master: ControlMaster | None = None
        if rank == 0:
            self.master = ControlMaster(world_size, None, master_host, master_port,
                                        heartbeat_timeout=float("inf"), join_timeout=timeout)
            self.master.start()
        self.client = ControlClient(master_host, master_port, rank, world_size,
                                    connect_timeout=timeout)
        try:
            self.client.sync_clock(rounds=1)
            # a little longer than the master's join timeout, so its verdict (which ranks
            # never joined) arrives before this rank's own, vaguer, timeout
            self.client.hello(socket.gethostname(), os.getpid(), timeout + 3.0)
        except BaseException:
            self.close()
            raise

    def set(self, key: str, value: str) -> None:
        self.client.kv_set(key, value)

    def get(self, key: str, timeout: float) -> str:
        return str(self.client.kv_get(key, timeout))

    def close(self) -> None:
        self.client.close()
        if self.master is not None:
            self.master.close()
            self.master = None
