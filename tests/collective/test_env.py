"""``af.env``: rank variables of every launcher, one rank without any, LOCAL_RANK's device."""

from __future__ import annotations

import pytest

import actorflow as af
from actorflow.errors import LaunchError, UsageError
from actorflow.launcher.keys import env_key
from actorflow.spmd import world_info
from actorflow.transport import auth, security
from actorflow.transport.auth import ClusterKey, current_key, key_decided
from actorflow.transport.security import default_security


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


# -- the run's key, taken from the environment before the group opens a socket ------------
@pytest.fixture
def undecided(monkeypatch):
    """This test process as a fresh rank: no key decided yet (restored afterwards) and no
    world group (earlier tests in this process may have set up a world of one)."""
    af.collective.destroy()
    monkeypatch.setattr(auth, "_decided", False)
    monkeypatch.setattr(auth, "_key", None)
    monkeypatch.setattr(security, "_default", security.NO_SECURITY)


def test_a_rank_takes_the_key_file_its_launcher_names(undecided, tmp_path):
    key = ClusterKey.generate()
    got = env_key({"ACTORFLOW_CLUSTER_KEY": str(key.write(tmp_path / "k"))})
    assert got == key == current_key() and default_security().authenticated
    # decided once: a later call keeps it, whatever the environment says
    assert env_key({"ACTORFLOW_CLUSTER_KEY": "/nonexistent"}) == key


def test_insecure_ranks_open_unauthenticated_sockets(undecided):
    assert env_key({"ACTORFLOW_INSECURE": "1"}) is None
    assert key_decided() and not default_security().authenticated


def test_a_rank_with_no_key_and_no_insecure_is_refused(undecided):
    with pytest.raises(LaunchError, match=r"rank 3 of 4 has no cluster key, so its sockets "
                                          r"would accept anyone: set ACTORFLOW_CLUSTER_KEY"):
        env_key({}, who="rank 3 of 4")
    assert not key_decided()


def test_init_process_group_refuses_to_open_sockets_with_no_key_decided(undecided):
    info = af.collective.WorldInfo(0, 2, "127.0.0.1", 1)
    with pytest.raises(UsageError, match=r"no cluster key, so the group's sockets would "
                                         r"accept anyone: call actorflow\.transport\.auth"):
        af.collective.init_process_group(info, None)
    assert not af.collective.is_initialized()
