"""Checkpoints: model-IO jobs save each device's part + a manifest; loading re-shards."""

from __future__ import annotations

import json

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import UsageError

SHAPE = (12, 5)


def _plan(machines: int, path=None):
    P = af.placement("cpu", ranks=list(range(machines)))
    kw = {"path": path} if path is not None else {"init": "normal", "seed": 4}
    with af.Job("train") as tr:
        x = af.input("x", SHAPE, placement=P, sbp=af.sbp.split(0))
        w = af.variable("w", SHAPE, placement=P, sbp=af.sbp.split(0), **kw)
        b = af.variable("b", SHAPE[1:], placement=P, sbp=af.sbp.broadcast,
                        **({"path": path} if path is not None else {}))
        w.add_(x)
        b.add_(x.sum(dim=0))
    with af.Job("read") as rd:
        af.output("w", af.variable("w", SHAPE, placement=P, sbp=af.sbp.split(0), **kw))
        af.output("b", af.variable("b", SHAPE[1:], placement=P, sbp=af.sbp.broadcast,
                                   **({"path": path} if path is not None else {})))
    return af.compile([tr, rd], machines=machines)


def test_round_trips_across_machine_counts_4_2_1_3_give_identical_variables(tmp_path):
    rng = np.random.default_rng(0)
    with af.Session(_plan(4), timeout=30) as s:
        for _ in range(3):
            s.run("train", {"x": rng.standard_normal(SHAPE).astype(np.float32)})
        want = s.run("read")
        s.save(tmp_path / "m4")
    manifest = json.loads((tmp_path / "m4" / "manifest.json").read_text())
    assert manifest["format"] == "actorflow-checkpoint" and manifest["version"] == 1
    parts = manifest["variables"]["w"]["parts"]
    assert len(parts) == 4  # one part per device of split(0), each written on its machine
    assert [p["machine"] for p in parts] == [0, 1, 2, 3]
    assert np.load(tmp_path / "m4" / parts[1]["file"], allow_pickle=False).shape == (3, 5)
    assert len(manifest["variables"]["b"]["parts"]) == 1  # broadcast: one region
    assert manifest["variables"]["w"]["shape"] == list(SHAPE)
    assert manifest["variables"]["w"]["sbp"] == "S0" and manifest["variables"]["b"]["sbp"] == "B"
    assert manifest["variables"]["w"]["dtype"] == "float32"
    src = tmp_path / "m4"
    for n in (2, 1, 3):
        with af.Session(_plan(n), timeout=30) as s:
            before = s.run("read")
            assert not np.array_equal(before["w"], want["w"])  # fresh init differs
            s.load(src)
            got = s.run("read")
            np.testing.assert_array_equal(got["w"], want["w"])
            np.testing.assert_array_equal(got["b"], want["b"])
            s.save(tmp_path / f"m{n}")
        src = tmp_path / f"m{n}"
    parts = json.loads((src / "manifest.json").read_text())["variables"]["w"]["parts"]
    assert [(p["begin"][0], p["end"][0]) for p in parts] == [(0, 4), (4, 8), (8, 12)]


def test_variable_path_accepts_a_checkpoint_saved_on_another_machine_count(tmp_path):
    rng = np.random.default_rng(1)
    with af.Session(_plan(2), timeout=30) as s:
        s.run("train", {"x": rng.standard_normal(SHAPE).astype(np.float32)})
        want = s.run("read")
        s.save(tmp_path / "ck")
    with af.Session(_plan(3, path=tmp_path / "ck"), timeout=30) as s:
        got = s.run("read")
    np.testing.assert_array_equal(got["w"], want["w"])
    np.testing.assert_array_equal(got["b"], want["b"])


def test_bad_checkpoints_are_named(tmp_path):
    with af.Session(_plan(1), timeout=30) as s:
        with pytest.raises(UsageError, match="not a checkpoint"):
            s.load(tmp_path)
        s.save(tmp_path / "ck")
    m = json.loads((tmp_path / "ck" / "manifest.json").read_text())
    m["variables"]["w"]["shape"] = [3, 3]
    (tmp_path / "ck" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(UsageError, match=r"variable 'w' has shape \(3, 3\), the job declares "
                                         r"\(12, 5\)"):
        _plan(1, path=tmp_path / "ck")


def test_each_machine_process_writes_its_own_part(tmp_path):
    """Machines as nodes over tcp, every unit a process: the parts are written there."""
    rng = np.random.default_rng(2)
    with af.ClusterSession(_plan(2), unit="process", timeout=30) as s:
        s.run("train", {"x": rng.standard_normal(SHAPE).astype(np.float32)})
        want = s.run("read")
        s.save(tmp_path / "ck")
    with af.Session(_plan(3), timeout=30) as s:
        s.load(tmp_path / "ck")
        got = s.run("read")
    np.testing.assert_array_equal(got["w"], want["w"])
    np.testing.assert_array_equal(got["b"], want["b"])


def test_a_missing_part_fails_the_load_job_naming_it(tmp_path):
    from actorflow.errors import ActorflowError, JobRunError

    with af.Session(_plan(2), timeout=30) as s:
        s.save(tmp_path / "ck")
    (tmp_path / "ck" / "w" / "part1.npy").unlink()
    s = af.Session(_plan(1), timeout=30)
    try:
        with pytest.raises(JobRunError, match=r"piece 0 of job '__load__' did not finish: .*"
                                              r"part1\.npy"):
            s.load(tmp_path / "ck")
    finally:
        with pytest.raises(ActorflowError):
            s.close()


def test_a_long_checkpoint_path_round_trips_and_one_past_the_os_limit_is_named(tmp_path):
    deep = tmp_path
    while len(str(deep)) < 1500:  # longer than the first limit (1023 bytes), under PATH_MAX
        deep = deep / ("d" * 200)
    rng = np.random.default_rng(2)
    with af.Session(_plan(2), timeout=30) as s:
        s.run("train", {"x": rng.standard_normal(SHAPE).astype(np.float32)})
        want = s.run("read")
        s.save(deep)
        s.run("train", {"x": rng.standard_normal(SHAPE).astype(np.float32)})
        s.load(deep)
        np.testing.assert_array_equal(s.run("read")["w"], want["w"])
        too_long = tmp_path.joinpath(*["x" * 250] * 17)  # 4250+ bytes: no OS takes it
        with pytest.raises(UsageError, match=r"checkpoint path .* bytes long; at most 4095"):
            s.save(too_long)
        blocker = tmp_path / "a-file"
        blocker.write_text("not a directory")
        with pytest.raises(UsageError, match=r"a-file/ck: cannot create it: Not a directory"):
            s.save(blocker / "ck")
