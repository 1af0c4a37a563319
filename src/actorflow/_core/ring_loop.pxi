# The native loop of a unit *process*: loop.pxi's loop whose source is the unit's rings.
#
#     while some actor of the unit is alive:
#         take the records its peer unit processes put in its rings, each checked in C
#             (ring_check.h; a refused one is dropped and counted, or fails an
#             authenticated run, through the shell)
#         then what Python put in the core's inbox (a landed remote READY, a fed piece)
#         busy with records for SOCKET_LOOK_NS? look at the socket without waiting, so a
#             steady stream on the rings never starves it (the node's STOP, other machines)
#         nothing? sleep, the GIL released, in one poll on the rings' eventfd and the unit's
#             socket (ring_zq_wait.h); the socket readable -> shell.pump() receives, checks
#             and lands what came, into the inbox; nothing within the wait -> shell.idle()
#         push, carry out (loop.pxi's carry: records for a peer's tasks go into its ring,
#             with one doorbell at most; other machines and the node through shell.send)
#
# Python flushes what it holds (coalesced sends to other machines) before the loop sleeps.

from actorflow._core._rings cimport RingCheck, RingInbox, RingOutlet
from actorflow._core cimport _rings as R
from actorflow._core cimport _zq as Z

cdef enum:
    _RING_TAKE = 256  # records taken from the rings at once
    _SOCKET_LOOK_NS = 200000  # a busy loop still looks at its socket this often (ns)


cdef class RingLinks:
    """A unit process's rings, for the native loop: its inbox, the outlet for every task of
    its peers, the checks its records pass, and the socket its one wait also polls."""

    cdef RingInbox inbox
    cdef RingCheck check
    cdef list keep       # outlets and the socket's owner, alive as long as this
    cdef int64_t *tasks
    cdef void **outlets
    cdef int32_t n
    cdef void *socks[1]
    cdef int nsocks
    cdef readonly int64_t dropped   # records refused

    def __cinit__(self):
        self.tasks = NULL
        self.outlets = NULL
        self.n = 0
        self.nsocks = 0

    def __init__(self, RingInbox inbox, RingCheck check, dict outlet_of, size_t socket,
                 object socket_owner, str libzmq):
        """``outlet_of``: task id -> the ``RingOutlet`` into the segment of the unit hosting
        it; ``socket``: the unit's inbox socket (a libzmq handle kept open by
        ``socket_owner``); ``libzmq``: where this module finds libzmq's functions."""
        cdef char err[512]
        if Z.zq_load(libzmq.encode(), err, sizeof(err)) != 0:
            raise ImportError(err.decode(errors="replace"))
        self.inbox = inbox
        self.check = check
        entries = sorted(outlet_of.items())
        self.keep = [o for _, o in entries] + [socket_owner]
        self.tasks = <int64_t *>zalloc(len(entries) + 1, sizeof(int64_t))
        self.outlets = <void **>zalloc(len(entries) + 1, sizeof(void *))
        cdef RingOutlet o
        for i, (task, out) in enumerate(entries):
            o = out
            self.tasks[i] = task
            self.outlets[i] = &o.c
        self.n = len(entries)
        if socket:
            self.socks[0] = <void *>socket
            self.nsocks = 1

    def __dealloc__(self):
        free(self.tasks)
        free(self.outlets)


cdef int take_rings(R.ring_inbox_t *inbox, R.ring_check_t *check, af_ring *batch,
                    R.af_msg *tmp, uint32_t *origins, char *why, size_t whylen,
                    int32_t *bad_ring, int32_t *taken, int64_t *dropped) except -1 nogil:
    """Move the checked records waiting in the rings into ``batch``; the first refused
    one's reason into ``why`` (``bad_ring`` its ring, -1: none).  Returns -1 on EPROTO."""
    cdef int64_t m = R.ring_inbox_take(inbox, tmp, _RING_TAKE, origins)
    cdef int64_t i
    cdef af_msg *slot
    taken[0] = 0
    if m < 0:
        return -1
    for i in range(m):
        if R.ring_check_record(check, &tmp[i], origins[i], why, whylen):
            dropped[0] += 1
            if bad_ring[0] < 0:
                bad_ring[0] = <int32_t>origins[i]
            continue
        slot = <af_msg *>af_ring_push(batch)
        if slot == NULL:
            with gil:
                raise MemoryError()
        memcpy(slot, &tmp[i], sizeof(af_msg))
        taken[0] += 1
    return 0


