"""Plan files: msgpack on disk (``.plan``), JSON for people.  Never pickle.

The file is one msgpack map ``{"format": "actorflow-plan", "version": N, "plan": {...}}``;
the loader checks both keys before it reads anything else, so a file from another tool or
a future schema fails with a message naming the file and what was found.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgpack

from actorflow.errors import PlanLoadError
from actorflow.plan.model import SCHEMA_VERSION, Plan

FORMAT = "actorflow-plan"


def plan_to_bytes(plan: Plan) -> bytes:
    return msgpack.packb(
        {"format": FORMAT, "version": plan.version, "plan": plan.to_dict()}, use_bin_type=True
    )


def plan_from_bytes(data: bytes, source: str = "<bytes>") -> Plan:
    try:
        doc = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as e:  # msgpack raises several unrelated types
        raise PlanLoadError(f"{source}: not a plan file (msgpack decode failed: {e})") from e
    return _plan_from_doc(doc, source)


def _plan_from_doc(doc: Any, source: str) -> Plan:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise PlanLoadError(
            f"{source}: not an actorflow plan (expected a map with format '{FORMAT}')"
        )
    version = doc.get("version")
    if version != SCHEMA_VERSION:
        raise PlanLoadError(
            f"{source}: plan schema version {version!r} is not supported "
            f"(this actorflow reads version {SCHEMA_VERSION})"
        )
    try:
        return Plan.from_dict(doc["plan"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise PlanLoadError(f"{source}: plan structure is corrupt: {type(e).__name__}: {e}") from e


def save_plan(plan: Plan, path: str | os.PathLike) -> Path:
    """Write atomically (temp file + rename) so a crash never leaves half a plan."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(plan_to_bytes(plan))
    os.replace(tmp, path)
    return path


def load_plan(path: str | os.PathLike, validate: bool = True) -> Plan:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise PlanLoadError(f"{path}: cannot read plan file: {e.strerror or e}") from e
    if path.suffix == ".json":
        try:
            doc = json.loads(data)
        except ValueError as e:
            raise PlanLoadError(f"{path}: not valid JSON: {e}") from e
        plan = _plan_from_doc(doc, str(path))
    else:
        plan = plan_from_bytes(data, str(path))
    if validate:
        from actorflow.plan.validate import validate_plan

        validate_plan(plan, source=str(path))
    return plan


def plan_to_json(plan: Plan, indent: int | None = 1) -> str:
    return json.dumps(
        {"format": FORMAT, "version": plan.version, "plan": plan.to_dict()}, indent=indent
    )
