"""The error tree: every error says whose problem it is, and a runtime bug is named as one."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import actorflow as af
from actorflow import errors
from actorflow.actors.process_hosting import error_from_body
from actorflow.actors.runtime import ThreadUnit
from actorflow.errors import ActorflowError, InputError, InternalError, RunError

ROOTS = {ActorflowError, InputError, RunError}


def error_classes() -> list[type]:
    return [c for _, c in inspect.getmembers(errors, inspect.isclass)
            if issubclass(c, ActorflowError) and c not in ROOTS]


def test_every_error_is_either_a_wrong_input_or_a_failed_run():
    classes = error_classes()
    assert len(classes) >= 20
    both = [c.__name__ for c in classes if issubclass(c, InputError) and issubclass(c, RunError)]
    neither = [c.__name__ for c in classes
               if not issubclass(c, InputError) and not issubclass(c, RunError)]
    assert not both and not neither, f"in both branches: {both}; in neither: {neither}"
    assert issubclass(errors.MalformedMessage, InputError)  # a peer's message is wrong
    assert issubclass(errors.ProtocolError, InputError)
    assert issubclass(errors.KernelError, RunError) and issubclass(errors.UnitLost, RunError)


def test_a_bug_in_a_unit_loop_is_an_internal_error_not_a_protocol_error(monkeypatch):
    """A non-actorflow exception inside a unit's loop stops the run as ``InternalError``
    naming the unit, with the original exception chained."""
    def broken(self):
        raise KeyError("a bug")

    b = af.PlanBuilder()
    b.output("y", b.op("identity", b.input("x", (2,), "float32")))
    monkeypatch.setattr(ThreadUnit, "_loop", broken)
    with pytest.raises(InternalError, match=r"unit .* crashed: KeyError: 'a bug'") as e:
        with af.Session(b.build(), timeout=20) as s:  # leaving it re-raises nothing else
            s.run({"x": np.zeros(2, np.float32)})
    assert isinstance(e.value.__cause__, KeyError)


@pytest.mark.parametrize("body, cls", [
    ({"type": "UsageError", "message": "m"}, errors.UsageError),
    ({"type": "InternalError", "message": "m"}, InternalError),
    ({"type": "NoSuchError", "message": "m"}, InternalError),
    ({"type": "RankLost", "message": "m"}, InternalError),  # needs a rank: not rebuilt
])
def test_a_unit_process_error_is_rebuilt_by_name(body, cls):
    err = error_from_body(body)
    assert type(err) is cls and str(err) == "m"