cdef int run_ring_loop(NativeUnitCore c, object shell, NativeRouter router,
                       RingLinks k) except -1:
    cdef af_ring batch
    cdef af_out work
    cdef int64_t timeout_ns = shell.wait_ns()
    cdef int64_t *done = NULL
    cdef int32_t done_cap = 64
    cdef int32_t n, got, bad
    cdef int rc = 0, e = 0, ready = 0, stop = 0, py_ran = 0, py_sent = 0
    cdef int64_t now, last_look = R.ring_now_ns()
    cdef af_router *r = &router.r
    cdef R.af_msg tmp[_RING_TAKE]
    cdef uint32_t origins[_RING_TAKE]
    cdef char why[256]
    cdef R.ring_inbox_t *inbox = &k.inbox.c
    cdef R.ring_check_t *check = &k.check.c
    memset(&work, 0, sizeof(af_out))
    af_ring_init(&batch, sizeof(af_msg))
    done = <int64_t *>zalloc(2 * done_cap, sizeof(int64_t))
    try:
        with nogil:
            while c.u.live > 0:
                batch.head = 0
                batch.len = 0
                bad = -1
                if take_rings(inbox, check, &batch, tmp, origins, why, sizeof(why), &bad, &got,
                              &k.dropped):
                    with gil:
                        k.inbox._protocol_error()
                if bad >= 0:
                    with gil:
                        shell.reject(why.decode(errors="replace"), check.writers[bad])
                n = got + af_inbox_take(&c.inbox, &batch, 0)
                if n == 0:
                    if c.inbox.stop:
                        break
                    if py_sent or py_ran:  # held (coalesced) sends go out before a sleep;
                        py_sent = 0        # a Python act may have batched output
                        py_ran = 0
                        with gil:
                            shell.flush()
                            timeout_ns = shell.wait_ns()
                    e = Z.ring_zq_wait(inbox, k.socks, k.nsocks,
                                       R.ring_now_ns() + timeout_ns, &ready)
                    last_look = R.ring_now_ns()
                    if e == 0 and (ready & Z.RING_ZQ_SOCKETS):
                        with gil:
                            shell.pump()
                    elif e == ETIMEDOUT:
                        with gil:
                            if shell.idle():
                                timeout_ns = shell.wait_ns()
                            else:
                                stop = 1
                        if stop:
                            break
                    elif e == EPROTO:
                        with gil:
                            k.inbox._protocol_error()
                    elif e != 0 and e != EINTR:
                        with gil:
                            shell.wait_failed(e)
                    continue
                now = R.ring_now_ns()
                if k.nsocks > 0 and now - last_look > _SOCKET_LOOK_NS:
                    last_look = now  # a deadline already past: a look, never a sleep
                    if Z.ring_zq_wait(inbox, k.socks, k.nsocks, 0, &ready) == 0 and (
                            ready & Z.RING_ZQ_SOCKETS):
                        with gil:
                            shell.pump()
                pthread_mutex_lock(&c.mu)
                c.u.out.n = 0
                rc = af_unit_push(&c.u, <af_msg *>batch.data, n)
                if rc == 0:
                    rc = take_out(c, &work)
                pthread_mutex_unlock(&c.mu)
                if rc:
                    with gil:
                        c._raise()
                carry(c, shell, r, &work, &done, &done_cap, &py_ran, &py_sent)
                if c.tr.nsealed:
                    trace_out(c, shell)
        if c.u.live == 0:
            shell.finish()
    finally:
        af_ring_free(&batch)
        free(work.a)
        free(done)
    return 0


def run_process(NativeUnitCore core, shell, NativeRouter router, RingLinks links,
                long long ring_timeout_ns):
    """Run ``core``'s unit, a unit process, over its rings (``ring_loop.pxi``) until every
    actor exited or ``shell.idle()`` says stop.  ``shell``: as ``NativeUnitCore.run``'s,
    plus ``pump()`` (take what came on the socket into the core's inbox), ``flush()``,
    ``reject(why, writer unit)``, ``ring_failed(msg, errno)``, ``wait_failed(errno)``."""
    core._mine()
    af_router_set_rings(&router.r, links.tasks, links.outlets, links.n, ring_timeout_ns)
    try:
        run_ring_loop(core, shell, router, links)
    finally:
        af_router_set_rings(&router.r, NULL, NULL, 0, 0)
