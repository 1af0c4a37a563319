"""The launcher's end of the output stream: batches of pieces straight from the workers.

Each worker sends its output actors' batches (``OUT`` messages: ``{"name", "pieces"}`` +
one frame per blob, shape ``(n, *blob)``) to this listener; the master is not on the
path.  Without ``--out`` the sink counts pieces and keeps none (memory stays flat however
long the run); with ``--out`` it appends each batch to the file as it arrives
(``npz_stream``); only a job file's ``check(outputs)`` hook makes it keep pieces, since the
hook needs them.

Flow control: the sink's socket and each worker's socket to it hold at most ``OUT_QUEUE``
batches; when both are full a worker's send waits (its output actors, then the pipeline,
slow down to the launcher's pace) instead of the batches piling up in memory.  A send that
waits ``OUT_SEND_TIMEOUT`` s fails the run naming the sink.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorflow.errors import MalformedMessage
from actorflow.launcher.npz_stream import NpzStream
from actorflow.launcher.wire import OUT, OUT_QUEUE
from actorflow.transport.comm import listen
from actorflow.transport.registry import tcp_address


class OutputSink:
    def __init__(self, host: str, out: str | None = None, keep: bool = False,
                 port: int = 0) -> None:
        self.inbox = listen(tcp_address(host, port), name="the launcher's output sink",
                            queue=OUT_QUEUE)
        self.address = self.inbox.address
        self.counts: dict[str, int] = {}
        self.writer = NpzStream(out) if out else None
        self.keep = keep
        self._kept: dict[str, list[tuple[int, Any]]] = {}
        self.ignored = 0

    def poll(self, timeout: float) -> int:
        """Take every batch that arrives within ``timeout`` s; returns pieces taken."""
        got = 0
        m = self._recv(timeout)
        while m is not None:
            got += self._take(m)
            m = self._recv(0)
        return got

    def _recv(self, timeout: float) -> Any:
        try:
            return self.inbox.recv(timeout)
        except MalformedMessage:
            self.ignored += 1  # a stranger's bytes: counted, the run goes on
            return None

    def _take(self, m: Any) -> int:
        body = m.body
        if m.kind != OUT or not isinstance(body, dict) or not m.metas:
            self.ignored += 1
            return 0
        name, ids = str(body["name"]), [int(p) for p in body["pieces"]]
        blobs = m.views()
        if any(a.shape[:1] != (len(ids),) for a in blobs.values()):
            self.ignored += 1
            return 0
        self.counts[name] = self.counts.get(name, 0) + len(ids)
        if self.writer is not None:
            self.writer.write(name, ids, blobs)
        if self.keep:
            kept = self._kept.setdefault(name, [])
            for i, p in enumerate(ids):
                piece = {k: np.array(a[i]) for k, a in blobs.items()}
                kept.append((p, next(iter(piece.values())) if len(piece) == 1 else piece))
        return len(ids)

    def outputs(self) -> dict[str, list[Any]]:
        """Kept pieces per output, in piece order (only with ``keep``)."""
        return {n: [v for _, v in sorted(ps, key=lambda x: x[0])] for n, ps in self._kept.items()}

    def close(self, ok: bool) -> None:
        """Write ``--out`` (when the run succeeded) and stop listening."""
        try:
            if self.writer is not None:
                if ok:
                    self.writer.close()
                else:
                    self.writer.abort()
        finally:
            self.inbox.close()
