# The native unit loop: a thread unit's whole loop in C, the GIL released but to call Python.
#
#     while some actor of the unit is alive:
#         take every record waiting in the inbox (sleep, GIL released, until one comes)
#         push them to the core (the local queue runs inside it)
#         for each action: a message -> the inbox of its native unit (no GIL) or Python;
#             an act -> no-op / memcpy (no GIL) or its Python kernel (GIL);
#             an exit -> tell the runtime (GIL)
#         the finished acts back to the core; again while it returns actions
#
# It is protocol/unit_core.py's contract run by runtime.ThreadUnit.execute, with the same
# order of actions (tests run both).  The core's mutex is held only while the C core or the
# trace changes, never across a call into Python.


cdef class NativeRouter:
    """Task id -> the inbox of the native unit that hosts it in this process."""

    cdef af_router r
    cdef list cores  # keeps every inbox alive as long as the router

    def __cinit__(self):
        self.r.d = NULL
        self.r.n = 0

    def __init__(self, cores):
        self.cores = list(cores)
        entries = sorted((task, core) for core in self.cores for task in core.task_ids())
        self.r.d = <af_dest *>zalloc(len(entries), sizeof(af_dest))
        self.r.n = len(entries)
        for i, (task, core) in enumerate(entries):
            self.r.d[i].task = task
            self.r.d[i].inbox = &(<NativeUnitCore>core).inbox

    def __dealloc__(self):
        free(self.r.d)

    def lose_first(self, int type_, long long piece, long long dst=-2):
        """Fault injection (tests): the first message of ``type_`` for ``piece`` (to task
        ``dst``; -2: any) that a unit sends to another is lost (``take_loss`` says whether
        a given one is it)."""
        self.r.drop_type = type_
        self.r.drop_piece = piece
        self.r.drop_dst = dst
        self.r.drop_armed = 1

    def take_loss(self, msg):
        """True when ``msg`` is the message to lose (the Python units' path)."""
        cdef af_msg m
        to_record(msg, &m)
        return bool(af_router_drops(&self.r, &m))


cdef int take_out(NativeUnitCore c, af_out *work) except -1 nogil:
    """Copy the core's actions out (the next core call reuses its buffer) and record what it
    saw in the trace.  Called with the core's mutex held."""
    cdef int32_t n = c.u.out.n
    cdef af_action *x
    cdef af_action *grown
    if n > work.cap:
        grown = <af_action *>realloc(work.a, <size_t>n * sizeof(af_action))
        if grown == NULL:
            with gil:
                raise MemoryError()
        work.a = grown
        work.cap = n
    if n:
        memcpy(work.a, c.u.out.a, <size_t>n * sizeof(af_action))
    work.n = n
    c.u.out.n = 0
    return record_seen(c)


cdef int record_seen(NativeUnitCore c) except -1 nogil:
    """What the core saw (messages handed to actors, messages sent) into its trace."""
    cdef af_action *x
    if c.tr.mode == AF_TR_FLIGHT:
        for i in range(c.u.seen.n):
            x = &c.u.seen.a[i]
            if x.act != 2:  # received here, or sent to another unit
                af_flight(&c.tr, &x.msg, x.act == 0)
    elif c.tr.mode == AF_TR_TIMED:
        for i in range(c.u.seen.n):
            x = &c.u.seen.a[i]
            if af_trace_msg(&c.tr, AF_EV_RECV if x.act == 0 else AF_EV_SEND, &x.msg):
                with gil:
                    raise MemoryError()
    c.u.seen.n = 0
    return 0


cdef int trace_out(NativeUnitCore c, object shell) except -1 nogil:
    """Sealed trace chunks out: written here when the core has the trace file (no GIL),
    else handed to Python (``shell.flush_trace()``, which also reports a failed write)."""
    if c.tr.fd >= 0 and c.tr.werr == 0:
        if af_trace_write(&c.tr, &c.mu, &c.wmu, 0) == 0:
            return 0
    with gil:
        shell.flush_trace()
    return 0


