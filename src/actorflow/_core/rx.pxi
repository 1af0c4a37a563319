# Actor messages from other machines taken straight to native units (the node's receiver).
#
# A node's receiver thread decodes each message of its data-plane socket; for thread units
# on the compiled core, ``NativeReceiver.take`` then checks every record of it in C
# (``rxcheck.h``: Inbound's rules), checks every blob frame against its receive slot (the
# names, dtype, shape and bytes ``Inbound._frames`` checks), copies the blobs into the slot
# and puts the records in their units' inboxes: no ``Msg``, no ``Message`` per entry, no
# numpy call.  All or nothing per message: one record or blob it does not take and the
# whole message goes the Python way (``Inbound.check`` + ``landing.land``), which drops,
# counts and reports what is malformed, and takes what is merely unusual (CMDs, feeds,
# Python units).


cdef int _int_field(object v, int64_t *out) except -1:
    """An exact int (not a bool, not a float) that fits 64 bits: 1, else 0."""
    if type(v) is not int:
        return 0
    try:
        out[0] = v
    except OverflowError:
        return 0
    return 1


cdef int _record_of(object h, af_msg *r) except -1:
    """A header list of ten ints as a record: 1, or 0 (not a plain header)."""
    cdef int64_t f[10]
    if type(h) is not list or len(<list>h) != 10:
        return 0
    for i in range(10):
        if not _int_field((<list>h)[i], &f[i]):
            return 0
    if not (0 <= f[0] <= 255 and 0 <= f[8] <= 255 and -1 <= f[4] <= 2147483647):
        return 0
    r.type = <uint8_t>f[0]
    r.src = f[1]
    r.dst = f[2]
    r.desc = f[3]
    r.slot = <int32_t>f[4]
    r.piece = f[5]
    r.seq = f[6]
    r.msg_id = f[7]
    r.cmd = <uint8_t>f[8]
    r.aux = f[9]
    r.flags = 0
    return 1


