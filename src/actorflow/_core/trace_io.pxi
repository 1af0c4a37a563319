# NativeUnitCore's trace (its methods call these): the trace file the loop writes sealed
# chunks to (tracewrite.h), the encoding of a chunk, and chunks taken to Python.


cdef bytes _chunk_bytes(const int64_t *w, int64_t nw):
    return (<const char *>w)[:nw * 8] if nw > 0 else b""


cdef list _chunk_cmds(const af_cmdref *c, int32_t n):
    return [[c[k].word, c[k].cmd, c[k].aux] for k in range(n)]


cdef int _trace_init(NativeUnitCore self, int mode, int32_t size, int64_t words,
                     bint tsc=False) except -1:
    with nogil:
        pthread_mutex_lock(&self.wmu)
    af_trace_free(&self.tr)
    rc = af_trace_init(&self.tr, mode, size, words)
    if rc == 0 and tsc:
        rc = af_trace_use_tsc(&self.tr)
    pthread_mutex_unlock(&self.wmu)
    if rc:
        raise MemoryError()
    self.u.trace = 1
    return 0


cdef tuple _peek(NativeUnitCore self, int64_t **w, int64_t *nw, af_cmdref **cmds,
                 int32_t *ncmds, bint stamps):
    """(bytes, commands) of a buffer of the trace, read under the core's mutex
    (``stamps``: the buffer being filled, whose TSC stamps a copy turns into ns)."""
    cdef bytearray copy
    cdef int64_t *cw
    self._lock()
    try:
        if not (stamps and self.tr.tsc) or nw[0] == 0:
            return _chunk_bytes(w[0], nw[0]), _chunk_cmds(cmds[0], ncmds[0])
        copy = bytearray(_chunk_bytes(w[0], nw[0]))
        cw = <int64_t *><char *>copy
        af_stamps_to_ns(&self.tr, cw, nw[0], af_anchor_now())
        return bytes(copy), _chunk_cmds(cmds[0], ncmds[0])
    finally:
        pthread_mutex_unlock(&self.mu)


cdef int _trace_to_file(NativeUnitCore self, int fd, long long machine, long long thrd,
                        names) except -1:
    if self.tr.mode != AF_TR_TIMED:
        raise ProtocolError(f"{self.name}: trace_to_file needs trace_timed first")
    encoded = [str(n).encode() for n in names]
    cdef char **table = <char **>zalloc(len(encoded) or 1, sizeof(char *))
    for i, b in enumerate(encoded):
        table[i] = <char *>malloc(len(b) + 1)
        if table[i] == NULL:
            for k in range(i):
                free(table[k])
            free(table)
            raise MemoryError()
        memcpy(table[i], <char *>b, len(b) + 1)
    dup_fd = os.dup(fd)
    with nogil:
        pthread_mutex_lock(&self.wmu)
    if self.tr.fd >= 0:
        os.close(self.tr.fd)
    if self.tr.names != NULL:
        for k in range(self.tr.nnames):
            free(self.tr.names[k])
        free(self.tr.names)
    self.tr.names = table
    self.tr.nnames = len(encoded)
    self.tr.key[0] = machine
    self.tr.key[1] = thrd
    self.tr.werr = 0
    self.tr.fd = dup_fd
    pthread_mutex_unlock(&self.wmu)
    return 0


cdef bytes _encode_chunk(NativeUnitCore self, bytes data, cmds):
    cdef af_chunk c
    cdef af_mp head
    cdef af_mp tail
    memset(&c, 0, sizeof(af_chunk))
    memset(&head, 0, sizeof(af_mp))
    memset(&tail, 0, sizeof(af_mp))
    c.nw = len(data) // 8
    c.ncmds = len(cmds)
    c.cmds = <af_cmdref *>zalloc(len(cmds) or 1, sizeof(af_cmdref))
    try:
        for i, (w, code, aux) in enumerate(cmds):
            c.cmds[i].word = w
            c.cmds[i].cmd = code
            c.cmds[i].aux = aux
        if af_trace_encode(&self.tr, &c, &head, &tail):
            raise MemoryError()
        return (<char *>head.p)[:head.n] + data[:c.nw * 8] + (<char *>tail.p)[:tail.n]
    finally:
        free(c.cmds)
        free(head.p)
        free(tail.p)


cdef list _take_trace(NativeUnitCore self):
    cdef af_chunk *c
    out = []
    self._lock()
    try:
        for i in range(self.tr.nsealed):
            c = &self.tr.sealed[i]
            out.append((_chunk_bytes(c.w, c.nw), _chunk_cmds(c.cmds, c.ncmds)))
            self.tr.taken_words += c.nw
            af_trace_recycle(&self.tr, c)
        self.tr.nsealed = 0
        if self.tr.nw:
            af_trace_settle(&self.tr)
            out.append((_chunk_bytes(self.tr.w, self.tr.nw),
                        _chunk_cmds(self.tr.cmds, self.tr.ncmds)))
        self.tr.taken_words += self.tr.nw
        self.tr.nw = 0
        self.tr.ncmds = 0
        return out
    finally:
        pthread_mutex_unlock(&self.mu)
