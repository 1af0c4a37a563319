"""BlobDesc: the shape and dtype of one blob, the one type op definitions and plans share.

It lives here, below both, so ``plan -> kernels`` stays one-way (``plan.model`` re-exports it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlobDesc:
    shape: tuple[int, ...]
    dtype: str

    def nbytes(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n * np.dtype(self.dtype).itemsize

    def to_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype}

    @classmethod
    def from_dict(cls, d: dict) -> BlobDesc:
        return cls(tuple(int(x) for x in d["shape"]), str(d["dtype"]))
