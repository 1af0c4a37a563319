"""The one-line bugs issue 20 seeded by hand into copies of ``src/``, and the tests that
must catch each: ``python tools/mutate.py --seeded`` plants every one (a text replacement
that must match exactly once), runs its tests and says which test failed first.  When a
line here no longer matches the source (the code moved on), the run says so: rewrite the
bug against the new line, do not drop it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Seeded:
    name: str
    module: str  # relative to src/actorflow
    old: str  # must occur exactly once in the module
    new: str
    tests: tuple[str, ...]


SEEDED = [
    Seeded("protocol/state.py: one ACK frees the regst for every consumer",
           "protocol/state.py",
           "        mask = p.held[slot] & ~bit\n",
           "        mask = 0\n",
           ("tests/protocol",)),
    Seeded("sbp_geometry.piece_box with ceiling splits",
           "sbp_geometry.py",
           "        box[axis] = (b[i], b[i + 1])\n",
           "        box[axis] = (-(-shape[axis] * i // p), -(-shape[axis] * (i + 1) // p))\n",
           ("tests/test_sbp_geometry.py", "tests/plan/test_boxing_geometry.py",
            "tests/collective/test_boxing.py")),
    Seeded("the consistency check's comparison ignores the last element",
           "collective/consistency.py",
           "    differ = np.flatnonzero(_element_bytes(left) != _element_bytes(mine))\n",
           "    differ = np.flatnonzero(_element_bytes(left)[:-1] != _element_bytes(mine)[:-1])\n",
           ("tests/collective/test_consistency.py",)),
    Seeded("softmax without subtracting the max ([1000, 0] -> NaN)",
           "kernels/ops/linalg.py",
           "    xp.subtract(x, x.max(axis=axis, keepdims=True), out=out)\n",
           "    xp.subtract(x, 0, out=out, casting='unsafe')\n",
           ("tests/kernels",)),
    Seeded("the inbound check stops comparing a frame's dtype with the receive buffer",
           "actors/inbound.py",
           "                if tuple(m[2]) != arr.shape or dt != arr.dtype:\n",
           "                if tuple(m[2]) != arr.shape:\n",
           ("tests/actors/test_inbound.py",)),
    Seeded("the inbound check accepts a negative seq",
           "actors/inbound.py",
           "        if seq < 0:\n",
           "        if seq < -1:\n",
           ("tests/actors/test_inbound.py",)),
    Seeded("bias_add ignores axis",
           "kernels/ops/linalg.py",
           "    axis = int(attrs.get(\"axis\", -1)) % x.ndim\n",
           "    axis = -1 % x.ndim\n",
           ("tests/kernels",)),
    Seeded("the device stream launches every act under device 0",
           "streams/cuda.py",
           "        with self._device, self._stream:\n",
           "        with self.xp.cuda.Device(0), self._stream:\n",
           ("tests/gpu",)),
    Seeded("DeviceStream.completed() ignores the event",
           "streams/cuda.py",
           "        while pending and pending[0][0].done:  # in launch order\n",
           "        while pending:  # in launch order\n",
           ("tests/gpu",)),
]
