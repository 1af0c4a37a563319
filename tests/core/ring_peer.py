"""The other process of a ring test: attaches to segments the test made and plays one role.

    python ring_peer.py ROLE ARGS...

Roles (every wait bounded; prints one JSON line ``{"ready": pid}`` once attached):
  echo IN OUT N        read N records from segment IN, send each back on ring 0 of OUT
  pingpong IN OUT N    the C ping-pong loop (answering side) over the same pair
  send OUT RING N      send N numbered 64-byte records (the C stream loop) to ring RING of OUT
  drain IN N           read N numbered records slowly (a sleep every 64) and check the order
  hold OUT RING        send one record to ring RING of OUT, then wait to be killed
  read_hold IN         open IN's inbox, then wait to be killed (a reader that never reads)
  wait IN              wait 60 s for a record on IN; on Ctrl-C print "interrupted", exit 0
  send_full OUT RING   fill ring RING of OUT, then wait 60 s for room (Ctrl-C as above)
  ring_eventfd OUT RING N FD   send N records, one by one, to an eventfd segment (FD: the
                       reader's eventfd, inherited); waits for "next" on stdin between them
"""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import time

from actorflow._core import _rings

RECORD = 64


def ready() -> None:
    print(json.dumps({"ready": os.getpid()}), flush=True)


def record(i: int) -> bytes:
    return struct.pack("<q", i).ljust(RECORD, b"\0")


def main() -> int:
    # a process started with SIGINT ignored (a background job of a non-interactive shell,
    # as CI may run) inherits SIG_IGN: take Python's own handler back for the Ctrl-C roles
    signal.signal(signal.SIGINT, signal.default_int_handler)
    role, *args = sys.argv[1:]
    if role in ("echo", "pingpong"):
        seg_in = _rings.RingSegment.attach(args[0], record_bytes=RECORD)
        seg_out = _rings.RingSegment.attach(args[1], record_bytes=RECORD)
        inbox, outlet = seg_in.inbox(), seg_out.outlet(0)
        ready()
        n = int(args[2])
        if role == "pingpong":
            _rings.pingpong(inbox, outlet, n, False, 20.0)
            return 0
        for _ in range(n):
            for _, rec in inbox.recv(20.0, max_records=1):
                outlet.send(rec, 20.0)
        return 0
    if role == "send":
        seg = _rings.RingSegment.attach(args[0], record_bytes=RECORD)
        outlet = seg.outlet(int(args[1]))
        ready()
        _rings.stream_send(outlet, int(args[2]), 16, 20.0)
        return 0
    if role == "drain":
        inbox = _rings.RingSegment.attach(args[0], record_bytes=RECORD).inbox()
        ready()
        got = 0
        while got < int(args[1]):
            for _, rec in inbox.recv(20.0, max_records=1):
                (v,) = struct.unpack_from("<q", rec)
                if v != got:
                    print(f"record {got} arrived as {v}", file=sys.stderr)
                    return 1
                got += 1
                if got % 64 == 0:
                    time.sleep(0.001)
        return 0
    if role == "hold":
        outlet = _rings.RingSegment.attach(args[0]).outlet(int(args[1]))
        outlet.send(record(0), 5.0)
        ready()
        time.sleep(60)
        return 1
    if role == "read_hold":
        inbox = _rings.RingSegment.attach(args[0]).inbox()
        ready()
        time.sleep(60)
        inbox.close()
        return 1
    if role == "wait":
        inbox = _rings.RingSegment.attach(args[0]).inbox()
        ready()
        try:
            inbox.recv(60.0)
        except KeyboardInterrupt:
            print(json.dumps({"interrupted": True}), flush=True)
            return 0
        return 1
    if role == "send_full":
        outlet = _rings.RingSegment.attach(args[0]).outlet(int(args[1]))
        while outlet.try_send(record(0)):
            pass
        ready()
        try:
            outlet.send(record(1), 60.0)
        except KeyboardInterrupt:
            print(json.dumps({"interrupted": True}), flush=True)
            return 0
        return 1
    if role == "ring_eventfd":
        outlet = _rings.RingSegment.attach(args[0]).outlet(int(args[1]), eventfd=int(args[3]))
        ready()
        for i in range(int(args[2])):
            if sys.stdin.readline().strip() != "next":
                return 1
            outlet.send(record(i), 5.0)
            print(json.dumps({"sent": i, "wakes": outlet.wakes}), flush=True)
        return 0
    print(f"unknown role {role!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
