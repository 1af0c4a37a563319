"""Build of actorflow's compiled core, ``src/actorflow/_core/`` (Cython over C headers).

``pip install -e .`` runs this (setuptools + Cython from ``[build-system] requires``; gcc and
the Python headers are all a machine needs).  A machine where it does not compile still
installs: the failure is printed as a warning and actorflow runs on its Python core
(``actorflow._core`` says so at import).  Conventions (``docs/architecture.md``, "The
compiled core"):

- one extension per ``.pyx`` listed in ``MODULES`` (module name -> extra C sources); every
  ``*.h``/``*.pxi`` of ``_core/`` is a dependency of every module, so an edit rebuilds;
- ``ACTORFLOW_CORE_SANITIZE=address,undefined`` builds with those sanitizers (CI's
  sanitizer run); ``ACTORFLOW_CORE_DEBUG=1`` builds with ``-O0 -g`` for gdb;
- ``ACTORFLOW_CORE_BUILD=0`` skips the compiled core altogether (the fallback path).
"""

from __future__ import annotations

import os
import sys
from glob import glob

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CORE = os.path.join("src", "actorflow", "_core")

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


def _warn(what: str, err: BaseException) -> None:
    bar = "*" * 78
    print(f"\n{bar}\nWARNING: actorflow's compiled core was not built ({what}: "
          f"{type(err).__name__}: {err}).\nactorflow installs and runs on its Python core "
          f"(slower); fix the build (gcc and the Python headers) and reinstall to get the "
          f"native one.\n{bar}\n", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """build_ext that reports a failed compile instead of failing the install."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all, or the platform cannot build
            _warn("build_ext", e)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # a compile or link error: leave this module out
            _warn(ext.name, e)


def _extensions() -> list[Extension]:
    if os.environ.get("ACTORFLOW_CORE_BUILD", "1") == "0":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError as e:
        _warn("Cython", e)
        return []
    cflags, ldflags = _flags()
    headers = sorted(glob(os.path.join(CORE, "*.h")) + glob(os.path.join(CORE, "*.pxi")))
    exts = [Extension(f"actorflow._core.{name}",
                      sources=[os.path.join(CORE, f"{name}.pyx"), *extra],
                      include_dirs=[CORE], depends=headers,
                      extra_compile_args=cflags, extra_link_args=ldflags)
            for name, extra in MODULES.items()]
    built = []
    for ext in exts:  # one at a time: a .pyx that does not translate leaves only itself out
        try:
            built += cythonize([ext], language_level=3, quiet=True,
                               compiler_directives={"boundscheck": False, "wraparound": False,
                                                    "initializedcheck": False})
        except Exception as e:
            _warn(f"cythonize {ext.name}", e)
    return built


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
