"""The one-line bugs ``tools/mutate.py`` seeds: every mutant of a Python module, from its AST.

A mutant replaces one source segment (an expression or a statement, found by the AST
node's positions) by the unparsed text of a changed node, so the rest of the file stays
byte for byte as it was and a report can show the changed line.  The operators are those
that catch the bugs a wrong line makes in code that decides correctness:

- comparisons at their boundary (``<`` -> ``<=``, ``==`` -> ``!=``, ``in`` -> ``not in``);
- arithmetic and bit operators (``+`` -> ``-``, ``//`` -> ``/``, ``&`` -> ``|``, ``+=``);
- boolean logic: ``and`` <-> ``or``, one operand of ``and``/``or`` dropped, ``not`` dropped,
  an ``if``/``while``/conditional-expression test negated;
- constants: an integer ``n`` -> ``n + 1`` (``1`` -> ``0``), ``True`` <-> ``False``;
- ``min`` <-> ``max``, ``any`` <-> ``all``;
- a statement removed (a call, an assignment to an attribute or item, an augmented
  assignment, a ``raise``, a ``break``/``continue``).

Not mutated: docstrings and other strings, f-strings (messages), type annotations,
``assert`` statements, imports, ``__all__``, the arguments of a ``raise`` (what an error
says is checked by the tests that match its message, and its removal is a mutant), and a
line that ends with ``# no mutate`` (say why on that line).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

COMPARE_SWAP: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
BINOP_SWAP: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitOr, ast.LShift: ast.RShift, ast.RShift: ast.LShift, ast.Pow: ast.Mult,
}
NAME_SWAP = {"min": "max", "max": "min", "any": "all", "all": "any"}
SYMBOL = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+",
    ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.Pow: "**", ast.And: "and", ast.Or: "or",
}
NO_MUTATE = "# no mutate"


@dataclass(frozen=True)
class Mutant:
    """Replace ``source[start:end]`` (character offsets) by ``text``."""

    index: int
    line: int  # 1-based line of the segment's start
    scope: str  # the enclosing class/function, e.g. "ActorState._progress" ("" at top level)
    start: int
    end: int
    text: str
    what: str  # e.g. "'<' -> '<='"

    def apply(self, source: str) -> str:
        return source[:self.start] + self.text + source[self.end:]


def mutants(source: str) -> list[Mutant]:
    """Every mutant of ``source``, in source order, each one compilable."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    found: list[Mutant] = []
    seen: set[tuple[int, int, str]] = set()
    for node, new, what, scope in _Walker().walk(tree):
        line = node.lineno
        if lines[line - 1].rstrip().endswith(NO_MUTATE):
            continue
        start = _offset(lines, offsets, node.lineno, node.col_offset)
        end = _offset(lines, offsets, node.end_lineno, node.end_col_offset)
        text = new if isinstance(new, str) else ast.unparse(new)
        if isinstance(new, ast.expr) and not isinstance(new, (ast.Name, ast.Constant)):
            text = f"({text})"
        key = (start, end, text)
        if key in seen or source[start:end] == text:
            continue
        seen.add(key)
        m = Mutant(len(found), line, scope, start, end, text, what)
        try:
            compile(m.apply(source), "<mutant>", "exec")
        except SyntaxError:
            continue
        found.append(m)
    return found


def _offset(lines: list[str], offsets: list[int], lineno: int, col: int) -> int:
    """Character offset of a (line, utf-8 byte column) AST position."""
    line = lines[lineno - 1]
    return offsets[lineno - 1] + len(line.encode()[:col].decode(errors="replace"))


Found = Iterator[tuple[ast.AST, "ast.AST | str", str, str]]


