"""Uneven splits give the extra elements to the FIRST pieces, as OneFlow does, in every place
that cuts a tensor (issue 21, item 2): the geometry itself, the compiler's parts, run-time
reduce-scatter, checkpoints; and checkpoints written under the old rule still load."""

from __future__ import annotations

import json

import numpy as np
import pytest

import actorflow as af
from actorflow.collective.ring import even_segments
from actorflow.errors import UsageError
from actorflow.kernels.checkpoint import read_variable as read_checkpoint
from actorflow.sbp_geometry import GEOMETRY, floor_bounds, piece_box, split_bounds


def test_oneflow_split_sizes():
    # OneFlow 0.9.0: 25 rows on 2 ranks -> 13 + 12; 13 on 4 -> 4, 3, 3, 3
    assert split_bounds(25, 2) == (0, 13, 25)
    assert split_bounds(13, 4) == (0, 4, 7, 10, 13)
    assert split_bounds(5, 3) == (0, 2, 4, 5) and split_bounds(2, 4) == (0, 1, 2, 2, 2)
    assert floor_bounds(13, 4) == (0, 3, 6, 9, 13)  # the rule of old checkpoints
    assert piece_box((13, 2), "S0", 4, 0) == ((0, 4), (0, 2))
    assert piece_box((2, 13), "S1", 4, 3) == ((0, 2), (10, 13))
    assert even_segments(13, 4) == [(0, 4), (4, 7), (7, 10), (10, 13)]


def _plan(machines: int, shape: tuple[int, ...], path=None):
    P = af.placement("cpu", ranks=list(range(machines)))
    kw = {"path": path} if path is not None else {"init": "normal", "seed": 3}
    with af.Job("read") as rd:
        af.output("w", af.variable("w", shape, placement=P, sbp=af.sbp.split(0), **kw))
    return af.compile([rd], machines=machines)


def test_compiled_parts_and_checkpoints_follow_the_rule(tmp_path):
    with af.Session(_plan(4, (13, 2)), timeout=30) as s:
        want = s.run("read")
        s.save(tmp_path / "ck")
    m = json.loads((tmp_path / "ck" / "manifest.json").read_text())
    assert m["split_geometry"] == GEOMETRY == "first"
    parts = m["variables"]["w"]["parts"]
    assert [(p["begin"][0], p["end"][0]) for p in parts] == [(0, 4), (4, 7), (7, 10), (10, 13)]
    assert np.load(tmp_path / "ck" / parts[0]["file"], allow_pickle=False).shape == (4, 2)
    np.testing.assert_array_equal(read_checkpoint(tmp_path / "ck", "w"), want)


def _old_checkpoint(root, value: np.ndarray, pieces: int, geometry_field=None):
    """A checkpoint as actorflow wrote it before OneFlow's rule: floor parts, and no
    ``split_geometry`` in the manifest (or the one given)."""
    b = floor_bounds(value.shape[0], pieces)
    (root / "w").mkdir(parents=True)
    parts = []
    for i in range(pieces):
        f = f"w/part{i}.npy"
        np.save(root / f, value[b[i]:b[i + 1]], allow_pickle=False)
        parts.append({"file": f, "begin": [b[i], 0], "end": [b[i + 1], value.shape[1]],
                      "machine": i})
    m = {"format": "actorflow-checkpoint", "version": 1, "variables": {"w": {
        "shape": list(value.shape), "dtype": "float32", "sbp": "S0",
        "placement": "cpu ranks [0, 1, 2, 3]", "parts": parts}}}
    if geometry_field is not None:
        m["split_geometry"] = geometry_field
    (root / "manifest.json").write_text(json.dumps(m))


def test_an_old_checkpoint_loads_into_a_job_laid_out_by_the_new_rule(tmp_path):
    value = np.arange(26, dtype=np.float32).reshape(13, 2)
    _old_checkpoint(tmp_path / "old", value, 4)  # parts of 3, 3, 3, 4 rows
    np.testing.assert_array_equal(read_checkpoint(tmp_path / "old", "w"), value)
    with af.Session(_plan(4, (13, 2), path=tmp_path / "old"), timeout=30) as s:
        np.testing.assert_array_equal(s.run("read"), value)  # read as 4, 3, 3, 3


def test_a_manifest_whose_parts_do_not_follow_its_rule_is_refused(tmp_path):
    value = np.arange(26, dtype=np.float32).reshape(13, 2)
    _old_checkpoint(tmp_path / "lying", value, 4, geometry_field="first")
    with pytest.raises(UsageError, match=r"the parts of 'w' cover \[\(0, 3\), .* the 'first' "
                                         r"split of 13 over 4 parts .* gives \[\(0, 4\)"):
        read_checkpoint(tmp_path / "lying", "w")
    _old_checkpoint(tmp_path / "odd", value, 2, geometry_field="middle")
    with pytest.raises(UsageError, match="unknown split_geometry 'middle'; known: first, floor"):
        read_checkpoint(tmp_path / "odd", "w")
