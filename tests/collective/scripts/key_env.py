"""What key this rank was handed (one JSON line), after meeting the others over it."""

import json
import os
import stat

import actorflow as af
from actorflow.transport.auth import current_key

af.env.process_group.barrier()  # the rendezvous and the mesh, under whatever key was given
path = os.environ.get("ACTORFLOW_CLUSTER_KEY", "")
modes = [stat.S_IMODE(os.stat(p).st_mode) for p in (path, os.path.dirname(path))] if path \
    else []
print("KEY " + json.dumps({"rank": af.env.rank, "path": path, "modes": modes,
                           "insecure": os.environ.get("ACTORFLOW_INSECURE"),
                           "keyed": current_key() is not None}), flush=True)
