"""Multi-host runs over real separate network stacks (ip netns + veth + a bridge).

Each "host" is a network namespace with its own address; ``flowlaunch run`` reaches it
through the fake ssh (tests/launcher/fake_ssh.py runs the command inside the namespace of
the host's address).  Skipped with the reason when namespaces cannot be made (not root,
no iproute2); CI runs as root with iproute2 installed by .ci/run.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pytest

from tests.launcher import netns
from tests.launcher.helpers import JOBS, SAMPLE, install_fake_ssh

sys.path.insert(0, str(SAMPLE.parent))
import sample_pipeline

pytestmark = pytest.mark.netns
_WHY = netns.unavailable()


@pytest.fixture
def hosts():
    if _WHY:
        pytest.skip(_WHY)
    h = netns.Hosts(3)
    yield h
    h.close()


def _env(tmp_path, hosts) -> dict:
    bin_dir = tmp_path / "bin"
    install_fake_ssh(bin_dir)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "FAKE_SSH_NETNS": hosts.ssh_map}


def test_three_hosts_run_a_plan_over_tcp(flowlaunch, tmp_path, hosts):
    out = tmp_path / "out.npz"
    r = flowlaunch.run("run", SAMPLE, "--hosts", ",".join(hosts.addrs), "--master-port",
                       29555, "--out", out, "--json", env=_env(tmp_path, hosts), timeout=90)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # every machine joined from its own address: the data plane really crossed "hosts"
    assert [m["host"] for m in doc["machines"]] == hosts.addrs
    assert all(m["exit_code"] == 0 for m in doc["machines"])
    with np.load(out) as f:
        got = f["colsum"]
    for i, piece in enumerate(got):
        np.testing.assert_allclose(piece, sample_pipeline.expected(i), rtol=1e-5, atol=1e-6)
    joined = [x for x in r.stderr.splitlines() if "joined from" in x]
    assert sorted(x.split("joined from ")[1].split()[0] for x in joined) == hosts.addrs


@pytest.mark.slow
def test_cutting_a_hosts_link_is_detected_and_reported(flowlaunch, tmp_path, hosts):
    _tag, p = flowlaunch.start("run", JOBS / "slow_pipeline.py", "--hosts",
                               ",".join(hosts.addrs), "--master-port", 29556,
                               env=_env(tmp_path, hosts))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until pieces flow
        line = p.stderr.readline()
        if "progress:" in line:
            break
    else:
        pytest.fail("the run never made progress")
    hosts.cut(2)
    _out, err = p.communicate(timeout=120)  # detected by the heartbeat, not left to hang
    assert p.returncode == 1
    assert f"machine 2 (host {hosts.addrs[2]}" in err and "lost: no heartbeat" in err, err
    rows = [x for x in err.splitlines() if x.startswith("*")]
    assert len(rows) == 1 and rows[0].split()[1] == "2", err
