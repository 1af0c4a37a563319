# cython: language_level=3
"""C declarations of the libzmq driver headers (``zq_api.h``, ``zq_io.h``), for ``_zq.pyx``
and for the native unit loop."""

from libc.stdint cimport int32_t, int64_t, uint32_t


cdef extern from "zq_api.h" nogil:
    enum:
        ZQ_POLLIN
        ZQ_POLLOUT
        ZQ_ETERM
    ctypedef struct zq_msg_t:
        pass
    ctypedef struct zq_api_t:
        void *(*msg_data)(zq_msg_t *m)
        size_t (*msg_size)(const zq_msg_t *m)
        int (*msg_close)(zq_msg_t *m)
        const char *(*strerror)(int errnum)
        void (*version)(int *major, int *minor, int *patch)
        int loaded
        char libpath[512]
    zq_api_t ZQ
    int zq_load(const char *path, char *err, size_t errlen)

cdef extern from "zq_io.h" nogil:
    ctypedef struct zq_hold_t:
        pass
    ctypedef struct zq_frame_t:
        const void *data
        size_t len
        zq_hold_t *hold
    int zq_wait(void *sock, short events, int64_t deadline_ns)
    int zq_send_frames(void *sock, const zq_frame_t *frames, uint32_t n, int64_t deadline_ns,
                       uint32_t *sent)
    int zq_recv_frames(void *sock, zq_msg_t *msgs, uint32_t max, uint32_t *got,
                       int64_t deadline_ns)
    void zq_close_frames(zq_msg_t *msgs, uint32_t n)

cdef extern from "zq_hold.h" nogil:
    zq_hold_t *zq_hold_new()
    int32_t zq_hold_live(zq_hold_t *h)

from actorflow._core._rings cimport ring_inbox_t

cdef extern from "ring_zq_wait.h" nogil:
    enum:
        RING_ZQ_RINGS
        RING_ZQ_SOCKETS
        RING_ZQ_MAX_SOCKETS
    int ring_zq_wait(ring_inbox_t *inbox, void *const *socks, int nsocks, int64_t deadline_ns,
                     int *ready)
