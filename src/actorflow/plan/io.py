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
MAX_PLAN_BYTES = 512 << 20  # a plan is structure, not data: bigger is not a plan


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
    if "plan" not in doc:
        raise PlanLoadError(f"{source}: missing the 'plan' map")
    try:
        return Plan.from_dict(doc["plan"])
    except PlanLoadError as e:  # names the field; add the file
        raise PlanLoadError(f"{source}: {e}") from e
    except RecursionError as e:
        raise PlanLoadError(f"{source}: plan structure is nested too deeply") from e


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
        size = path.stat().st_size
        if size > MAX_PLAN_BYTES:
            raise PlanLoadError(f"{path}: plan file is {size} bytes; the limit is "
                                f"{MAX_PLAN_BYTES} (a plan holds no tensor data)")
        data = path.read_bytes()
    except OSError as e:
        raise PlanLoadError(f"{path}: cannot read plan file: {e.strerror or e}") from e
    if path.suffix == ".json":
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError) as e:
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
