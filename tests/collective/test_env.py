"""``af.env``: rank variables of every launcher, one rank without any, LOCAL_RANK's device."""

from __future__ import annotations

import pytest

import actorflow as af
from actorflow.errors import LaunchError
from actorflow.spmd import world_info


def test_no_launcher_is_rank_0_of_1_and_its_group_needs_no_rendezvous():
    assert world_info({}) == af.collective.WorldInfo(0, 1)
    info = world_info({"RANK": "0", "WORLD_SIZE": "1"})  # torchrun with one process
    assert (info.rank, info.world_size) == (0, 1)


@pytest.mark.parametrize("env,rank", [
    ({"RANK": "2", "WORLD_SIZE": "4", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}, 2),
    ({"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "MASTER_ADDR": "n1", "MASTER_PORT": "1234"}, 3),
    ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "MASTER_ADDR": "h",
      "MASTER_PORT": "9"}, 1),
])
def test_every_launchers_variables(env, rank):
    info = world_info(env)
    assert info.rank == rank and info.world_size in (2, 4)
    assert info.master_host == env["MASTER_ADDR"]
    assert info.master_port == int(env["MASTER_PORT"])


def test_a_missing_master_is_one_clear_line():
    with pytest.raises(LaunchError, match="MASTER_ADDR"):
        world_info({"RANK": "1", "WORLD_SIZE": "2"})


def test_local_rank_picks_the_cuda_device(monkeypatch):
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert (af.env.rank, af.env.world_size, af.env.local_rank) == (5, 8, 1)
    assert af.env.device("cuda") == "cuda:0" and af.env.device("cpu") == "cpu"
    from actorflow.streams.device import physical_index

    assert physical_index(0) == 1  # this rank's cuda:0 is the machine's device LOCAL_RANK
    monkeypatch.setenv("LOCAL_RANK", "x")
    with pytest.raises(LaunchError, match="LOCAL_RANK='x' is not an integer"):
        _ = af.env.local_rank
