"""The largest numbers a plan may carry, each with the reason it exists.

Validation and the dry run must cost time and memory in proportion to the plan's size,
never to a number written inside it, so a number beyond these limits is refused with a
message naming the field and the limit instead of being believed.
"""

from __future__ import annotations

MAX_ID = 2**31 - 1  # task/regst desc ids: message ids are (task_id << 32) | n in 64 bits
MAX_REGISTER_NUM = 1 << 16  # regsts per desc: pipelining depth, far beyond any real use
MAX_RATE = 1 << 20  # acc_num / repeat_num
MAX_MACHINES = 1 << 16
MAX_DEVICES = 1 << 10  # devices per machine
MAX_THRD_ID = 2**31 - 1
MAX_DIMS = 32  # numpy allows 64; no op here needs more than a handful
MAX_ELEMENTS = 2**62  # elements in one blob: its byte count must fit in 64 bits
MAX_PIECES = 2**62  # piece ids travel as 64-bit ints
