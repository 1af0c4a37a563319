"""The checkpoint format: one ``.npy`` file per device part of every variable + a manifest.

The model-IO jobs write and read the parts on their devices (``kernels/ops/model_io.py``);
the session writes the manifest last.

    ckpt/manifest.json          {"format": "actorflow-checkpoint", "version": 1,
                                 "split_geometry": "first",
                                 "variables": {name: {shape, dtype, sbp, placement, parts}}}
    ckpt/<name>/part<j>.npy     the region parts[j] = {file, begin, end} of the variable

No pickle anywhere (``np.save(allow_pickle=False)``, JSON manifest).  Reading assembles the
logical value from whatever parts were written, so a checkpoint saved on 4 machines loads
on 2 or 1 (or 3): each reader cuts its own region from the logical value.

``split_geometry`` names the rule that cut split variables into parts (``sbp_geometry``):
``first`` (OneFlow's, extra elements on the first parts); manifests written before it have no
such field and used ``floor`` (extra elements on the last).  Reading checks the parts
against the rule their manifest names, then assembles by the regions they record, so old
checkpoints load into jobs laid out by the new rule.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from actorflow.errors import UsageError
from actorflow.sbp_geometry import GEOMETRIES, GEOMETRY, split_axis

FORMAT = "actorflow-checkpoint"
VERSION = 1
MANIFEST = "manifest.json"
PATH_BYTES = 4096  # a directory travels to the model-IO jobs' kernels as uint8[PATH_BYTES]:
# Linux's PATH_MAX, so every path the OS accepts fits


def encode_path(directory: str | os.PathLike) -> np.ndarray:
    """An absolute directory as a zero-padded uint8 array (the model-IO jobs' input)."""
    raw = os.fsencode(os.path.abspath(directory))
    if len(raw) >= PATH_BYTES:
        raise UsageError(f"checkpoint path {directory!s} is {len(raw)} bytes long; at most "
                         f"{PATH_BYTES - 1} are supported")
    out = np.zeros(PATH_BYTES, np.uint8)
    out[:len(raw)] = np.frombuffer(raw, np.uint8)
    return out


def decode_path(arr: Any) -> str:
    if not isinstance(arr, np.ndarray) and hasattr(arr, "get"):
        arr = arr.get()  # a device array: an explicit copy to the host (CuPy's rules)
    raw = bytes(np.asarray(arr, np.uint8).tobytes()).split(b"\0", 1)[0]
    return os.fsdecode(raw)


def write_part(directory: str | os.PathLike, rel: str, value: Any) -> None:
    """One device's part, written atomically (a reader never sees half a file)."""
    path = Path(directory) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        np.save(f, np.ascontiguousarray(value), allow_pickle=False)
    os.replace(tmp, path)


def write_manifest(directory: str | os.PathLike, variables: dict[str, dict[str, Any]]) -> Path:
    """The manifest for parts already written: name -> {shape, dtype, sbp, placement,
    parts: [{file, begin, end}]}.  Written last, so it names only finished parts."""
    root = Path(directory)
    manifest = {"format": FORMAT, "version": VERSION, "split_geometry": GEOMETRY,
                "variables": variables}
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, root / MANIFEST)
    return root


def read_region(directory: str | os.PathLike, name: str, begin: list[int], end: list[int],
                shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The region [begin, end) of variable ``name``, from the parts that overlap it (a
    checkpoint saved with any layout: this is where loading re-shards)."""
    m = read_manifest(directory)
    v = m["variables"].get(name)
    if v is None:
        raise UsageError(f"{directory}: checkpoint has no variable '{name}' (it has "
                         f"{sorted(m['variables'])})")
    if tuple(v["shape"]) != tuple(shape):
        raise UsageError(f"{directory}: variable '{name}' has shape {tuple(v['shape'])}, the "
                         f"job declares {tuple(shape)}")
    want = tuple(e - b for b, e in zip(begin, end))
    out = np.zeros(want, dtype=dtype)
    covered = np.zeros(want, dtype=bool)
    for p in v["parts"]:
        lo = [max(b, pb) for b, pb in zip(begin, p["begin"])]
        hi = [min(e, pe) for e, pe in zip(end, p["end"])]
        if any(a >= z for a, z in zip(lo, hi)):
            continue
        try:
            part = np.load(Path(directory) / p["file"], mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as e:
            raise UsageError(f"{directory}: part {p['file']} of '{name}': {e}") from e
        src = tuple(slice(a - pb, z - pb) for a, z, pb in zip(lo, hi, p["begin"]))
        dst = tuple(slice(a - b, z - b) for a, z, b in zip(lo, hi, begin))
        out[dst] = part[src]
        covered[dst] = True
    if not covered.all():
        raise UsageError(f"{directory}: the parts of '{name}' do not cover its region "
                         f"{list(begin)}..{list(end)}")
    return out


def is_checkpoint(path: str | os.PathLike) -> bool:
    return (Path(path) / MANIFEST).is_file()


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
    geometry = m.get("split_geometry", "floor")  # written before the field: the old rule
    if geometry not in GEOMETRIES:
        raise UsageError(f"{path}: unknown split_geometry {geometry!r}; known: "
                         f"{', '.join(sorted(GEOMETRIES))}")
    for name, v in m.get("variables", {}).items():
        _check_geometry(path, name, v, geometry)
    return m


def _check_geometry(path: Path, name: str, v: dict[str, Any], geometry: str) -> None:
    """The parts of a split variable must be the cut its manifest's rule gives."""
    axis = split_axis(str(v.get("sbp", "")))
    parts = v.get("parts") or []
    if axis is None or not parts:
        return
    try:
        n = int(v["shape"][axis])
        got = [(int(p["begin"][axis]), int(p["end"][axis])) for p in parts]
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise UsageError(f"{path}: variable '{name}' has malformed parts: {e}") from e
    b = GEOMETRIES[geometry](n, len(parts))
    want = [(b[i], b[i + 1]) for i in range(len(parts))]
    if got != want:
        raise UsageError(f"{path}: the parts of '{name}' cover {got} along axis {axis}, but "
                         f"the {geometry!r} split of {n} over {len(parts)} parts its manifest "
                         f"names gives {want}")


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
