"""The checkpoint format: one ``.npy`` file per device part of every variable + a manifest.

    ckpt/manifest.json          {"format": "actorflow-checkpoint", "version": 1,
                                 "variables": {name: {shape, dtype, sbp, placement, parts}}}
    ckpt/<name>/part<j>.npy     the region parts[j] = {file, begin, end} of the variable

No pickle anywhere (``np.save(allow_pickle=False)``, JSON manifest).  Reading assembles the
logical value from whatever parts were written, so a checkpoint saved on 4 machines loads
on 2 or 1 (or 3): each reader cuts its own region from the logical value.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from actorflow.errors import UsageError

FORMAT = "actorflow-checkpoint"
VERSION = 1
MANIFEST = "manifest.json"


def is_checkpoint(path: str | os.PathLike) -> bool:
    return (Path(path) / MANIFEST).is_file()


def write_checkpoint(directory: str | os.PathLike, variables: dict[str, dict[str, Any]]) -> Path:
    """Write ``variables``: name -> {value, sbp, placement, parts: [(begin, end), ...]}."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"format": FORMAT, "version": VERSION, "variables": {}}
    for name, v in sorted(variables.items()):
        value = np.ascontiguousarray(v["value"])
        (root / name).mkdir(exist_ok=True)
        parts: list[dict[str, Any]] = []
        seen: set[tuple] = set()
        for begin, end in v["parts"]:
            key = (tuple(begin), tuple(end))
            if key in seen:  # broadcast: every device holds the same region; write it once
                continue
            seen.add(key)
            rel = f"{name}/part{len(parts)}.npy"
            region = tuple(slice(b, e) for b, e in zip(begin, end))
            np.save(root / rel, value[region], allow_pickle=False)
            parts.append({"file": rel, "begin": list(begin), "end": list(end)})
        manifest["variables"][name] = {
            "shape": list(value.shape), "dtype": value.dtype.name, "sbp": v.get("sbp", "B"),
            "placement": v.get("placement", {}), "parts": parts}
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, root / MANIFEST)  # the manifest appears only once every part is written
    return root


def read_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    path = Path(directory) / MANIFEST
    try:
        m = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{directory}: not a checkpoint (no {MANIFEST})") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"{path}: unreadable checkpoint manifest: {e}") from e
    if m.get("format") != FORMAT or m.get("version") != VERSION:
        raise UsageError(f"{path}: format {m.get('format')!r} version {m.get('version')!r}; "
                         f"expected {FORMAT!r} version {VERSION}")
    return m


def read_variable(directory: str | os.PathLike, name: str,
                  shape: tuple[int, ...] | None = None, dtype: str | None = None) -> np.ndarray:
    """The logical value of variable ``name``, assembled from its parts."""
    m = read_manifest(directory)
    v = m["variables"].get(name)
    if v is None:
        raise UsageError(f"{directory}: checkpoint has no variable '{name}' (it has "
                         f"{sorted(m['variables'])})")
    want = tuple(v["shape"])
    if shape is not None and tuple(shape) != want:
        raise UsageError(f"{directory}: variable '{name}' has shape {want}, the job declares "
                         f"{tuple(shape)}")
    value = np.zeros(want, dtype=v["dtype"])
    covered = np.zeros(want, dtype=bool)
    for p in v["parts"]:
        region = tuple(slice(b, e) for b, e in zip(p["begin"], p["end"]))
        try:
            part = np.load(Path(directory) / p["file"], allow_pickle=False)
        except (OSError, ValueError) as e:
            raise UsageError(f"{directory}: part {p['file']} of '{name}': {e}") from e
        if part.shape != value[region].shape:
            raise UsageError(f"{directory}: part {p['file']} of '{name}' has shape "
                             f"{part.shape}, its region needs {value[region].shape}")
        value[region] = part
        covered[region] = True
    if not covered.all():
        raise UsageError(f"{directory}: the parts of '{name}' do not cover its shape {want}")
    return value.astype(dtype) if dtype is not None else value
