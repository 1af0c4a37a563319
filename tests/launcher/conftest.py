"""The ``flowlaunch`` fixture: run the CLI as a subprocess; fail if any process of it remains.

Workers started directly (``flowlaunch worker``, SPMD over several nodes) need the run's
cluster key: one key file, made for the test session, is named by $ACTORFLOW_CLUSTER_KEY
for every process the tests start (``sim``/``run`` still make their own per run).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from actorflow.transport.auth import ClusterKey


@pytest.fixture(autouse=True, scope="session")
def cluster_key_file():
    d = Path(tempfile.mkdtemp(prefix="actorflow-test-key-"))
    path = ClusterKey.generate().write(d / "cluster.key")
    old = os.environ.get("ACTORFLOW_CLUSTER_KEY")
    os.environ["ACTORFLOW_CLUSTER_KEY"] = str(path)
    yield path
    if old is None:
        os.environ.pop("ACTORFLOW_CLUSTER_KEY", None)
    else:
        os.environ["ACTORFLOW_CLUSTER_KEY"] = old
    shutil.rmtree(d, ignore_errors=True)


