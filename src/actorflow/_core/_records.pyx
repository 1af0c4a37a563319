# cython: language_level=3
"""The fixed 64-byte message record (``record.h``) from Python: pack and unpack.

Used by tests and tools to see the exact bytes that the native loop, its inbox and the
shared-memory rings carry; the hot path never builds these one by one from Python.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.string cimport memcpy, memset

cdef extern from "record.h":
    ctypedef struct af_msg:
        int64_t src, dst, desc, piece, seq, msg_id, aux
        int32_t slot
        uint8_t type, cmd
        uint16_t flags

RECORD_SIZE = sizeof(af_msg)
FIELDS = ("type", "src", "dst", "regst_desc_id", "slot", "piece_id", "seq", "msg_id", "cmd",
          "aux")


def pack(fields) -> bytes:
    """Ten integers in ``Msg.header()`` order -> one 64-byte record."""
    cdef af_msg m
    t, src, dst, desc, slot, piece, seq, mid, cmd, aux = fields
    memset(&m, 0, sizeof(m))
    m.type, m.src, m.dst, m.desc, m.slot = t, src, dst, desc, slot
    m.piece, m.seq, m.msg_id, m.cmd, m.aux = piece, seq, mid, cmd, aux
    return (<char *>&m)[:sizeof(m)]


def unpack(const unsigned char[:] data) -> tuple:
    """One 64-byte record -> its ten integers in ``Msg.header()`` order."""
    cdef af_msg m
    if data.shape[0] != sizeof(af_msg):
        raise ValueError(f"a record is {sizeof(af_msg)} bytes, got {data.shape[0]}")
    memcpy(&m, &data[0], sizeof(m))
    return (m.type, m.src, m.dst, m.desc, m.slot, m.piece, m.seq, m.msg_id, m.cmd, m.aux)