cdef int carry(NativeUnitCore c, object shell, af_router *r, af_out *work,
               int64_t **done_p, int32_t *done_cap, int *py_ran,
               int *py_sent) except -1 nogil:
    """Carry out the actions in ``work``, hand the acts back, repeat until none is left."""
    cdef int32_t i, ndone
    cdef af_action *x
    cdef af_inbox *dest
    cdef void *outlet
    cdef af_actor *a
    cdef af_act *act
    cdef int started, rc, mode, tracing
    cdef int64_t *done
    while work.n:
        if work.n > done_cap[0]:  # at most one act per action
            done = <int64_t *>realloc(done_p[0], 2 * <size_t>work.n * sizeof(int64_t))
            if done == NULL:
                with gil:
                    raise MemoryError()
            done_p[0] = done
            done_cap[0] = work.n
        done = done_p[0]
        ndone = 0
        tracing = c.tr.mode == AF_TR_TIMED
        for i in range(work.n):
            x = &work.a[i]
            if x.kind == AF_A_MSG:
                if r.drop_armed and af_router_drops(r, &x.msg):
                    with gil:
                        shell.lost(c._msg(&x.msg))
                    continue
                dest = af_route_to(r, x.msg.dst)
                if dest != NULL:
                    if af_inbox_put(dest, &x.msg, 1):
                        with gil:
                            raise ProtocolError(f"{c.name}: the inbox of task {x.msg.dst}'s "
                                                "unit cannot take more messages")
                    continue
                outlet = af_route_ring(r, x.msg.dst)  # a peer unit process (ring_loop.pxi)
                if outlet != NULL:
                    rc = af_ring_put(r, outlet, &x.msg)
                    while rc == EINTR:
                        rc = af_ring_put(r, outlet, &x.msg)
                    if rc:
                        with gil:
                            shell.ring_failed(c._msg(&x.msg), rc)
                else:
                    py_sent[0] = 1
                    with gil:
                        shell.send(c._msg(&x.msg))
            elif x.kind == AF_A_ACT:
                a = &c.u.actors[x.actor]
                act = &a.pool[x.act]
                mode = c.plans[x.actor].mode
                if tracing:  # a no-op or a copy keeps the mutex from begin to end (no Python)
                    pthread_mutex_lock(&c.mu)
                    af_trace_begin(&c.tr, a.task_id, act)
                    if mode == AF_RUN_PY:
                        pthread_mutex_unlock(&c.mu)
                if mode == AF_RUN_COPY:
                    if af_run_copies(&c.plans[x.actor], act):
                        if tracing:
                            pthread_mutex_unlock(&c.mu)
                        with gil:
                            raise ProtocolError(f"{c.name}: act {act.act_id} of task "
                                                f"{a.task_id} does not read and write the "
                                                "regsts its copy plan names")
                elif mode == AF_RUN_PY:
                    py_ran[0] = 1
                    with gil:
                        c._run_py(x.actor, act)
                if tracing:
                    if mode == AF_RUN_PY:
                        pthread_mutex_lock(&c.mu)
                    af_trace_end(&c.tr, a.task_id, act.act_id, act.piece)
                    pthread_mutex_unlock(&c.mu)
                    if c.tr.nsealed:
                        trace_out(c, shell)
                done[2 * ndone] = a.task_id
                done[2 * ndone + 1] = act.act_id
                ndone += 1
            else:
                with gil:
                    shell.exited(c.u.actors[x.actor].task_id)
        # the acts are done (inline): their READYs/ACKs, then what the core still holds
        pthread_mutex_lock(&c.mu)
        started = 0
        rc = 0
        c.u.out.n = 0
        for i in range(ndone):
            rc = af_unit_done(&c.u, done[2 * i], done[2 * i + 1], &started)
            if rc:
                break
        if rc == 0:
            rc = af_unit_run(&c.u, started)
        if rc == 0:
            rc = take_out(c, work)
        pthread_mutex_unlock(&c.mu)
        if rc:
            with gil:
                c._raise()
        if tracing and c.tr.nsealed:
            trace_out(c, shell)
    return 0


cdef int run_loop(NativeUnitCore c, object shell, NativeRouter router) except -1:
    cdef af_ring batch
    cdef af_out work
    cdef int64_t timeout_ns = shell.wait_ns()
    cdef int64_t *done = NULL
    cdef int32_t done_cap = 64
    cdef int32_t n
    cdef int rc = 0
    cdef int stop = 0
    cdef int py_ran = 0
    cdef int py_sent = 0
    cdef af_router *r = &router.r
    memset(&work, 0, sizeof(af_out))
    af_ring_init(&batch, sizeof(af_msg))
    done = <int64_t *>zalloc(2 * done_cap, sizeof(int64_t))
    try:
        with nogil:
            while c.u.live > 0:
                batch.head = 0
                batch.len = 0
                if py_sent and not c.inbox.pending:  # held messages go out before a sleep
                    py_sent = 0
                    with gil:
                        shell.flush()
                n = af_inbox_take(&c.inbox, &batch, timeout_ns)
                if n == 0:
                    if c.inbox.stop:
                        break
                    with gil:
                        if shell.idle():
                            timeout_ns = shell.wait_ns()
                        else:
                            stop = 1
                    if stop:
                        break
                    continue
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
                if py_ran:
                    py_ran = 0
                    with gil:
                        timeout_ns = shell.wait_ns()  # a Python act may have batched output
        if py_sent:
            shell.flush()
        if c.u.live == 0:
            shell.finish()
    finally:
        af_ring_free(&batch)
        free(work.a)
        free(done)
    return 0
