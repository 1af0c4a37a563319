"""The compiled core's build and its loader: the record layout, and the loud fallback.

The native core is built by ``pip install -e .``; a machine where it does not build runs on
the Python core and says so (a ``RuntimeWarning``), and ``ACTORFLOW_CORE`` chooses
(``native`` is refused where it is not built).  Stale modules: test_build_stamp.py.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from actorflow import _core
from actorflow.errors import UsageError

needs_native = pytest.mark.skipif(_core.native_error() is not None,
                                  reason=f"compiled core not built: {_core.native_error()}")


@needs_native
def test_a_record_is_64_bytes_and_round_trips():
    from actorflow._core import _records

    assert _records.RECORD_SIZE == 64
    fields = (3, -1, 2**40 + 7, 12, 5, 2**33, 9, (7 << 32) | 5, 3, -1)
    raw = _records.pack(fields)
    assert len(raw) == 64
    assert _records.unpack(raw) == fields
    # the slot (int32) sits at byte 56, the type byte right after it
    assert int.from_bytes(raw[56:60], sys.byteorder, signed=True) == 5
    assert raw[60] == 3
    with pytest.raises(ValueError, match="64 bytes"):
        _records.unpack(raw[:63])


def test_the_choice_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("ACTORFLOW_CORE", "python")
    assert _core.core_name() == "python"
    monkeypatch.setenv("ACTORFLOW_CORE", "fast")
    with pytest.raises(UsageError, match=r"ACTORFLOW_CORE='fast'.*native.*python"):
        _core.core_name()


@needs_native
def test_default_is_native_when_built(monkeypatch):
    monkeypatch.delenv("ACTORFLOW_CORE", raising=False)
    assert _core.core_name() == "native"


_BLOCKED = textwrap.dedent("""
    import importlib.abc, sys, warnings
    class Block(importlib.abc.MetaPathFinder):  # as if the extension had not been built
        def find_spec(self, name, path, target=None):
            if name.startswith("actorflow._core._"):
                raise ImportError(f"no module named {name!r} (blocked by the test)")
    sys.meta_path.insert(0, Block())
    warnings.simplefilter("always")
    import actorflow._core as c
    print("CORE", c.core_name())
""")


def test_without_the_extension_it_runs_on_python_and_says_so():
    r = subprocess.run([sys.executable, "-c", _BLOCKED], capture_output=True, text=True,
                       timeout=60, env=_env())
    assert r.returncode == 0, r.stderr
    assert "CORE python" in r.stdout
    assert "RuntimeWarning" in r.stderr and "compiled core is the default" in r.stderr
    assert "module _records cannot be found" in r.stderr  # names the module and why


def test_without_the_extension_asking_for_native_is_refused():
    r = subprocess.run([sys.executable, "-c", _BLOCKED], capture_output=True, text=True,
                       timeout=60, env={**_env(), "ACTORFLOW_CORE": "native"})
    assert r.returncode == 1 and "CORE" not in r.stdout
    assert "UsageError: ACTORFLOW_CORE=native, but the compiled core cannot be used: " \
           "module _records cannot be found" in r.stderr


def test_asking_for_python_is_silent():
    r = subprocess.run([sys.executable, "-c", _BLOCKED], capture_output=True, text=True,
                       timeout=60, env={**_env(), "ACTORFLOW_CORE": "python"})
    assert r.returncode == 0 and "CORE python" in r.stdout
    assert "RuntimeWarning" not in r.stderr


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "ACTORFLOW_CORE"}


def test_a_failed_compile_installs_without_the_core(tmp_path):
    """setup.py with a compiler that fails: the build succeeds, says so, and leaves the core
    out (the install then runs on Python, as the tests above show)."""
    import os
    import shutil
    from pathlib import Path

    pytest.importorskip("Cython")
    root = Path(__file__).resolve().parents[2]
    shutil.copy(root / "setup.py", tmp_path / "setup.py")
    core = tmp_path / "src" / "actorflow" / "_core"
    core.mkdir(parents=True)
    for f in (root / "src" / "actorflow" / "_core").iterdir():
        if f.suffix in (".pyx", ".h", ".pxd", ".pxi") or f.name == "build_stamp.py":
            shutil.copy(f, core / f.name)
    env = {**os.environ, "CC": "false", "LDSHARED": "false"}
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "compiled core was not built" in r.stderr
    assert not list(core.glob("*.so"))
