"""One-line bugs in the compiled core's C headers (``src/actorflow/_core/*.h``), for
``tools/mutate.py --c``: comparison boundaries, ``&&``/``||``, off-by-one, and error
returns that stop returning the error.  Found on each code line with a regular expression
(one occurrence per mutant); comments, preprocessor lines and string literals are left
alone.  Each mutant is built by recompiling the Cython output that includes the header
(``build_module``), not by re-running Cython: the headers are the C."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

# (pattern, replacement, description); a pattern matches one operator occurrence
OPERATORS: list[tuple[str, str, str]] = [
    (r"(?<![=!<>])==(?!=)", "!=", "'==' -> '!='"),
    (r"!=", "==", "'!=' -> '=='"),
    (r"(?<![<>])<=", "<", "'<=' -> '<'"),
    (r"(?<![<>-])>=", ">", "'>=' -> '>'"),
    (r"(?<![<-])<(?![<=])", "<=", "'<' -> '<='"),
    (r"(?<![->])>(?![>=])", ">=", "'>' -> '>='"),
    (r"&&", "||", "'&&' -> '||'"),
    (r"\|\|", "&&", "'||' -> '&&'"),
    (r"\+ 1\b", "- 1", "'+ 1' -> '- 1'"),
    (r"- 1\b", "+ 1", "'- 1' -> '+ 1'"),
    (r"\breturn -1;", "return 0;", "error return -> 0"),
]


@dataclass(frozen=True)
class CMutant:
    index: int
    line: int
    start: int  # character offset in the file
    end: int
    text: str
    what: str

    def apply(self, source: str) -> str:
        return source[:self.start] + self.text + source[self.end:]


def _code_spans(line: str) -> list[tuple[int, int]]:
    """The parts of a line outside comments and string/char literals."""
    spans, i, start, n = [], 0, 0, len(line)
    while i < n:
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            spans.append((start, i))
            j = line.find("*/", i + 2)
            if j < 0:
                return spans
            i = start = j + 2
            continue
        if line[i] in "\"'":
            spans.append((start, i))
            q, i = line[i], i + 1
            while i < n and line[i] != q:
                i += 2 if line[i] == "\\" else 1
            i = start = i + 1
            continue
        i += 1
    spans.append((start, min(i, n)))
    return spans


def cmutants(source: str) -> list[CMutant]:
    found: list[CMutant] = []
    offset = 0
    in_block = False
    for lineno, line in enumerate(source.splitlines(keepends=True), 1):
        stripped = line.strip()
        skip = (in_block or stripped.startswith(("#", "*", "/*", "//")) or not stripped)
        if "/*" in line and "*/" not in line:
            in_block = True
        elif in_block and "*/" in line:
            in_block = False
            skip = True
        if not skip:
            for a, b in _code_spans(line):
                for pattern, repl, what in OPERATORS:
                    for m in re.finditer(pattern, line[a:b]):
                        s, e = offset + a + m.start(), offset + a + m.end()
                        found.append(CMutant(len(found), lineno, s, e, repl, what))
        offset += len(line)
    return found


_INCLUDE = re.compile(r'#include "([\w.]+\.h)"')


def including_modules(core: Path, header: str) -> list[str]:
    """The Cython outputs (``_core/<module>.c``) that include ``header``, directly or
    through other headers of ``_core``."""
    def closure(names: set[str]) -> set[str]:
        todo, seen = list(names), set(names)
        while todo:
            h = core / todo.pop()
            if h.exists():
                for inc in _INCLUDE.findall(h.read_text(errors="replace")):
                    if inc not in seen:
                        seen.add(inc)
                        todo.append(inc)
        return seen
    return sorted(c.stem for c in core.glob("*.c")
                  if header in closure(set(_INCLUDE.findall(c.read_text(errors="replace")))))


def build_module(core: Path, module: str) -> tuple[bool, str]:
    """Recompile ``_core/<module>.c`` into its extension in place (-O0: quick; behaviour is
    the same), stamped with the (mutated) sources as setup.py stamps it, so the loader
    takes it.  ``(ok, compiler output)``."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    cmd = ["gcc", "-shared", "-fPIC", "-O0", "-std=gnu11", "-fno-strict-aliasing", "-w",
           f"-I{sysconfig.get_paths()['include']}", f"-I{core}",
           *_stamps(core).compile_args(core, module), str(core / f"{module}.c"),
           "-o", str(core / f"{module}{suffix}"), "-lpthread"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode == 0, p.stderr[-2000:]


def restamp_others(core: Path, built: list[str]) -> None:
    """Give the extensions not in ``built`` the stamp of the (mutated) sources: every
    header is in every module's stamp (``build_stamp.py``), but a module that does not
    include the mutated header (``including_modules``) compiles to the same code, so it
    is not rebuilt; without this the loader would refuse it as stale."""
    stamps = _stamps(core)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for so in core.glob(f"*{suffix}"):
        module = so.name[:-len(suffix)]
        if module in built or not (core / f"{module}.pyx").exists():
            continue
        have, want = stamps.read_stamp(so), stamps.source_stamp(core, module)
        if have is not None and have != want:
            data = so.read_bytes()
            so.write_bytes(data.replace(stamps.MARKER + have.encode(),
                                        stamps.MARKER + want.encode()))


def _stamps(core: Path) -> ModuleType:
    """``build_stamp.py`` of the sandbox's core, by path (imports nothing of actorflow)."""
    spec = importlib.util.spec_from_file_location("_sandbox_build_stamp", core / "build_stamp.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
