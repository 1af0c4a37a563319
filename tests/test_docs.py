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
    named = set(re.findall(r"`([\w/]+\.py)", text))
    assert len(named) >= 20
    missing = sorted(p for p in named
                     if not (SRC / p).exists() and not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"
