"""The ``flowlaunch`` fixture: run the CLI as a subprocess; fail if any process of it remains."""

from __future__ import annotations

import pytest

from .helpers import Launcher


@pytest.fixture
def flowlaunch():
    launcher = Launcher()
    yield launcher
    left = launcher.cleanup()
    assert not left, f"processes of a flowlaunch run were left behind: {left}"
