# cython: language_level=3
"""C declarations of the ring headers and the wrapper classes, for ``_rings.pyx`` and for
the native unit loop (``cimport``: it takes ``RingInbox.c`` / ``RingOutlet.c`` and drives
them without Python)."""

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t


cdef extern from "ring_clock.h" nogil:
    int64_t ring_now_ns()
    int ring_usable_cpus()

cdef extern from "ring_owner.h" nogil:
    ctypedef struct ring_owner_t:
        int32_t pid
        uint32_t gen
    int ring_owner_init()
    void ring_owner_take(ring_owner_t *o)
    int ring_owner_here(const ring_owner_t *o)

cdef extern from "doorbell.h" nogil:
    enum:
        DOORBELL_FUTEX
        DOORBELL_EVENTFD

cdef extern from "ring.h" nogil:
    ctypedef struct ring_ctl_t:
        int32_t producer_pid
        int32_t consumer_pid
    ctypedef struct ring_producer_t:
        uint32_t capacity
        uint32_t record_bytes

cdef extern from "ring_segment.h" nogil:
    enum:
        RING_SEG_VERSION
        RING_MAX_RECORD
        RING_MAX_CAPACITY
    ctypedef struct ring_seg_t:
        unsigned char *base
        uint64_t bytes
        uint32_t record_bytes, capacity, nrings, doorbell_kind
    int ring_seg_create(ring_seg_t *s, const char *path, uint32_t nrings, uint32_t capacity,
                        uint32_t record_bytes, uint32_t doorbell_kind, char *err, size_t errlen)
    int ring_seg_attach(ring_seg_t *s, const char *path, uint32_t want_nrings,
                        uint32_t want_capacity, uint32_t want_record_bytes, char *err,
                        size_t errlen)
    void ring_seg_unmap(ring_seg_t *s)
    ring_ctl_t *ring_seg_ctl(const ring_seg_t *s, uint32_t i)
    int ring_pid_alive(int32_t pid)

cdef extern from "ring_spin.h" nogil:
    ctypedef struct ring_spin_t:
        int64_t max_ns
        int64_t cur_ns
        uint64_t hits, misses

cdef extern from "ring_inbox.h" nogil:
    ctypedef struct ring_inbox_t:
        ring_seg_t seg
        int efd
        uint32_t bad_ring
        ring_spin_t spin
        ring_owner_t owner
        uint64_t sleeps
    int ring_inbox_open(ring_inbox_t *inbox, const ring_seg_t *seg, int efd, int64_t spin_ns,
                        int procs, int32_t *holder)
    void ring_inbox_close(ring_inbox_t *inbox)
    int32_t ring_inbox_producer_pid(const ring_inbox_t *inbox, uint32_t i)
    int64_t ring_inbox_take(ring_inbox_t *inbox, void *out, uint32_t max, uint32_t *origins)
    int ring_inbox_arm(ring_inbox_t *inbox)
    void ring_inbox_disarm(ring_inbox_t *inbox)
    int ring_inbox_wait(ring_inbox_t *inbox, int64_t deadline_ns)

cdef extern from "ring_outlet.h" nogil:
    ctypedef struct ring_outlet_t:
        ring_producer_t ring
        uint32_t index
        ring_spin_t spin
        ring_owner_t owner
        uint64_t wakes, full_waits
    int ring_outlet_open(ring_outlet_t *o, const ring_seg_t *seg, uint32_t index, int efd,
                         int64_t spin_ns, int procs, int32_t *holder)
    void ring_outlet_close(ring_outlet_t *o)
    int32_t ring_outlet_consumer_pid(const ring_outlet_t *o)
    int64_t ring_outlet_push(ring_outlet_t *o, const void *records, uint32_t n)
    int ring_outlet_send(ring_outlet_t *o, const void *records, uint32_t n, int64_t deadline_ns,
                         uint32_t *sent)

cdef extern from "record.h" nogil:
    ctypedef struct af_msg:
        pass

cdef extern from "ring_check.h" nogil:
    ctypedef struct ring_desc_t:
        int64_t id
        int64_t producer
        int32_t register_num
        int32_t first, count
    ctypedef struct ring_check_t:
        const int64_t *tasks
        const int32_t *thrds
        int32_t ntasks
        const ring_desc_t *descs
        int32_t ndescs
        const int64_t *consumers
        int32_t me
        const int32_t *writers
        int32_t nwriters
    int ring_check_record(const ring_check_t *c, const af_msg *m, uint32_t ring, char *why,
                          size_t whylen)

cdef extern from "ring_bench.h" nogil:
    int ring_bench_pingpong(ring_inbox_t *inbox, ring_outlet_t *out, long n, int initiator,
                            int64_t timeout_ns, long *done, int *step)
    int ring_bench_send(ring_outlet_t *out, long n, int batch, int64_t timeout_ns, long *done)
    int ring_bench_recv(ring_inbox_t *inbox, long n, long skip, int64_t timeout_ns,
                        long *done, int64_t *t_first, int64_t *t_last)


cdef class RingSegment:
    cdef ring_seg_t seg
    cdef readonly str name
    cdef readonly bint created
    cdef ring_owner_t owner
    cdef int ends
    cdef bint closing
    cdef int _check(self) except -1
    cdef void _unmap_if_unused(self)


cdef class RingInbox:
    cdef RingSegment seg
    cdef ring_inbox_t c
    cdef bint is_open
    @staticmethod
    cdef RingInbox _open(RingSegment seg, int efd, double spin_us, int procs)
    cdef int _check(self) except -1
    cdef int _protocol_error(self) except -1
    cdef int _wait(self, double timeout) except -1


cdef class RingOutlet:
    cdef RingSegment seg
    cdef ring_outlet_t c
    cdef bint is_open
    @staticmethod
    cdef RingOutlet _open(RingSegment seg, int index, int efd, double spin_us, int procs)
    cdef int _check(self) except -1
    cdef Py_ssize_t _count(self, Py_ssize_t nbytes) except -1


cdef class RingCheck:
    cdef ring_check_t c
    cdef int64_t *tasks
    cdef int32_t *thrds
    cdef ring_desc_t *descs
    cdef int64_t *consumers
    cdef int32_t *writers