class _Walker:
    """Yields (node to replace, replacement node or text, description, scope)."""

    def walk(self, tree: ast.AST) -> Found:
        yield from self._visit(tree, skip=False, scope="")

    def _visit(self, node: ast.AST, skip: bool, scope: str) -> Found:
        if not skip:
            for old, new, what in self._mutate(node):
                yield old, new, what, scope
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = f"{scope}.{node.name}" if scope else node.name
        for field, value in ast.iter_fields(node):
            child_skip = skip or self._skip_field(node, field)
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    yield from self._visit(child, child_skip or self._skip_node(child), scope)

    @staticmethod
    def _skip_field(node: ast.AST, field: str) -> bool:
        if field in ("annotation", "returns", "decorator_list", "type_comment"):
            return True
        if isinstance(node, ast.Raise) and field in ("exc", "cause"):
            return True
        if isinstance(node, ast.Call) and field == "func":
            return True  # a call's callee (min/max are swapped at the Call)
        return False

    @staticmethod
    def _skip_node(node: ast.AST) -> bool:
        if isinstance(node, (ast.JoinedStr, ast.Assert, ast.Import, ast.ImportFrom)):
            return True
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return True
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            return True
        return False

    def _mutate(self, node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST | str, str]]:
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                swap = COMPARE_SWAP.get(type(op))
                if swap is not None:
                    new = copy.deepcopy(node)
                    new.ops[i] = swap()
                    yield node, new, f"'{SYMBOL[type(op)]}' -> '{SYMBOL[swap]}'"
        elif isinstance(node, ast.BinOp):
            swap = BINOP_SWAP.get(type(node.op))
            if swap is not None and not _is_string_format(node):
                new = copy.deepcopy(node)
                new.op = swap()
                yield node, new, f"'{SYMBOL[type(node.op)]}' -> '{SYMBOL[swap]}'"
        elif isinstance(node, ast.BoolOp):
            other = ast.Or if isinstance(node.op, ast.And) else ast.And
            new = copy.deepcopy(node)
            new.op = other()
            yield node, new, f"'{SYMBOL[type(node.op)]}' -> '{SYMBOL[other]}'"
            for i in range(len(node.values)):
                rest = [copy.deepcopy(v) for j, v in enumerate(node.values) if j != i]
                new_node = rest[0] if len(rest) == 1 else ast.BoolOp(node.op, rest)
                yield node, new_node, f"operand {i + 1} of '{SYMBOL[type(node.op)]}' dropped"
        elif isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                yield node, copy.deepcopy(node.operand), "'not' dropped"
            elif isinstance(node.op, ast.USub) and not isinstance(node.operand, ast.Constant):
                yield node, copy.deepcopy(node.operand), "unary '-' dropped"
        elif isinstance(node, ast.Constant):
            yield from self._constant(node)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in NAME_SWAP:
                new = copy.deepcopy(node)
                assert isinstance(new.func, ast.Name)
                new.func.id = NAME_SWAP[node.func.id]
                yield node, new, f"{node.func.id}() -> {new.func.id}()"
        elif isinstance(node, ast.AugAssign):
            swap = BINOP_SWAP.get(type(node.op))
            if swap is not None:
                new = copy.deepcopy(node)
                new.op = swap()
                yield node, new, f"'{SYMBOL[type(node.op)]}=' -> '{SYMBOL[swap]}='"
            yield node, "pass", "statement removed"
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            test = node.test
            if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)) and \
                    not isinstance(test, ast.Compare) and not _is_type_checking(test):
                yield test, ast.UnaryOp(ast.Not(), copy.deepcopy(test)), "condition negated"
        if isinstance(node, ast.comprehension):
            for cond in node.ifs:
                if not isinstance(cond, (ast.Compare, ast.BoolOp, ast.UnaryOp)):
                    yield cond, ast.UnaryOp(ast.Not(), copy.deepcopy(cond)), "filter negated"
        if isinstance(node, ast.stmt):
            yield from self._remove(node)

    @staticmethod
    def _constant(node: ast.Constant) -> Iterator[tuple[ast.AST, ast.AST | str, str]]:
        v = node.value
        if isinstance(v, bool):
            yield node, ast.Constant(not v), f"{v} -> {not v}"
        elif isinstance(v, int):
            new = 0 if v == 1 else v + 1
            yield node, ast.Constant(new), f"{v} -> {new}"

    @staticmethod
    def _remove(node: ast.stmt) -> Iterator[tuple[ast.AST, ast.AST | str, str]]:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            yield node, "pass", "statement removed"
        elif isinstance(node, ast.Assign) and all(
                isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets):
            yield node, "pass", "statement removed"
        elif isinstance(node, ast.Raise):
            yield node, "pass", "raise removed"
        elif isinstance(node, ast.Break):
            yield node, "continue", "break -> continue"
        elif isinstance(node, ast.Continue):
            yield node, "break", "continue -> break"


def _is_type_checking(test: ast.AST) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _is_string_format(node: ast.BinOp) -> bool:
    """``"..." % args`` and string concatenation: message text, not logic."""
    return isinstance(node.left, (ast.Constant, ast.JoinedStr)) and isinstance(
        getattr(node.left, "value", ""), str)
