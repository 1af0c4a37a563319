"""``flowlaunch sim --machines 16`` on this host: 16 worker processes start, rendezvous, get
their shares of the plan, run the job and exit; the numbers are checked against numpy by
the job file's own ``check`` hook.  The 4-stage jobs use 4 of the 16 machines; the other
12 join, receive an empty share (no tasks, no routes, no peers) and leave cleanly.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.launcher.helpers import REPO

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


def test_master_sends_each_machine_its_share_and_only_the_peers_it_talks_to():
    """Rank 0's plan distribution for the 4-stage sample on 6 machines: stage k runs on
    machine k, so machine 2 talks to 1 and 3 only, and machines 4-5 get nothing."""
    import sys
    import threading

    from actorflow.launcher.client import ControlClient
    from actorflow.launcher.master import ControlMaster
    from actorflow.launcher.ports import free_port
    from actorflow.plan.io import plan_from_bytes

    sys.path.insert(0, str(EXAMPLES))
    import sample_pipeline

    n = 6
    full = sample_pipeline.build_plan(4)
    master = ControlMaster(n, full, "127.0.0.1", free_port(), run_id="shares",
                           join_timeout=20)
    master.start()
    got: dict[int, tuple] = {}
    errors: list = []

    def worker(rank: int) -> None:
        c = ControlClient("127.0.0.1", master.port, rank, n, connect_timeout=5,
                          master_timeout=10)
        try:
            share = plan_from_bytes(c.hello(f"host{rank}", 1000 + rank, 20)["plan"])
            c.send("addr", addr=f"tcp://127.0.0.1:{7000 + rank}")
            peers = c.wait_for({"peers"}, 20, "peers")["peers"]
            got[rank] = (share, {int(k): v for k, v in peers.items()})
        except BaseException as e:
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=worker, args=(r,), name=f"test-rank-{r}")
               for r in range(n)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(40)
    finally:
        master.close()
    assert not errors, errors[0]
    where = {t.task_id: t.machine_id for t in full.tasks}
    for rank, (share, peers) in got.items():
        assert {t.machine_id for t in share.tasks} <= {rank}
        routed = {int(k) for k in share.ctrl["routing"]}
        talks_to = {where[k] for k in routed} - {rank}
        assert set(peers) == talks_to  # exactly the machines its routes lead to
        assert all(peers[m] == f"tcp://127.0.0.1:{7000 + m}" for m in peers)
    assert set(got[2][1]) == {1, 3}
    assert got[4][0].tasks == [] and got[4][1] == {} and got[5][1] == {}
