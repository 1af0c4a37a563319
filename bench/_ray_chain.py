"""The echo chain of bench/e2e.py on Ray Compiled Graphs: the baseline of the issue's goals.

    python bench/_ray_chain.py STAGES SMALL LARGE   # prints one JSON object

``STAGES`` Ray actors each echo a 13-float64 (104-byte) numpy array; the driver feeds the
compiled graph and takes every result back (the delivery of flowlaunch's outputs).  Both
driving modes are timed, one request at a time (``sync``) and up to 8 in flight
(``pipelined``); the better one is Ray's number.  Steady state as e2e.py's:
``(LARGE - SMALL) / (wall(LARGE) - wall(SMALL))``.  Exits 3 when Ray is not installed.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    try:
        import numpy as np
        import ray
        from ray.dag import InputNode
    except ImportError as e:
        print(json.dumps({"error": f"ray is not installed: {e}"}))
        return 3
    stages, small, large = (int(a) for a in sys.argv[1:4])
    ray.init(num_cpus=stages + 2, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")

    @ray.remote
    class Stage:
        def echo(self, x):
            return x

    actors = [Stage.remote() for _ in range(stages)]
    with InputNode() as inp:
        node = inp
        for a in actors:
            node = a.echo.bind(node)
    dag = node.experimental_compile()
    x = np.ones(13)
    out = {}
    try:
        for mode in ("sync", "pipelined"):
            def run(n: int, mode: str = mode) -> float:
                t0 = time.perf_counter()
                refs = []
                for _ in range(n):
                    refs.append(dag.execute(x))
                    if len(refs) >= (1 if mode == "sync" else 8):
                        refs.pop(0).get()
                for r in refs:
                    r.get()
                return time.perf_counter() - t0

            run(min(small, 200))
            out[mode] = (large - small) / (run(large) - run(small))
    finally:
        dag.teardown()
        ray.shutdown()
    print(json.dumps({"pieces_per_second": max(out.values()), **out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
