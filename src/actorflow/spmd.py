"""``af.env``: this process's place in an SPMD run, and the wiring of its process group.

Under ``flowlaunch --nproc-per-node K`` (or torchrun, Slurm's srun, Open MPI's mpirun) every
copy of a script reads its rank from the environment.  ``af.env.process_group`` is the world
group, set up on first use through the launcher's rendezvous at ``MASTER_ADDR:MASTER_PORT``.
This module sits above the packages: it hands ``collective`` a rendezvous factory from
``launcher`` so that neither imports the other.  Outside a launcher a script is rank 0 of 1.

Before the first socket of the group opens, the process takes the run's CURVE key from
``$ACTORFLOW_CLUSTER_KEY`` (``launcher.keys.env_key``): the rendezvous at rank 0, every
rank's mesh inbox and its comms to the peers all use it (``docs/security.md``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from actorflow import collective
from actorflow.collective import ProcessGroup, WorldInfo
from actorflow.collective.world import Rendezvous
from actorflow.errors import LaunchError

_LOCAL_RANK = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK")
_LOCAL_SIZE = ("LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE")


def world_info(environ: Mapping[str, str] | None = None) -> WorldInfo:
    """Rank, world size and master from the launcher's variables (rank 0 of 1 without)."""
    from actorflow.launcher.rankenv import RANK_SOURCES, resolve_rank_env

    environ = os.environ if environ is None else environ
    source = next(((r, w) for r, w in RANK_SOURCES if r in environ and w in environ), None)
    if source is None:
        return WorldInfo(0, 1)
    alone = environ[source[1]].strip() == "1"  # one rank meets nobody: no master needed
    r = resolve_rank_env(None, None, "127.0.0.1:1" if alone else None, environ)
    return WorldInfo(r.rank, r.world_size, r.master_host, r.master_port)


def _int_var(names: tuple[str, ...], default: int) -> int:
    for name in names:
        if name in os.environ:
            try:
                return int(os.environ[name])
            except ValueError:
                raise LaunchError(f"{name}={os.environ[name]!r} is not an integer") from None
    return default


def _rendezvous(info: WorldInfo, timeout: float) -> Rendezvous:
    """Take the run's key, then meet: the rendezvous and the mesh are built after this, so
    every socket they open is authenticated by the transport's default ``Security``."""
    from actorflow.launcher.keys import env_key
    from actorflow.launcher.rendezvous import ControlRendezvous

    env_key(who=f"rank {info.rank} of {info.world_size}")
    return ControlRendezvous(info.rank, info.world_size, info.master_host, info.master_port,
                             timeout)


class Env:
    """Read-only view of the SPMD environment (``af.env``)."""

    @property
    def rank(self) -> int:
        return world_info().rank

    @property
    def world_size(self) -> int:
        return world_info().world_size

    @property
    def local_rank(self) -> int:
        """This process's index on its node (``LOCAL_RANK``); it picks the CUDA device."""
        return _int_var(_LOCAL_RANK, self.rank)

    @property
    def local_world_size(self) -> int:
        return _int_var(_LOCAL_SIZE, self.world_size)

    @property
    def process_group(self) -> ProcessGroup:
        """The world group (every rank), set up on first use."""
        return collective.world()

    # OneFlow's names (``flow.env.get_rank()`` ...)
    def get_rank(self) -> int:
        return self.rank

    def get_world_size(self) -> int:
        return self.world_size

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_node_size(self) -> int:
        """The number of nodes: the world size over the ranks per node."""
        return max(1, self.world_size // max(1, self.local_world_size))

    def device(self, device_type: str = "cpu") -> str:
        """The device this rank uses for ``device_type``: ``cuda:0`` or ``cpu``.

        Device indices are the process's own (like ``CUDA_VISIBLE_DEVICES``): the stream
        layer maps this process's ``cuda:i`` to the machine's device ``LOCAL_RANK *
        devices_per_machine + i`` (``streams.device.physical_index``), so with one device
        per rank ``LOCAL_RANK`` picks the GPU and every rank calls it ``cuda:0``.
        """
        return "cuda:0" if device_type == "cuda" else "cpu"

    def __repr__(self) -> str:
        return (f"af.env(rank={self.rank}, world_size={self.world_size}, "
                f"local_rank={self.local_rank})")


env = Env()
collective.set_rendezvous_factory(_rendezvous, world_info)
