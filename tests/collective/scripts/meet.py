"""Set up the world group and report how it went (one JSON line)."""

import json

import actorflow as af

try:
    g = af.env.process_group
    g.barrier()
    print("MEET " + json.dumps({"ok": True, "rank": af.env.rank}), flush=True)
except af.errors.ActorflowError as e:
    print("MEET " + json.dumps({"ok": False, "rank": af.env.rank, "type": type(e).__name__,
                                "msg": str(e)}), flush=True)
    raise SystemExit(3) from None
