"""Where a worker learns its rank, the world size and the master's address.

Sources, first match wins: command-line flags; ``RANK``/``WORLD_SIZE`` (torch, flowlaunch
SPMD); Slurm's ``SLURM_PROCID``/``SLURM_NTASKS``; Open MPI's ``OMPI_COMM_WORLD_RANK``/
``OMPI_COMM_WORLD_SIZE``.  The master comes from ``--master HOST:PORT`` or
``MASTER_ADDR``/``MASTER_PORT``.  Every mistake is one line naming the variable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from actorflow.errors import LaunchError

RANK_SOURCES = (
    ("RANK", "WORLD_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
)


@dataclass(frozen=True)
class RankEnv:
    rank: int
    world_size: int
    master_host: str
    master_port: int
    source: str  # where rank/world came from, for messages


def _int(value: str, name: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise LaunchError(f"{name}={value!r} is not an integer") from None


def split_host_port(spec: str, what: str = "--master") -> tuple[str, int]:
    host, sep, port = spec.rpartition(":")
    if not sep or not host or not port:
        raise LaunchError(f"{what} {spec!r}: expected HOST:PORT, e.g. 10.0.0.1:29500")
    return host, check_port(_int(port, f"{what} port"), what)


def check_port(port: int, what: str) -> int:
    if not 0 <= port <= 65535:
        raise LaunchError(f"{what} port {port} out of range (0..65535)")
    return port


def resolve_rank_env(rank: int | None, world_size: int | None, master: str | None,
                     environ: Mapping[str, str]) -> RankEnv:
    """Rank, world size and master from flags, else the first environment that has them."""
    source = "--rank/--world-size"
    if rank is None or world_size is None:
        for rname, wname in RANK_SOURCES:
            if rname in environ and wname in environ:
                rank = _int(environ[rname], rname) if rank is None else rank
                world_size = _int(environ[wname], wname) if world_size is None else world_size
                source = f"{rname}/{wname}"
                break
        else:
            raise LaunchError(
                "no rank given: pass --rank and --world-size, or set RANK/WORLD_SIZE "
                "(or run under Slurm srun or Open MPI mpirun)")
    if world_size < 1:
        raise LaunchError(f"world size {world_size} (from {source}) must be at least 1")
    if not 0 <= rank < world_size:
        raise LaunchError(f"rank {rank} out of range for world size {world_size} "
                          f"(from {source}; ranks are 0..{world_size - 1})")
    if master:
        host, port = split_host_port(master)
    elif "MASTER_ADDR" in environ and "MASTER_PORT" in environ:
        host = environ["MASTER_ADDR"].strip()
        port = check_port(_int(environ["MASTER_PORT"], "MASTER_PORT"), "MASTER_PORT")
        if not host:
            raise LaunchError("MASTER_ADDR is empty")
    else:
        raise LaunchError("no master address: pass --master HOST:PORT or set MASTER_ADDR and "
                          "MASTER_PORT (the address and port of rank 0)")
    if port == 0:
        raise LaunchError("master port 0 is only for flowlaunch sim/spmd (which pick a free "
                          "port); workers need the real port")
    return RankEnv(rank, world_size, host, port, source)
