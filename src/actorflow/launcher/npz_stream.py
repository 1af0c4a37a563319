"""``--out FILE.npz`` written as output pieces arrive: memory stays flat however many pieces.

Each output key (``name``, or ``name.blob`` for outputs with several blobs: the keys
``save_outputs`` uses) gets a raw spill file next to ``FILE``; every batch of pieces is
appended as it arrives (straight from the received frames, no copy).  ``close()`` then
builds the ``.npz`` (a zip of ``.npy`` files, what ``np.load`` reads; no pickle) by
streaming each spill file into the archive behind its ``.npy`` header, in piece order, and
removes the spill files.  ``abort()`` removes them without writing ``FILE``.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import IO

import numpy as np

from actorflow.errors import LaunchError

_CHUNK = 8 << 20


class _Part:
    def __init__(self, path: Path, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        self.path = path
        self.file: IO[bytes] = open(path, "wb")
        self.dtype = dtype
        self.shape = shape  # of one piece
        self.ids: list[int] = []


class NpzStream:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.tmp = Path(tempfile.mkdtemp(prefix=".actorflow-out-", dir=self.path.parent))
        except OSError as e:
            raise LaunchError(f"--out {path}: cannot write next to it: {e.strerror or e}") from e
        self.parts: dict[str, _Part] = {}

    def write(self, name: str, piece_ids: list[int], blobs: dict[str, np.ndarray]) -> None:
        """Append one batch (``blobs``: arrays of shape ``(len(piece_ids), *piece shape)``)."""
        for blob, arr in blobs.items():
            key = name if len(blobs) == 1 else f"{name}.{blob}"
            part = self.parts.get(key)
            if part is None:
                part = self.parts[key] = _Part(self.tmp / f"{len(self.parts)}.raw", arr.dtype,
                                               tuple(arr.shape[1:]))
            if arr.dtype != part.dtype or tuple(arr.shape[1:]) != part.shape:
                raise LaunchError(f"--out: output '{key}' changed from {part.shape} "
                                  f"{part.dtype} to {arr.shape[1:]} {arr.dtype} mid-run")
            try:
                part.file.write(np.ascontiguousarray(arr).data)
            except OSError as e:
                raise LaunchError(f"--out {self.path}: cannot write: {e.strerror or e}") from e
            part.ids.extend(int(p) for p in piece_ids)

    def close(self) -> Path:
        """Build the ``.npz`` from the spill files (in piece order) and remove them."""
        try:
            with zipfile.ZipFile(self.path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for key, part in self.parts.items():
                    part.file.close()
                    with zf.open(f"{key}.npy", "w", force_zip64=True) as f:
                        self._write_npy(f, part)
        except OSError as e:
            raise LaunchError(f"--out {self.path}: cannot write: {e.strerror or e}") from e
        finally:
            self.abort()
        return self.path

    @staticmethod
    def _write_npy(f: IO[bytes], part: _Part) -> None:
        n = len(part.ids)
        header = {"descr": np.lib.format.dtype_to_descr(part.dtype), "fortran_order": False,
                  "shape": (n, *part.shape)}
        np.lib.format.write_array_header_2_0(f, header)
        ids = np.asarray(part.ids, dtype=np.int64)
        if n == 0 or bool((np.diff(ids) > 0).all()):
            with open(part.path, "rb") as src:  # already in piece order: a plain copy
                shutil.copyfileobj(src, f, _CHUNK)
            return
        rows = np.memmap(part.path, dtype=part.dtype, mode="r", shape=(n, *part.shape))
        order = np.argsort(ids, kind="stable")
        step = max(1, _CHUNK // max(1, rows[0].nbytes))
        for i in range(0, n, step):  # pieces that arrived out of order: reorder in chunks
            f.write(np.ascontiguousarray(rows[order[i:i + step]]).data)

    def abort(self) -> None:
        for part in self.parts.values():
            part.file.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
