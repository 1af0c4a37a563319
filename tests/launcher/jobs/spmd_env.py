"""SPMD test script: print the rank variables flowlaunch exported, as one JSON line."""

import json
import os
import signal
import sys
import time

keys = ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE"]
print("ENV " + json.dumps({k: os.environ.get(k) for k in keys} | {"argv": sys.argv[1:]}),
      flush=True)
if "--fail-rank" in sys.argv and os.environ["RANK"] == sys.argv[sys.argv.index("--fail-rank") + 1]:
    print("ValueError: rank failed on purpose", flush=True)
    sys.exit(7)
if "--wait-term" in sys.argv:
    marker = sys.argv[sys.argv.index("--wait-term") + 1]

    def on_term(signum, frame):
        with open(f"{marker}.{os.environ['RANK']}", "w") as f:
            f.write("SIGTERM")
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    print("waiting", flush=True)
    time.sleep(60)
