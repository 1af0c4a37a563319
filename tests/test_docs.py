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
