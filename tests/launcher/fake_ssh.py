"""A stand-in for ``ssh`` in tests (no sshd here): runs the remote command on this host.

Records its argv (one JSON line per call) in $FAKE_SSH_LOG, skips ssh's options, then
runs ``sh -c REMOTE``.  With $FAKE_SSH_NETNS="addr=ns,addr=ns" a host address maps to a
network namespace, and the command runs inside it (``ip netns exec``): a "host" of its own.
With $FAKE_SSH_DETACH=1 the remote command runs in its own session behind a stdin pipe, as
under a real sshd: killing this process does not kill it, only closes its stdin.
With $FAKE_SSH_HOSTS_DIR=DIR each host has a temp and a shared-memory directory of its
own, as a real host has: the command runs with TMPDIR=DIR/<host>/tmp, in a private mount
namespace (``unshare -m``, root) where DIR/<host>/shm is mounted on /dev/shm.  What the
launcher cleans on its own host then cannot be what cleaned another host's.
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
argv = ["sh", "-c", remote]
if os.environ.get("FAKE_SSH_HOSTS_DIR"):
    tmp, shm = (os.path.join(os.environ["FAKE_SSH_HOSTS_DIR"], host, d) for d in ("tmp", "shm"))
    os.makedirs(tmp, exist_ok=True)
    os.makedirs(shm, exist_ok=True)
    os.environ["TMPDIR"] = tmp
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" /dev/shm && exec sh -c "$1"', shm, remote]
if host in netns:
    argv = ["ip", "netns", "exec", netns[host], *argv]
if not os.environ.get("FAKE_SSH_DETACH"):
    os.execvp(argv[0], argv)
# Like a real sshd: the remote command lives in its own session, and its stdin is a pipe
# that only this process writes, so it sees EOF exactly when this "connection" dies.
import subprocess  # noqa: E402
import threading  # noqa: E402

child = subprocess.Popen(argv, stdin=subprocess.PIPE, start_new_session=True)


def relay() -> None:
    try:
        for chunk in iter(lambda: os.read(0, 4096), b""):
            child.stdin.write(chunk)
            child.stdin.flush()
        child.stdin.close()
    except OSError:
        pass  # the remote command ended: its exit ends this "connection" too


# like ssh: the session ends when the remote command exits (or when this process dies)
threading.Thread(target=relay, daemon=True).start()
code = child.wait()
sys.exit(code if code >= 0 else 255)  # ssh: 255 when the remote command died by a signal