cdef class NativeReceiver:
    """Takes a node's incoming actor messages for its native units (see above)."""

    cdef af_rxplan p
    cdef list cores                # the units' cores (keep their inboxes alive)
    cdef dict slots                # desc -> per slot {name: (dtype str, shape, address, bytes)}
    cdef list keep                 # the receive arrays (their memory is written here)
    cdef af_msg *recs
    cdef int32_t caprecs
    cdef readonly long long taken  # messages taken here (benches and tests look)

    def __cinit__(self):
        memset(&self.p, 0, sizeof(af_rxplan))
        self.recs = NULL
        self.caprecs = 0

    def __init__(self, tasks, descs, hosted, memory):
        """``tasks``: every task id of the plan; ``descs``: {desc id: RegstDesc} this
        machine may receive for; ``hosted``: {task id: its native unit's core};
        ``memory``: {desc id: slots [{blob name: array}]} where remote READYs land."""
        tasks = sorted(set(int(t) for t in tasks))
        self.p.tasks = <int64_t *>zalloc(len(tasks) or 1, sizeof(int64_t))
        self.p.ntasks = len(tasks)
        for i, t in enumerate(tasks):
            self.p.tasks[i] = t
        ds = sorted(descs.items())
        self.p.descs = <af_rxdesc *>zalloc(len(ds) or 1, sizeof(af_rxdesc))
        self.p.ndescs = len(ds)
        for i, (k, d) in enumerate(ds):
            self.p.descs[i].id = k
            self.p.descs[i].producer = d.producer_task_id
            self.p.descs[i].register_num = d.register_num
            cons = list(d.consumer_task_ids)
            self.p.descs[i].consumers = <int64_t *>zalloc(len(cons) or 1, sizeof(int64_t))
            self.p.descs[i].nconsumers = len(cons)
            for j, c in enumerate(cons):
                self.p.descs[i].consumers[j] = c
        hs = sorted(hosted.items())
        self.p.hosted = <int64_t *>zalloc(len(hs) or 1, sizeof(int64_t))
        self.p.inbox = <af_inbox **>zalloc(len(hs) or 1, sizeof(af_inbox *))
        self.p.nhosted = len(hs)
        self.cores = []
        for i, (t, core) in enumerate(hs):
            self.p.hosted[i] = t
            self.p.inbox[i] = &(<NativeUnitCore>core).inbox
            self.cores.append(core)
        self.slots = {}
        self.keep = []
        for k, per_slot in memory.items():
            blobs = []
            for s in per_slot:
                entry = {}
                for name, arr in s.items():
                    if not (arr.flags.c_contiguous and arr.flags.writeable
                            and arr.dtype.kind in "biufc"):
                        entry = None  # landed by numpy (the Python way)
                        break
                    entry[name] = (arr.dtype.str, list(arr.shape),
                                   <size_t>arr.ctypes.data, <size_t>arr.nbytes)
                    self.keep.append(arr)
                blobs.append(entry)
            self.slots[k] = blobs

    def __dealloc__(self):
        af_rxplan_free(&self.p)
        free(self.recs)

    def take(self, int kind, body, metas, frames):
        """True when this message (``MSG`` 0 or ``BATCH`` 10, as decoded) was checked,
        landed and queued here; False: leave all of it to the Python receiver."""
        cdef list heads
        cdef list counts
        if kind == 0:
            heads = [body]
            counts = [len(frames)]
        elif kind == 10:
            if type(body) is not list:
                return False
            heads = []
            counts = []
            for e in <list>body:
                if type(e) is not list or len(<list>e) != 2 or type((<list>e)[1]) is not int:
                    return False
                heads.append((<list>e)[0])
                counts.append((<list>e)[1])
        else:
            return False
        cdef Py_ssize_t n = len(heads)
        if n == 0:
            return False
        if metas is None:
            metas = []
        if type(metas) is not list or len(<list>metas) != len(frames):
            return False
        if n > self.caprecs:
            grown = <af_msg *>realloc(self.recs, n * sizeof(af_msg))
            if grown == NULL:
                raise MemoryError()
            self.recs = grown
            self.caprecs = <int32_t>n
        cdef af_inbox **to = <af_inbox **>malloc(n * sizeof(af_inbox *))
        if to == NULL:
            raise MemoryError()
        cdef list copies = []  # (address, frame, bytes) to land once all is checked
        cdef Py_ssize_t b = 0, c
        try:
            for i in range(n):
                c = counts[i]
                if c < 0 or b + c > len(frames):
                    return False
                if not _record_of(heads[i], &self.recs[i]):
                    return False
                if af_rx_check(&self.p, &self.recs[i], <int32_t>c, &to[i]) == NULL:
                    return False
                if c and not self._blobs(&self.recs[i], metas, frames, b, c, copies):
                    return False
                b += c
            if b != len(frames):
                return False
            for addr, f, nbytes in copies:
                _land(addr, f, nbytes)
            i = 0
            while i < n:  # consecutive records for one unit go in one put
                c = 1
                while i + c < n and to[i + c] == to[i]:
                    c += 1
                if af_inbox_put(to[i], &self.recs[i], <int32_t>c):
                    raise ProtocolError("a unit's inbox cannot take more messages")
                i += c
            self.taken += 1
            return True
        finally:
            free(to)

    cdef int _blobs(self, af_msg *r, list metas, frames, Py_ssize_t b, Py_ssize_t c,
                    list copies) except -1:
        """The blob frames [b, b + c) are exactly what the receive slot of ``r`` holds."""
        per_slot = self.slots.get(r.desc)
        if per_slot is None or r.slot >= len(per_slot):
            return 0
        target = per_slot[r.slot]
        if target is None or len(target) != c:
            return 0
        seen = set()
        for k in range(b, b + c):
            m = metas[k]
            if type(m) is not list or len(<list>m) != 3:
                return 0
            name, dt, shape = m
            spec = target.get(name) if type(name) is str else None
            if spec is None or name in seen or type(dt) is not str or dt != spec[0]:
                return 0
            if type(shape) is not list or len(<list>shape) != len(<list>spec[1]):
                return 0
            for s in <list>shape:
                if type(s) is not int:  # (1.0 == 1 and True == 1: Inbound refuses both)
                    return 0
            if shape != spec[1]:
                return 0
            seen.add(name)
            f = frames[k]
            if _buffer_bytes(f) != <Py_ssize_t>spec[3]:
                return 0
            copies.append((spec[2], f, spec[3]))
        return 1


cdef Py_ssize_t _buffer_bytes(object frame) except -2:
    """Bytes of a frame (-1: not a buffer)."""
    cdef Py_buffer view
    try:
        PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE)
    except (TypeError, BufferError):
        return -1
    n = view.len
    PyBuffer_Release(&view)
    return n


cdef int _land(size_t addr, object frame, size_t nbytes) except -1:
    cdef Py_buffer view
    PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE)
    try:
        if <size_t>view.len != nbytes:
            raise ProtocolError(f"a frame of {view.len} bytes for a {nbytes}-byte blob")
        memcpy(<void *>addr, view.buf, nbytes)
    finally:
        PyBuffer_Release(&view)
    return 0
