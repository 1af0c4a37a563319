"""Output pieces at the end of a run: ``--out FILE.npz``, ``check()``.

``--out`` writes one array per output with the pieces stacked on axis 0 (key = output name;
``name.blob`` for outputs with several blobs), in ``np.savez`` format — no pickle.  A job file may
define ``check(outputs)``: it gets the list of pieces when the plan has one output (a dict of
lists otherwise) and returns the max error (float) or a bool; flowlaunch prints it and
fails the run when it is above ``tolerance`` or False.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from actorflow.errors import LaunchError

Outputs = dict[str, list[Any]]  # output name -> pieces (array, or dict of blob -> array)


def outputs_from_results(results: dict[str, dict[int, dict[str, np.ndarray]]]) -> Outputs:
    """The master's kept pieces (``{name: {piece: {blob: array}}}``) in piece order."""
    out: Outputs = {}
    for name, pieces in results.items():
        vals: list[Any] = []
        for _piece, arrays in sorted(pieces.items()):
            vals.append(next(iter(arrays.values())) if len(arrays) == 1 else arrays)
        out[name] = vals
    return out


def save_outputs(path: str | Path, outputs: Outputs) -> Path:
    arrays: dict[str, np.ndarray] = {}
    for name, pieces in outputs.items():
        if pieces and isinstance(pieces[0], dict):
            for blob in pieces[0]:
                arrays[f"{name}.{blob}"] = np.stack([p[blob] for p in pieces])
        elif pieces:
            arrays[name] = np.stack(pieces)
    path = Path(path)
    try:
        # what np.savez writes (one .npy per name in a zip), without its keyword arguments:
        # np.savez(f, **arrays) would take an output named "allow_pickle" as its option
        with zipfile.ZipFile(path, "w") as zf:
            for name, arr in arrays.items():
                with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, arr, allow_pickle=False)
    except OSError as e:
        raise LaunchError(f"--out {path}: cannot write: {e.strerror or e}") from e
    return path


def run_check(check: Callable[[Any], Any], outputs: Outputs,
              tolerance: float = 1e-4) -> tuple[bool, str]:
    """Call the job's ``check`` hook; (passed, one-line description)."""
    arg: Any = next(iter(outputs.values())) if len(outputs) == 1 else outputs
    try:
        value = check(arg)
    except Exception as e:
        return False, f"check failed: {type(e).__name__}: {e}"
    if isinstance(value, bool):
        return value, f"check: {'OK' if value else 'FAILED'}"
    try:
        err = float(value)
    except (TypeError, ValueError):
        return True, f"check returned {value!r}"
    ok = err <= tolerance
    return ok, f"check: max |actorflow - numpy| = {err:.2e} {'OK' if ok else 'FAILED'}"
