"""A stand-in for ``ssh`` in tests (no sshd here): runs the remote command on this host.

Records its argv (one JSON line per call) in $FAKE_SSH_LOG, skips ssh's options, then
runs ``sh -c REMOTE``.  With $FAKE_SSH_NETNS="addr=ns,addr=ns" a host address maps to a
network namespace, and the command runs inside it (``ip netns exec``): a "host" of its own.
"""

import json
import os
import sys

args = sys.argv[1:]
if os.environ.get("FAKE_SSH_LOG"):
    with open(os.environ["FAKE_SSH_LOG"], "a") as f:
        f.write(json.dumps(args) + "\n")
i = 0
while i < len(args) and args[i].startswith("-"):
    i += 2 if args[i] in ("-o", "-p", "-i", "-l") else 1
host, remote = args[i], " ".join(args[i + 1:])
netns = dict(kv.split("=", 1) for kv in os.environ.get("FAKE_SSH_NETNS", "").split(",") if kv)
if host in netns:
    os.execvp("ip", ["ip", "netns", "exec", netns[host], "sh", "-c", remote])
os.execvp("sh", ["sh", "-c", remote])
