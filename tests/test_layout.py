"""The layout of the test suite (``tests/__init__.py``): every folder of tests or helpers
a package, helpers named after what they hold with no leading underscore, imported by
their full name."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_folders() -> set[Path]:
    """Folders of the modules some test file imports as ``tests.<...>``."""
    out = set()
    for f in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for n in names:
                parts = n.split(".")
                if parts[0] == "tests":
                    for k in range(1, len(parts) + 1):
                        d = TESTS.parent.joinpath(*parts[:k])
                        if d.is_dir():
                            out.add(d)
    return out


def test_every_folder_of_tests_or_imported_helpers_is_a_package():
    """Folders of programs run by path (``*/scripts``, ``launcher/jobs``, ...) may be plain."""
    folders = {p.parent for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts}
    folders |= _imported_folders() | {TESTS}
    missing = sorted(str(d.relative_to(TESTS.parent)) for d in folders
                     if not (d / "__init__.py").is_file())
    assert not missing, f"folders with no __init__.py: {missing}"


def test_helpers_have_plain_names_and_are_imported_by_their_full_name():
    odd = sorted(str(p.relative_to(TESTS.parent)) for p in TESTS.rglob("_*.py")
                 if p.name != "__init__.py" and "__pycache__" not in p.parts)
    assert not odd, f"helper modules with a leading underscore: {odd}"
    helpers = {p.stem for p in TESTS.rglob("*.py")
               if not p.name.startswith(("test_", "__init__", "conftest"))}
    bare = []
    for f in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                bare.append(f"{f.relative_to(TESTS.parent)}: a relative import")
            elif isinstance(node, ast.ImportFrom) and node.module:
                top = node.module.split(".")[0]
                if top in helpers or (top.startswith("_") and top != "__future__"):
                    bare.append(f"{f.relative_to(TESTS.parent)}: from {node.module} import")
    assert not bare, f"helpers imported off sys.path (use tests.<folder>.<module>): {bare}"
