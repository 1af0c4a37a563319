"""Stale native code never runs: every compiled module carries the stamp of the sources it
was built from, and the loader refuses one whose stamp is not the installed sources'.

A failed rebuild (``pip install -q -e .`` hides the compiler's error) leaves the earlier
build's module beside newer sources: exactly what these tests make, on a private copy of
the package that ``PYTHONPATH`` puts first (the installed one is never touched), and then
watch through ``flowlaunch``: the warning banner names the module and why, the ``--json``
summary says the Python core ran, and ``ACTORFLOW_CORE=native`` is refused.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from actorflow import _core
from actorflow._core import build_stamp

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "actorflow"
SAMPLE = ROOT / "examples" / "sample_pipeline.py"
SUFFIX = __import__("sysconfig").get_config_var("EXT_SUFFIX")

needs_native = pytest.mark.skipif(_core.native_error() is not None,
                                  reason=f"compiled core not built: {_core.native_error()}")


def _setup_modules() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "MODULES":
            return [k.value for k in node.value.keys]  # type: ignore[union-attr]
    raise AssertionError("setup.py has no MODULES")


def test_the_loader_checks_every_module_setup_builds():
    pyx = sorted(p.stem for p in (PKG / "_core").glob("*.pyx"))
    assert sorted(_setup_modules()) == pyx == sorted(_core.MODULES)


@needs_native
def test_every_built_module_carries_the_stamp_of_its_sources():
    core = PKG / "_core"
    stamps = {m: build_stamp.read_stamp(core / f"{m}{SUFFIX}") for m in _core.MODULES}
    assert stamps == {m: build_stamp.source_stamp(core, m) for m in _core.MODULES}
    assert len(set(stamps.values())) == len(stamps)  # each module its own hash


def test_a_stamp_changes_with_its_own_pyx_and_with_any_shared_header(tmp_path):
    for name in ("a.pyx", "b.pyx", "x.h", "y.pxi", "z.pxd"):
        (tmp_path / name).write_text(f"// {name}\n")
    a, b = build_stamp.source_stamp(tmp_path, "a"), build_stamp.source_stamp(tmp_path, "b")
    (tmp_path / "b.pyx").write_text("changed\n")
    assert build_stamp.source_stamp(tmp_path, "a") == a  # another module's .pyx: not a's
    assert build_stamp.source_stamp(tmp_path, "b") != b
    for shared in ("x.h", "y.pxi", "z.pxd"):
        before = build_stamp.source_stamp(tmp_path, "a")
        (tmp_path / shared).write_text("changed\n")
        assert build_stamp.source_stamp(tmp_path, "a") != before, shared


# -- a private copy of the installed package, made stale the way a failed rebuild leaves it --

@pytest.fixture
def sandbox(tmp_path):
    """A copy of ``src/actorflow`` (built modules included) first on ``PYTHONPATH``."""
    shutil.copytree(PKG, tmp_path / "actorflow",
                    ignore=shutil.ignore_patterns("__pycache__", "*.c", "*.html"))
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), *filter(None, [
        os.environ.get("PYTHONPATH")])]), "PYTHONDONTWRITEBYTECODE": "1"}
    probe = subprocess.run([sys.executable, "-c", "import actorflow; print(actorflow.__file__)"],
                           env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert probe.stdout.startswith(str(tmp_path)), probe
    return tmp_path / "actorflow" / "_core", env


def _sim(flowlaunch, env: dict, core: str | None):
    env = {**env, "ACTORFLOW_CORE": core or ""}
    return flowlaunch.run("sim", SAMPLE, "--machines", 2, "--pieces", 2, "--json",
                          env=env, timeout=120)


@needs_native
def test_a_module_rebuilt_from_nothing_new_runs_native(flowlaunch, sandbox):
    """The copy as built: the check passes and the native core runs (the check can pass)."""
    _core_dir, env = sandbox
    r = _sim(flowlaunch, env, None)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["core"] == "native"
    assert "cannot be used" not in r.stderr


@needs_native
def test_a_stale_module_falls_back_to_python_loudly_and_native_is_refused(flowlaunch, sandbox):
    core, env = sandbox
    pyx = core / "_zq.pyx"  # a source edited after the build whose rebuild then failed
    pyx.write_text(pyx.read_text() + "\n# an edit the old _zq module was not built from\n")

    r = _sim(flowlaunch, env, None)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["core"] == "python"
    assert [m["core"] for m in doc["machines"]] == ["python", "python"]
    assert "RuntimeWarning" in r.stderr and "*" * 78 in r.stderr
    assert "module _zq is not usable" in r.stderr and "is stale" in r.stderr
    assert "Running on the Python core" in r.stderr

    r = _sim(flowlaunch, env, "native")
    assert r.returncode == 1
    assert r.stdout == ""  # refused before any worker started
    assert "flowlaunch: error: ACTORFLOW_CORE=native, but the compiled core cannot be used: " \
           "module _zq is not usable" in r.stderr
    assert "Traceback" not in r.stderr


@needs_native
def test_a_missing_or_unstamped_module_is_named(flowlaunch, sandbox):
    core, env = sandbox
    (core / f"unit_core{SUFFIX}").unlink()  # removed by a build that failed to compile it
    r = _sim(flowlaunch, env, None)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["core"] == "python"
    assert "module unit_core is not built" in r.stderr

    # a module not built by setup.py (no stamp), in place of the missing one
    shutil.copy(core / f"_records{SUFFIX}", core / f"unit_core{SUFFIX}")
    code = "import actorflow._core as c; print(c.native_error())"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env,
                         "ACTORFLOW_CORE": "python"}, capture_output=True, text=True, timeout=60)
    assert "module unit_core is not usable" in out.stdout
    assert "is stale" in out.stdout  # carries _records' stamp, not unit_core's
    data = (core / f"_records{SUFFIX}").read_bytes()
    blank = b"x" * len(build_stamp.MARKER)
    (core / f"unit_core{SUFFIX}").write_bytes(data.replace(build_stamp.MARKER, blank))
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env,
                         "ACTORFLOW_CORE": "python"}, capture_output=True, text=True, timeout=60)
    assert "carries no build stamp" in out.stdout
    (core / f"unit_core{SUFFIX}").write_bytes(b"")  # a copy cut short
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env,
                         "ACTORFLOW_CORE": "python"}, capture_output=True, text=True, timeout=60)
    assert "module unit_core is not usable" in out.stdout and "no build stamp" in out.stdout


def test_a_module_that_fails_to_compile_leaves_no_earlier_build(tmp_path):
    """setup.py where one module fails to compile and others' sources are gone: the module
    that builds is installed with its stamp, and every earlier build of the others is
    removed (none is left to load against sources it was not built from)."""
    pytest.importorskip("Cython")
    for f in ("setup.py", "pyproject.toml"):
        shutil.copy(ROOT / f, tmp_path / f)
    (tmp_path / "README.md").write_text("# the package's readme\n")
    core = tmp_path / "src" / "actorflow" / "_core"
    core.mkdir(parents=True)
    for f in (PKG / "__init__.py", *(PKG / "_core").iterdir()):
        if f.suffix in (".h", ".pxd", ".pxi") or f.name in (
                "__init__.py", "build_stamp.py", "_records.pyx", "_zq.pyx", "_rings.pyx"):
            shutil.copy(f, core.parent / f.name if f.parent == PKG else core / f.name)
    for m in _core.MODULES:  # an earlier build of every module
        (core / f"{m}{SUFFIX}").write_bytes(b"an earlier build")
    cc = tmp_path / "cc"  # a compiler that fails on _zq and _rings (quick: _records builds)
    cc.write_text('#!/bin/sh\ncase "$*" in *_zq.c*|*_rings.c*) echo "cc: forced error" >&2; '
                  'exit 1;; esac\nexec gcc "$@"\n')
    cc.chmod(0o755)
    env = {**os.environ, "CC": str(cc), "ACTORFLOW_CORE_DEBUG": "1"}
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "compiled core was not built (actorflow._core._zq: CompileError" in r.stderr
    assert sorted(p.name for p in core.glob("*.so")) == [f"_records{SUFFIX}"]
    assert (build_stamp.read_stamp(core / f"_records{SUFFIX}")
            == build_stamp.source_stamp(core, "_records"))
    for m, why in [("_zq", "it failed to build in this run"),
                   ("_rings", "it failed to build in this run"),
                   ("unit_core", "its .pyx did not translate"),
                   ("_eager", "its .pyx did not translate")]:
        assert f"removed src/actorflow/_core/{m}{SUFFIX} (an earlier build; {m} was not " \
               f"rebuilt: {why})" in r.stderr, m


@needs_native
def test_an_asan_module_without_its_runtime_is_refused_not_a_crash(sandbox):
    """A module built with ACTORFLOW_CORE_SANITIZE=address ends the process at import unless
    ASan's runtime was preloaded: the loader refuses it first (the marker the sanitizer
    build compiles in is added at the end of the file here; ELF ignores trailing bytes)."""
    core, env = sandbox
    so = core / f"_records{SUFFIX}"
    so.write_bytes(so.read_bytes() + build_stamp.SANITIZE_MARKER + b"address,undefined\0")
    clean = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    code = "import actorflow._core as c; print(c.native_error())"
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env,
                         "ACTORFLOW_CORE": "python"}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "module _records is not usable" in out.stdout
    assert "-fsanitize=address,undefined" in out.stdout and "LD_PRELOAD=" in out.stdout
