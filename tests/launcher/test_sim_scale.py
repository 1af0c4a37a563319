"""``flowlaunch sim --machines 16`` on this host: 16 worker processes start, rendezvous, get
their shares of the plan, run the job and exit; the numbers are checked against numpy by
the job file's own ``check`` hook.  The 4-stage jobs use 4 of the 16 machines; the other
12 join, receive an empty share (no tasks, no routes, no peers) and leave cleanly.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from .helpers import REPO

EXAMPLES = REPO / "examples"


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("example, output, pieces", [
    ("sample_pipeline", "colsum", 16), ("pipeline_4_stages", "y", 8)])
def test_sim_on_16_machines(flowlaunch, tmp_path, example, output, pieces):
    out = tmp_path / "out.npz"
    r = flowlaunch.run("sim", EXAMPLES / f"{example}.py", "--machines", 16, "--json",
                       "--out", out, timeout=150)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    assert doc["ok"] is True and doc["machines_count"] == 16
    assert doc["check"].endswith("OK"), doc["check"]  # the job's numpy comparison
    assert [m["rank"] for m in doc["machines"]] == list(range(16))
    assert all(m["exit_code"] == 0 and m["status"] == "bye" for m in doc["machines"])
    with np.load(out) as f:
        assert f[output].shape[0] == pieces
