"""Compares a test file's ``case_*`` functions, run under ``import actorflow as flow``, with
what OneFlow 0.9.0 gave for the same source (``oracle/record_cases.py`` wrote
``oracle/<stem>.json``).  Shared by the training oracles (autograd, nn, optim)."""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import actorflow as flow

ORACLE_DIR = Path(__file__).parent / "oracle"


def load(test_file: str) -> dict[str, Any]:
    """The recorded results for ``test_file`` (its stem without ``test_``)."""
    stem = Path(test_file).stem.removeprefix("test_")
    return json.loads((ORACLE_DIR / f"{stem}.json").read_text())


def case_names(module_globals: dict[str, Any]) -> set[str]:
    return {k[5:] for k in module_globals if k.startswith("case_")}


def _same(key: str, got: Any, want: dict, rtol: float, atol: float) -> str | None:
    if "list" in want:
        if not isinstance(got, (list, tuple)) or len(got) != len(want["list"]):
            return f"{key}: {got!r}, OneFlow a list of {len(want['list'])} tensors"
        for i, (g, w) in enumerate(zip(got, want["list"])):
            if (d := _same(f"{key}[{i}]", g, w, rtol, atol)) is not None:
                return d
        return None
    if "py" in want:
        if isinstance(got, flow.Tensor):
            return f"{key}: a tensor {got.numpy().tolist()}, OneFlow {want['py']!r}"
        value = list(got) if isinstance(got, tuple) else got
        if isinstance(want["py"], float) and isinstance(value, (int, float)):
            ok = np.isclose(value, want["py"], rtol=rtol, atol=atol)
        else:
            ok = value == want["py"]
        return None if ok else f"{key}: {value!r}, OneFlow {want['py']!r}"
    if not isinstance(got, flow.Tensor):
        return f"{key}: {got!r}, OneFlow a tensor {want['v']}"
    if str(got.dtype) != want["dtype"] or list(got.shape) != want["shape"]:
        return f"{key}: {got.dtype} {list(got.shape)}, OneFlow {want['dtype']} {want['shape']}"
    if not np.allclose(np.asarray(got.numpy(), dtype=np.float64),
                       np.asarray(want["v"], dtype=np.float64), rtol=rtol, atol=atol):
        return f"{key}: {got.numpy().tolist()}\n   OneFlow {want['v']}"
    return None


def check(name: str, case: Callable[[], dict], want: dict, *, rtol: float, atol: float,
          differs: dict[str, tuple[type[BaseException], str]],
          errors: dict[str, tuple[type[BaseException], str]] | None = None) -> None:
    """Runs one case and asserts OneFlow's result; a case listed in ``differs`` (a deliberate
    difference, documented in docs/training.md) must raise that error with that text.  Where
    OneFlow raised, actorflow raises an error of the same built-in type, and the one
    ``errors`` names (actorflow's class, words of its message) when listed."""
    flow.manual_seed(0)
    if name in differs:
        exc, fragment = differs[name]
        with pytest.raises(exc, match=fragment):
            case()
        return
    if "err" in want:  # OneFlow refused: so does actorflow, with an error of that type
        exc, words = (errors or {}).get(name, (Exception, ""))
        with pytest.raises(exc, match=words) as info:
            case()
        assert isinstance(info.value, getattr(builtins, want["err"], Exception)), (
            f"{name}: {type(info.value).__name__}, OneFlow raised {want['err']}")
        return
    got = case()
    assert set(got) == set(want["out"]), (
        f"{name}: results {sorted(got)}, OneFlow {sorted(want['out'])}")
    problems = [d for k in sorted(got)
                if (d := _same(k, got[k], want["out"][k], rtol, atol)) is not None]
    assert not problems, f"{name} differs from OneFlow:\n" + "\n".join(problems)
