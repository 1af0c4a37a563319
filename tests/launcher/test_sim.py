"""flowlaunch sim end to end: real worker processes over loopback tcp, numbers vs numpy."""

from __future__ import annotations

import json
import socket
import sys

import numpy as np
import pytest

from tests.launcher.helpers import JOBS, SAMPLE

sys.path.insert(0, str(SAMPLE.parent))
import sample_pipeline


@pytest.mark.parametrize("machines", [1, 2, 3])
def test_sim_sample_pipeline_matches_numpy(flowlaunch, tmp_path, machines):
    out = tmp_path / "out.npz"
    r = flowlaunch.run("sim", SAMPLE, "--machines", machines, "--out", out)
    assert r.returncode == 0, r.stderr
    with np.load(out) as f:
        got = f["colsum"]
    assert got.shape == (sample_pipeline.PIECES, 32)
    for i, piece in enumerate(got):
        np.testing.assert_allclose(piece, sample_pipeline.expected(i), rtol=1e-5, atol=1e-6)
    # the human-readable result line, with the job's own numpy check
    assert f"16 pieces on {machines} machine" in r.stdout
    assert "check: max |actorflow - numpy|" in r.stdout and "OK" in r.stdout


def test_sim_pieces_override_and_json_summary(flowlaunch, tmp_path):
    out = tmp_path / "o.npz"
    r = flowlaunch.run("sim", SAMPLE, "--machines", 2, "--pieces", 5, "--json", "--out", out)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # exactly one JSON object on stdout
    assert doc["ok"] is True and doc["pieces"] == 5
    assert doc["wall_seconds"] > 0 and doc["pieces_per_second"] > 0
    assert [m["rank"] for m in doc["machines"]] == [0, 1]
    assert all(m["exit_code"] == 0 and m["status"] == "bye" for m in doc["machines"])
    assert [m["pieces"] for m in doc["machines"]] == [5, 5]  # per-machine progress
    assert set(doc["clock_offsets"]) == {"0", "1"}
    assert all(abs(v) < 0.5 for v in doc["clock_offsets"].values())  # same host: ~0
    with np.load(out) as f:
        assert f["colsum"].shape == (5, 32)
        np.testing.assert_allclose(f["colsum"][4], sample_pipeline.expected(4), rtol=1e-5)


@pytest.mark.parametrize("core", ["python", "native"])
def test_sim_says_which_core_ran(flowlaunch, core):
    """The --json summary and the last line name the actor core every worker ran."""
    from actorflow._core import native_error

    if core == "native" and native_error() is not None:
        pytest.skip(f"compiled core not built: {native_error()}")
    r = flowlaunch.run("sim", SAMPLE, "--machines", 2, "--pieces", 3, "--json",
                       env={"ACTORFLOW_CORE": core})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["core"] == core
    assert [m["core"] for m in doc["machines"]] == [core, core]
    r = flowlaunch.run("sim", SAMPLE, "--machines", 1, "--pieces", 2,
                       env={"ACTORFLOW_CORE": core})
    assert r.returncode == 0, r.stderr
    assert f"pieces/s, {core} core)" in r.stdout


def test_sim_log_dir_and_rank_prefixes(flowlaunch, tmp_path):
    logs = tmp_path / "logs"
    r = flowlaunch.run("sim", SAMPLE, "--machines", 2, "--log-dir", logs)
    assert r.returncode == 0, r.stderr
    assert (logs / "rank0.log").read_text().count("joined") == 2  # the master's log lines
    assert (logs / "rank1.log").exists()
    assert "[rank 0] flowlaunch worker: master: rank 1 joined" in r.stdout


def test_sim_plan_for_more_machines_than_given(flowlaunch):
    r = flowlaunch.run("sim", JOBS / "three_machines.py", "--machines", 2, timeout=30)
    assert r.returncode != 0
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, r.stderr
    assert "plan is for 3 machines but only 2 were given" in lines[0]


def test_sim_master_port_in_use(flowlaunch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = flowlaunch.run("sim", SAMPLE, "--machines", 2, "--master-port", port, timeout=30)
    assert r.returncode != 0
    assert r.stderr.strip() == (f"flowlaunch: error: master port {port} on 127.0.0.1 is "
                                "already in use; choose another --master-port, or "
                                "--master-port 0 to pick a free one")


@pytest.mark.parametrize("sub", ["sim", "run", "worker"])
def test_help_has_examples(flowlaunch, sub):
    r = flowlaunch.run(sub, "--help", timeout=30)
    assert r.returncode == 0
    assert "examples:" in r.stdout and f"flowlaunch {sub}" in r.stdout


def test_spmd_help(flowlaunch):
    r = flowlaunch.run("--nproc-per-node", "1", "--help", timeout=30)
    assert r.returncode == 0 and "examples:" in r.stdout and "--nnodes" in r.stdout


def test_sim_plan_with_client_inputs_is_one_line(flowlaunch):
    r = flowlaunch.run("sim", JOBS / "input_plan.py", "--machines", 1, timeout=30)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "input tasks ['x'] fed by a client" in lines[0], r.stderr


def test_sim_missing_plan_file_is_one_line(flowlaunch, tmp_path):
    r = flowlaunch.run("sim", tmp_path / "nope.plan", "--machines", 2, timeout=30)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "nope.plan: no such file" in lines[0], r.stderr


def test_out_keeps_outputs_named_like_savez_options(flowlaunch, tmp_path):
    """An output called 'allow_pickle' (or 'file') is saved as an array, not taken as an
    option of the writer."""
    out = tmp_path / "o.npz"
    r = flowlaunch.run("sim", JOBS / "option_named_outputs.py", "--machines", 1, "--out", out)
    assert r.returncode == 0, r.stderr
    with np.load(out, allow_pickle=False) as f:
        assert sorted(f.files) == ["allow_pickle", "file"]
        pieces = np.stack([np.arange(3, dtype="float32") + 10 * p for p in range(3)])
        np.testing.assert_array_equal(f["allow_pickle"], 2 * pieces)
        np.testing.assert_array_equal(f["file"], pieces)
