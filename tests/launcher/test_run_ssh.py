"""flowlaunch run: ssh command construction, hostfiles, and the real path with a fake ssh.

There is no sshd in the test environment, so the end-to-end test puts a fake ``ssh`` on
PATH (tests/launcher/fake_ssh.py) that runs the remote command locally; everything else
(argv, quoting, env forwarding, one worker per host, rank 0 on the first host) is real.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

import numpy as np
import pytest

from actorflow.errors import LaunchError
from actorflow.launcher.cli import build_parser
from actorflow.launcher.cmd_run import ssh_command
from actorflow.launcher.hosts import expand, parse_hostfile, parse_hosts
from tests.launcher.helpers import SAMPLE, install_fake_ssh

sys.path.insert(0, str(SAMPLE.parent))
import sample_pipeline


def test_ssh_command_has_port_identity_options_and_forwarded_env():
    args = build_parser().parse_args(
        ["run", "job.py", "--hosts", "a,b", "-p", "2222", "-i", "/k/id", "-o", "Foo=bar",
         "--env", "OMP_NUM_THREADS", "--python", "/opt/py/bin/python3", "--remote-dir",
         "/data/my job"])
    env = {"OMP_NUM_THREADS": "4", "ACTORFLOW_RUN_ID": "r1", "SECRET": "no"}
    argv = ssh_command(args, "b", 1, ["worker", "--rank", "1"], env)
    assert argv[:9] == ["ssh", "-o", "BatchMode=yes", "-p", "2222", "-i", "/k/id", "-o",
                        "Foo=bar"]
    assert argv[9] == "b"
    remote = argv[10]
    assert remote.startswith("cd '/data/my job' && exec env ")
    words = shlex.split(remote.split(" && ", 1)[1])
    # the reaper runs the worker and cleans host b after it (test_remote_clean.py)
    assert words == ["exec", "env", "ACTORFLOW_RUN_ID=r1", "OMP_NUM_THREADS=4",
                     "/opt/py/bin/python3", "-m", "actorflow.launcher.reaper", "--run-id", "r1",
                     "--machine", "1", "--grace", "2.0", "--",
                     "/opt/py/bin/python3", "-m", "actorflow.launcher.cli", "worker",
                     "--rank", "1"]
    assert "SECRET" not in remote  # only named (and ACTORFLOW_*) variables travel


def test_forwarding_an_unset_variable_is_an_error():
    args = build_parser().parse_args(["run", "j.py", "--hosts", "a", "--env", "NOPE"])
    with pytest.raises(LaunchError, match="--env NOPE: not set"):
        ssh_command(args, "a", 0, ["worker"], {})


def test_hostfile_forms(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("# cluster\nnode1 slots=2\n\nnode2   # one slot\nnode3 slots=1 max_slots=4\n")
    slots = parse_hostfile(f)
    assert [(s.host, s.slots) for s in slots] == [("node1", 2), ("node2", 1), ("node3", 1)]
    assert expand(slots) == ["node1", "node1", "node2", "node3"]
    assert expand(parse_hosts("a:2, b")) == ["a", "a", "b"]


@pytest.mark.parametrize("text,needle", [
    ("node1 slots=two\n", "line 1: slots 'two' is not an integer"),
    ("node1 gpus=2\n", "line 1: expected 'host slots=N'"),
    ("node1\nnode1 slots=2\n", "host 'node1' is listed twice"),
    ("# nothing\n", "lists no hosts"),
    ("node1 slots=0\n", "slots must be at least 1"),
])
def test_bad_hostfile_names_line(tmp_path, text, needle):
    f = tmp_path / "hosts"
    f.write_text(text)
    with pytest.raises(LaunchError, match="hostfile .*" if "twice" in needle else None) as e:
        parse_hostfile(f)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_run_over_fake_ssh_end_to_end(flowlaunch, tmp_path):
    bin_dir = tmp_path / "bin"
    install_fake_ssh(bin_dir)
    log = tmp_path / "ssh.log"
    hostfile = tmp_path / "hosts"
    hostfile.write_text("127.0.0.1 slots=1\nlocalhost slots=1\n")
    out = tmp_path / "out.npz"
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SSH_LOG": str(log),
           "OMP_NUM_THREADS": "1"}
    r = flowlaunch.run("run", SAMPLE, "--hostfile", hostfile, "--master-port", 0,
                       "-p", "2222", "-i", str(tmp_path / "id_test"), "--env",
                       "OMP_NUM_THREADS", "--out", out, env=env, timeout=60)
    assert r.returncode == 0, r.stderr + r.stdout
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    assert sorted(c[-2] for c in calls) == ["127.0.0.1", "localhost"]  # one per host
    ranks = {c[-1].split("--rank ")[1].split()[0]: c for c in calls}
    assert set(ranks) == {"0", "1"}
    assert ranks["0"][-2] == "127.0.0.1"  # rank 0 (the master) on the first host
    assert all("-p" in c and "2222" in c for c in calls)
    assert all("OMP_NUM_THREADS=1" in c[-1] for c in calls)
    with np.load(out) as f:
        got = f["colsum"]
    for i, piece in enumerate(got):
        np.testing.assert_allclose(piece, sample_pipeline.expected(i), rtol=1e-5, atol=1e-6)
    assert "16 pieces on 2 machines" in r.stdout
