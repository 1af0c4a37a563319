"""Build of actorflow's compiled core, ``src/actorflow/_core/`` (Cython over C headers).

``pip install -e .`` runs this (setuptools + Cython from ``[build-system] requires``; gcc and
the Python headers are all a machine needs).  A machine where it does not compile still
installs: the failure is printed as a warning and actorflow runs on its Python core
(``actorflow._core`` says so at import).  Conventions (``docs/architecture.md``, "The
compiled core"):

- one extension per ``.pyx`` listed in ``MODULES`` (module name -> extra C sources); every
  ``*.h``/``*.pxi``/``*.pxd`` of ``_core/`` is a dependency of every module, so an edit rebuilds;
- ``ACTORFLOW_CORE_SANITIZE=address,undefined`` builds with those sanitizers (CI's
  sanitizer run); ``ACTORFLOW_CORE_DEBUG=1`` builds with ``-O0 -g`` for gdb;
- ``ACTORFLOW_CORE_BUILD=0`` skips the compiled core altogether (the fallback path).

Stale code never runs: every module is compiled with a build stamp, the hash of its sources
(``_core/build_stamp.py``), which the loader checks against the installed sources; and a
module that fails to translate, compile or install has its earlier build removed from the
source tree (an in-place or editable build), so nothing of an older build is left to load.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from glob import glob
from pathlib import Path
from types import ModuleType

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CORE = os.path.join("src", "actorflow", "_core")


def _load_stamps() -> ModuleType:
    """``_core/build_stamp.py``, by path: the package is not importable while it builds."""
    spec = importlib.util.spec_from_file_location(
        "_actorflow_build_stamp", os.path.join(CORE, "build_stamp.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


stamps = _load_stamps()

# module (under actorflow._core) -> extra C sources; add a line to add a module
MODULES: dict[str, list[str]] = {
    "_records": [],
    "unit_core": [],
    "_eager": [],
    "_rings": [],
    "_zq": [],
}


def _flags() -> tuple[list[str], list[str]]:
    debug = os.environ.get("ACTORFLOW_CORE_DEBUG") == "1"
    cflags = ["-std=gnu11", "-fno-strict-aliasing", "-Wall", "-Wno-unused-function",
              "-O0" if debug else "-O2", "-g" if debug else "-g1"]
    ldflags: list[str] = []
    sanitize = os.environ.get("ACTORFLOW_CORE_SANITIZE", "")
    if sanitize:
        cflags += [f"-fsanitize={sanitize}", "-fno-omit-frame-pointer",
                   "-fno-sanitize-recover=all"]
        ldflags += [f"-fsanitize={sanitize}"]
    return cflags, ldflags


def _warn(what: str, err: BaseException | str) -> None:
    bar = "*" * 78
    why = err if isinstance(err, str) else f"{type(err).__name__}: {err}"
    print(f"\n{bar}\nWARNING: actorflow's compiled core was not built ({what}: "
          f"{why}).\nactorflow installs and runs on its Python core "
          f"(slower); fix the build (gcc and the Python headers) and reinstall to get the "
          f"native one (pip install -v -e . shows the compiler's errors).\n{bar}\n",
          file=sys.stderr)


def _in_place(name: str) -> Path:
    """Where an in-place (or editable) build puts module ``name``."""
    return Path(CORE, name + sysconfig.get_config_var("EXT_SUFFIX"))


def _drop_stale(name: str, why: str) -> None:
    """Remove an earlier build of ``name`` from the source tree: it was not rebuilt from
    the current sources, and must not load against them (the loader would refuse it too)."""
    old = _in_place(name)
    if old.exists():
        old.unlink()
        print(f"actorflow: removed {old} (an earlier build; {name} was not rebuilt: {why})",
              file=sys.stderr)


class OptionalBuildExt(build_ext):
    """build_ext that reports a failed compile instead of failing the install, and leaves no
    earlier build of a failed module behind."""

    def run(self) -> None:
        self._built: set[str] = set()
        try:
            super().run()
        except Exception as e:  # no compiler at all, or the platform cannot build
            _warn("build_ext", e)
        if self.inplace or getattr(self, "editable_mode", False):
            self._check_in_place()

    def build_extension(self, ext: Extension) -> None:
        name = ext.name.rpartition(".")[2]
        target = Path(self.get_ext_fullpath(ext.name))
        force = self.force
        if target.exists() and stamps.read_stamp(target) != stamps.source_stamp(
                Path(CORE), name):
            self.force = True  # its file is older than its sources say (e.g. copied back)
        try:
            super().build_extension(ext)
        except Exception as e:  # a compile or link error: leave this module out
            _warn(ext.name, e)
            if target.exists():
                target.unlink()  # an earlier build in the build folder: not this source
        else:
            self._built.add(name)
        finally:
            self.force = force

    def copy_extensions_to_source(self) -> None:
        """Copy only what built (setuptools stops at the first missing file, which would
        leave the modules after it stale)."""
        every = self.extensions
        self.extensions = [e for e in every if e.name.rpartition(".")[2] in self._built]
        try:
            super().copy_extensions_to_source()
        finally:
            self.extensions = every

    def _check_in_place(self) -> None:
        """After an in-place build: every module of ``MODULES`` carries the stamp of the
        current sources, or its file is removed (the loader then says it is missing)."""
        for name in MODULES:
            built = _in_place(name)
            if not built.exists():
                continue
            if name in self._built:  # built, but not what is in place: the copy failed
                why = stamps.stale_reason(Path(CORE), name, built)
            else:
                why = "it failed to build in this run"
            if why:
                _drop_stale(name, why)


def _extensions() -> list[Extension]:
    if os.environ.get("ACTORFLOW_CORE_BUILD", "1") == "0":
        for name in MODULES:
            _drop_stale(name, "ACTORFLOW_CORE_BUILD=0")
        return []
    try:
        from Cython.Build import cythonize
    except ImportError as e:
        _warn("Cython", e)
        for name in MODULES:
            _drop_stale(name, "Cython is missing")
        return []
    cflags, ldflags = _flags()
    headers = sorted({p for pattern in stamps.SHARED for p in glob(os.path.join(CORE, pattern))})
    built = []
    for name, extra in MODULES.items():  # one at a time: a failure leaves only itself out
        try:
            ext = Extension(f"actorflow._core.{name}",
                            sources=[os.path.join(CORE, f"{name}.pyx"), *extra],
                            include_dirs=[CORE], depends=headers,
                            extra_compile_args=cflags + stamps.compile_args(
                                Path(CORE), name, os.environ.get("ACTORFLOW_CORE_SANITIZE", "")),
                            extra_link_args=ldflags)
            built += cythonize([ext], language_level=3, quiet=True,
                               compiler_directives={"boundscheck": False, "wraparound": False,
                                                    "initializedcheck": False})
        except Exception as e:
            _warn(f"cythonize actorflow._core.{name}", e)
            _drop_stale(name, "its .pyx did not translate")
    return built


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
