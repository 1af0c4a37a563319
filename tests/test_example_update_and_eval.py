"""examples/update_and_eval.py: update and eval jobs interleaved, checked against numpy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "update_and_eval.py"


def _load():
    spec = importlib.util.spec_from_file_location("example_update_and_eval", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("machines", [1, 3])
def test_update_and_eval_matches_numpy(machines, capsys):
    mod = _load()
    assert mod.main(machines) == 0
    out = capsys.readouterr().out
    assert f"on {machines} machines" in out and out.rstrip().endswith("OK")


def test_the_check_catches_a_wrong_order():
    mod = _load()
    want = mod.numpy_model()
    assert mod.check(want) == 0.0
    swapped = {"w": want["w"], "loss": [want["loss"][0], *want["loss"][2:], want["loss"][1]]}
    assert mod.check(swapped) > 1e-2
