"""The repository's own docs stand alone and name files that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "actorflow"


def test_readme_links_the_architecture_doc_and_nothing_outside_the_repo():
    readme = (ROOT / "README.md").read_text()
    assert "docs/architecture.md" in readme
    assert "../" not in readme  # the repository stands alone


def test_every_file_the_architecture_doc_names_exists():
    text = (ROOT / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`([\w/]+\.(?:pyx|py))\b", text))
    assert len(named) >= 20
    missing = sorted(p for p in named
                     if not (SRC / p).exists() and not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def _readme_programs() -> list[str]:
    """The README's Python blocks that are whole programs (SPMD ones need flowlaunch)."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return [b for b in blocks if b.startswith("import") and "af.env" not in b]


def test_the_readmes_python_examples_run_as_written(tmp_path):
    import os
    import subprocess
    import sys

    programs = _readme_programs()
    assert len(programs) >= 4
    env = dict(os.environ, ACTORFLOW_DEVICE="emulated")  # one example copies to "cuda"
    for code in programs:
        r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"README example failed:\n{code}\n{r.stderr[-2000:]}"


def test_every_maintainer_doc_is_named_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    docs = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert len(docs) >= 5
    missing = [d for d in docs if f"docs/{d}" not in readme]
    assert not missing, f"docs the README does not name: {missing}"


# -- documents the code names ---------------------------------------------------------------
_SCANNED = ("src", "tests", "bench", "examples", "docs", "tools", ".ci")
_SUFFIXES = {".py", ".pyx", ".pyi", ".h", ".md", ".toml", ".sh", ".txt", ""}
_SKIP_DIRS = {"__pycache__", ".venv", "build", "dist", ".git", ".hypothesis",
              ".pytest_cache", ".mypy_cache", ".ruff_cache"}
_DOC = re.compile(r"[\w./-]*\.md\b")
_SEEDS = re.compile(r"\bseeds? ((?:\d{3}(?:, | and | or |/)?)+)", re.I)
# a design document named with no number, or the session's files outside the repository
_VAGUE = [re.compile(p) for p in (r"\bthe seed(?:'s)?\b(?! is\b)", "DES" + r"IGN\b",
                                  r"\.\./" + "shared", r"\bshared/" + "seeds")]


def _text_files() -> list[Path]:
    out = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for top in _SCANNED:
        for f in sorted((ROOT / top).rglob("*")) if (ROOT / top).is_dir() else []:
            inside = set(f.relative_to(ROOT).parts)  # not the checkout's own path
            if (f.is_file() and f.suffix in _SUFFIXES and not _SKIP_DIRS & inside
                    and "egg-info" not in str(f) and f.stat().st_size < 2_000_000):
                out.append(f)
    return out


def _seed_glossary() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Seeds", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| (\d{3}) \|", section, re.M))


def test_the_architecture_doc_has_a_glossary_of_the_seeds():
    assert _seed_glossary() == {"000", "001", "002", "003", "004"}


def test_no_file_names_a_document_the_repository_does_not_have():
    """Every ``*.md`` a file names exists (from the repository root, the file's folder or
    docs/); every "seed NNN" is in docs/architecture.md's glossary; nothing points at a
    design document by a name the repository lacks, or outside the repository."""
    seeds = _seed_glossary()
    files = _text_files()
    assert len(files) > 300
    bad = []
    for f in files:
        if f == Path(__file__).resolve():
            continue
        rel = f.relative_to(ROOT)
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            for m in _DOC.finditer(line):
                name = m.group(0).rstrip(".")
                if "://" in line[max(0, m.start() - 12):m.end()] or name.startswith("."):
                    continue
                if not any((base / name).is_file()
                           for base in (ROOT, f.parent, ROOT / "docs")):
                    bad.append(f"{rel}:{n}: names {name}, which the repository lacks")
            for m in _SEEDS.finditer(line):
                for num in re.findall(r"\d{3}", m.group(1)):
                    if num not in seeds:
                        bad.append(f"{rel}:{n}: seed {num} is not in docs/architecture.md")
            for p in _VAGUE:
                if p.search(line):
                    bad.append(f"{rel}:{n}: {line.strip()[:90]!r} names a document the "
                               "repository lacks (say which seed, or which doc in docs/)")
    assert not bad, "\n".join(bad)
