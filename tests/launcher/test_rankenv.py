"""Where a worker's rank comes from: flags, torch-style env, Slurm, Open MPI (pure)."""

from __future__ import annotations

import pytest

from actorflow.errors import LaunchError
from actorflow.launcher.rankenv import resolve_rank_env

MASTER = {"MASTER_ADDR": "node1", "MASTER_PORT": "29500"}


@pytest.mark.parametrize("env,rank,world,source", [
    ({"RANK": "1", "WORLD_SIZE": "4"}, 1, 4, "RANK/WORLD_SIZE"),
    ({"SLURM_PROCID": "3", "SLURM_NTASKS": "4"}, 3, 4, "SLURM_PROCID/SLURM_NTASKS"),
    ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"}, 0, 2,
     "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE"),
    # torch-style variables win over the process manager's (flowlaunch SPMD under Slurm)
    ({"RANK": "2", "WORLD_SIZE": "3", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, 2, 3,
     "RANK/WORLD_SIZE"),
])
def test_rank_sources(env, rank, world, source):
    r = resolve_rank_env(None, None, None, {**env, **MASTER})
    assert (r.rank, r.world_size, r.source) == (rank, world, source)
    assert (r.master_host, r.master_port) == ("node1", 29500)


def test_flags_win_over_env():
    r = resolve_rank_env(0, 2, "10.0.0.1:1234", {"RANK": "1", "WORLD_SIZE": "2", **MASTER})
    assert (r.rank, r.world_size, r.master_host, r.master_port) == (0, 2, "10.0.0.1", 1234)


@pytest.mark.parametrize("args,env,needle", [
    ((None, None, None), {}, "no rank given"),
    ((None, None, None), {"RANK": "0", "WORLD_SIZE": "0", **MASTER}, "must be at least 1"),
    ((None, None, None), {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2", **MASTER},
     "rank 2 out of range for world size 2 (from OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE"),
    ((0, 1, None), {"MASTER_ADDR": "h", "MASTER_PORT": "http"}, "MASTER_PORT='http' is not"),
    ((0, 1, None), {"MASTER_ADDR": "h", "MASTER_PORT": "70000"}, "port 70000 out of range"),
    ((0, 1, "h:0"), {}, "master port 0 is only for"),
])
def test_bad_rank_env_is_one_line(args, env, needle):
    with pytest.raises(LaunchError) as e:
        resolve_rank_env(*args, env)
    assert needle in str(e.value) and "\n" not in str(e.value)
