"""The shared Registry: duplicates refused, unknown names answered with the known ones."""

from __future__ import annotations

import pytest

from actorflow.errors import ActorflowError, RegistryError
from actorflow.registry import Registry


def test_duplicate_name_is_refused():
    r: Registry[int] = Registry("widget")
    r.register("a", 1)
    with pytest.raises(RegistryError, match="widget 'a' is registered twice"):
        r.register("a", 2)
    assert r.get("a") == 1


def test_unknown_name_lists_the_known_ones():
    r: Registry[int] = Registry("widget")
    r.register("b", 2)
    r.register("a", 1)
    with pytest.raises(RegistryError, match=r"unknown widget 'c'; known: a, b") as e:
        r.get("c")
    assert isinstance(e.value, ActorflowError) and isinstance(e.value, LookupError)


def test_loader_runs_once_on_first_lookup():
    calls = []
    r: Registry[str] = Registry("thing", loader=lambda: calls.append(r.register("x", "X")))
    assert calls == []
    assert r.get("x") == "X" and "x" in r and r.names() == ["x"]
    assert len(calls) == 1
