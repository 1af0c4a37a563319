"""What a Python source file imports, read from its syntax tree (for layering tests)."""

from __future__ import annotations

import ast
from pathlib import Path


def module_imports(path: Path) -> set[str]:
    """Every module named by an ``import`` or ``from ... import`` in ``path``."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out
