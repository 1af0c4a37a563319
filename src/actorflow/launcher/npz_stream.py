"""``--out FILE.npz`` written as output pieces arrive: memory stays flat however many pieces.

Each output key (``name``, or ``name.blob`` for outputs with several blobs: the keys
``save_outputs`` uses) gets a raw spill file next to ``FILE``, and one of its piece ids;
every batch of pieces is appended as it arrives (straight from the received frames, no
copy), so nothing in memory grows with the number of pieces.  ``close()`` then
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
    """One output key's spill files: its rows, and their piece ids (int64), so that what
    stays in memory does not grow with the number of pieces."""

    def __init__(self, path: Path, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        self.path = path
        self.ids_path = path.with_suffix(".ids")
        self.file: IO[bytes] = open(path, "wb")
        self.ids_file: IO[bytes] = open(self.ids_path, "wb")
        self.dtype = dtype
        self.shape = shape  # of one piece
        self.n = 0  # rows written
        self.last = -1  # the last piece id written
        self.ordered = True  # every id so far larger than the one before

    def append_ids(self, piece_ids: list[int]) -> None:
        ids = np.asarray(piece_ids, dtype=np.int64)
        if len(ids):
            if self.ordered and (ids[0] <= self.last or bool((np.diff(ids) <= 0).any())):
                self.ordered = False
            self.last = int(ids[-1])
        self.ids_file.write(ids.data)
        self.n += len(ids)

    def close_files(self) -> None:
        self.file.close()
        self.ids_file.close()


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
            part.append_ids(piece_ids)

    def close(self) -> Path:
        """Build the ``.npz`` from the spill files (in piece order) and remove them."""
        try:
            with zipfile.ZipFile(self.path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for key, part in self.parts.items():
                    part.close_files()
                    with zf.open(f"{key}.npy", "w", force_zip64=True) as f:
                        self._write_npy(f, part)
        except OSError as e:
            raise LaunchError(f"--out {self.path}: cannot write: {e.strerror or e}") from e
        finally:
            self.abort()
        return self.path

    @staticmethod
    def _write_npy(f: IO[bytes], part: _Part) -> None:
        n = part.n
        header = {"descr": np.lib.format.dtype_to_descr(part.dtype), "fortran_order": False,
                  "shape": (n, *part.shape)}
        np.lib.format.write_array_header_2_0(f, header)
        if n == 0 or part.ordered:
            with open(part.path, "rb") as src:  # already in piece order: a plain copy
                shutil.copyfileobj(src, f, _CHUNK)
            return
        rows = np.memmap(part.path, dtype=part.dtype, mode="r", shape=(n, *part.shape))
        ids = np.fromfile(part.ids_path, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        step = max(1, _CHUNK // max(1, rows[0].nbytes))
        for i in range(0, n, step):  # pieces that arrived out of order: reorder in chunks
            f.write(np.ascontiguousarray(rows[order[i:i + step]]).data)

    def abort(self) -> None:
        for part in self.parts.values():
            part.close_files()
        shutil.rmtree(self.tmp, ignore_errors=True)
