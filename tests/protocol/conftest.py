"""Every protocol test runs on every core this build has (the Python reference, and the
compiled core where it is built): ``_proto.actor`` builds on the core chosen here."""

from __future__ import annotations

import pytest

from actorflow.actors.cores import available_cores
from tests.protocol import by_hand


@pytest.fixture(params=available_cores(), autouse=True)
def impl(request):
    by_hand.IMPL[0] = request.param
    yield request.param
    by_hand.IMPL[0] = "python"
