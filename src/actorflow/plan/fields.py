"""Typed readers for plan documents: every field is checked before a Plan object exists.

A plan file is input from outside (hand-edited JSON, a file from another version, a
mutated copy), so ``from_dict`` never calls ``int()``/``str()`` on whatever it finds: a
field of the wrong type, a missing key or a short list raises ``PlanLoadError`` naming the
field's path (``tasks[3].produced['out'].register_num``) and what was expected.  Ranges
that are rules rather than types (``register_num >= 1``, limits) are ``Plan.validate``'s.
"""

from __future__ import annotations

from typing import Any

from actorflow.errors import PlanLoadError

INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # what msgpack and numpy can carry
MAX_DEPTH = 32  # nesting of attrs values (a JSON bomb of lists is refused, not recursed)

_REQUIRED = object()


def _name(v: Any) -> str:
    return type(v).__name__


def as_map(v: Any, where: str) -> dict:
    if not isinstance(v, dict):
        raise PlanLoadError(f"{where}: expected a map, got {_name(v)}")
    return v


def as_list(v: Any, where: str) -> list:
    if not isinstance(v, (list, tuple)):
        raise PlanLoadError(f"{where}: expected a list, got {_name(v)}")
    return list(v)


def as_int(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise PlanLoadError(f"{where}: expected an integer, got {_name(v)} {v!r:.40}")
    if not INT_MIN <= v <= INT_MAX:
        raise PlanLoadError(f"{where}: integer {v} does not fit in 64 bits")
    return v


def as_str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise PlanLoadError(f"{where}: expected a string, got {_name(v)}")
    return v


def as_bool(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise PlanLoadError(f"{where}: expected true/false, got {_name(v)}")
    return v


def _missing(key: str, where: str) -> PlanLoadError:
    return PlanLoadError(f"{where}: missing field '{key}'")


def get_int(d: dict, key: str, where: str, default: Any = _REQUIRED) -> Any:
    if key not in d:
        if default is _REQUIRED:
            raise _missing(key, where)
        return default
    return as_int(d[key], f"{where}.{key}")


def get_opt_int(d: dict, key: str, where: str) -> int | None:
    v = d.get(key)
    return None if v is None else as_int(v, f"{where}.{key}")


def get_str(d: dict, key: str, where: str, default: Any = _REQUIRED) -> Any:
    if key not in d:
        if default is _REQUIRED:
            raise _missing(key, where)
        return default
    return as_str(d[key], f"{where}.{key}")


def get_bool(d: dict, key: str, where: str, default: bool = False) -> bool:
    return as_bool(d[key], f"{where}.{key}") if key in d else default


def get_map(d: dict, key: str, where: str, required: bool = False) -> dict:
    if key not in d:
        if required:
            raise _missing(key, where)
        return {}
    return as_map(d[key], f"{where}.{key}")


def get_list(d: dict, key: str, where: str, required: bool = False) -> list:
    if key not in d:
        if required:
            raise _missing(key, where)
        return []
    return as_list(d[key], f"{where}.{key}")


def int_list(v: Any, where: str, length: int | None = None) -> list[int]:
    items = as_list(v, where)
    if length is not None and len(items) != length:
        raise PlanLoadError(f"{where}: expected a list of {length} integers, got {len(items)}")
    return [as_int(x, f"{where}[{i}]") for i, x in enumerate(items)]


def str_list(v: Any, where: str) -> list[str]:
    return [as_str(x, f"{where}[{i}]") for i, x in enumerate(as_list(v, where))]


def str_keys(d: dict, where: str) -> dict:
    """A map whose keys must be strings (names of blobs, regsts, args)."""
    for k in d:
        if not isinstance(k, str):
            raise PlanLoadError(f"{where}: key {k!r:.40} is a {_name(k)}, expected a string")
    return d


def plain(v: Any, where: str, depth: int = 0) -> Any:
    """Attrs values: plain data only (no bytes/ext types), bounded nesting, int64 ints."""
    if depth > MAX_DEPTH:
        raise PlanLoadError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return as_int(v, where)
    if isinstance(v, float):
        return v
    if isinstance(v, (list, tuple)):
        return [plain(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]
    if isinstance(v, dict):
        return {as_str(k, f"{where} key"): plain(x, f"{where}.{k}", depth + 1)
                for k, x in v.items()}
    raise PlanLoadError(f"{where}: {_name(v)} is not plain data (expected numbers, strings, "
                        "lists, maps)")
