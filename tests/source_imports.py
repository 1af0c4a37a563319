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


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_time_statements(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: module level, also inside module-level
    ``if``/``try``/``with`` (not under ``if TYPE_CHECKING``, not in a function)."""
    out: list[ast.Import | ast.ImportFrom] = []
    for n in body:
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out.append(n)
        elif isinstance(n, ast.If):
            if not _is_type_checking(n.test):
                out += _import_time_statements(n.body)
            out += _import_time_statements(n.orelse)
        elif isinstance(n, ast.Try):
            out += _import_time_statements(n.body)
            for h in n.handlers:
                out += _import_time_statements(h.body)
            out += _import_time_statements(n.orelse) + _import_time_statements(n.finalbody)
        elif isinstance(n, ast.With):
            out += _import_time_statements(n.body)
    return out


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at ``root``."""
    out = {}
    for f in sorted(root.rglob("*.py")):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def import_time_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package tree it imports at import time.

    ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``
    (the name is read from ``a/b/__init__.py``, which must have run far enough).  The
    implicit import of parent packages is not an edge: a parent already importing is
    in ``sys.modules`` and does not cause a cycle by itself.
    """
    mods = module_names(root)
    graph: dict[str, set[str]] = {}
    for name, f in mods.items():
        is_pkg = f.name == "__init__.py"
        edges: set[str] = set()
        for n in _import_time_statements(ast.parse(f.read_text()).body):
            if isinstance(n, ast.Import):
                edges.update(a.name for a in n.names if a.name in mods)
                continue
            if n.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (n.level - 1)]
                src = ".".join(base + ([n.module] if n.module else []))
            else:
                src = n.module or ""
            for a in n.names:
                sub = f"{src}.{a.name}"
                if sub in mods:
                    edges.add(sub)
                elif src in mods:
                    edges.add(src)
        edges.discard(name)
        graph[name] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    cycles.append(sorted(comp))
    return cycles
