"""The interpreter choice is a registry: a third kind of tensor (as eager global tensors
will be) plugs in by naming its interpreter; and eager ops may be issued from several
Python threads at once."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import actorflow as af
import actorflow.functional as F
from actorflow.errors import RegistryError, UsageError
from actorflow.frontend.dispatch import INTERPRETERS, register_interpreter
from actorflow.frontend.tensor import TensorMethods


class Recorded(TensorMethods):
    """A tensor kind of a test interpreter that records what it is asked to run."""

    __slots__ = ("label",)
    interpreter = "test.recording"

    def __init__(self, label: str) -> None:
        self.label = label


class RecordingInterpreter:
    name = "test.recording"

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict, dict]] = []

    def apply(self, expr, inputs, attrs):
        self.calls.append((expr.op_type, {k: t.label for k, t in inputs.items()}, attrs))
        return Recorded(f"{expr.op_type}({','.join(t.label for t in inputs.values())})")


RECORDER = (INTERPRETERS.get("test.recording") if "test.recording" in INTERPRETERS
            else register_interpreter("test.recording", RecordingInterpreter()))


def test_a_third_interpreter_plugs_in_by_name():
    a, b = Recorded("a"), Recorded("b")
    RECORDER.calls.clear()
    out = F.relu(a + b) * 2.0
    assert out.label == "scalar_mul(relu(add(a,b)))"
    assert [c[0] for c in RECORDER.calls] == ["add", "relu", "scalar_mul"]
    assert RECORDER.calls[-1][2] == {"scalar": 2.0}
    with pytest.raises(UsageError, match=r"mixes test\.recording and eager\.local tensors"):
        a + af.tensor([1.0])
    with pytest.raises(RegistryError, match=r"interpreter 'test\.recording' is registered twice"):
        register_interpreter("test.recording", RecordingInterpreter())


def test_ops_issued_from_several_threads_at_once():
    base = np.arange(64, dtype=np.float32)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            y = af.tensor(base) * float(i)
            for _ in range(100):
                y = F.relu(y + 1.0) - 1.0
            results[i] = y.numpy()
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for i in range(4):
        np.testing.assert_array_equal(results[i], base * np.float32(i))
    af.sync()
    c = af.counters()
    assert c["instructions_done"] == c["instructions_issued"]
