/* tracewrite.h -- a native unit writes its sealed trace chunks to the trace file itself.
 *
 * Each chunk is one msgpack map, the one trace/tracefile.py's TraceWriter.write_packed
 * writes, byte for byte (tests compare with msgpack.packb):
 *
 *     {"unit": [machine, thrd], "packed": <bin: the int64 words>,
 *      "cmds": [[word, command name, argument or nil], ...]}
 *
 * written with one writev() (head, words, command list) on the unit's own duplicate of the
 * trace file's descriptor, which is opened O_APPEND: the kernel appends each write whole, so
 * the Python writer's maps and every unit's chunks never interleave.  No Python, no GIL,
 * no copy of the words: the ~1.2 us per piece that bytes + msgpack + a buffered file cost
 * on empty kernels.  `wmu` keeps one unit's chunks in order when the loop and a closing
 * client both write; the core's mutex `mu` is held only to detach and recycle chunks.
 * A failed write is kept in `werr` (later chunks are dropped; Python reports it).
 */
#ifndef AF_TRACEWRITE_H
#define AF_TRACEWRITE_H

#include <errno.h>
#include <pthread.h>
#include <sys/uio.h>

#include "tracebuf.h"

typedef struct af_mp {
    uint8_t *p;
    size_t n, cap;
} af_mp;

static int af_mp_room(af_mp *b, size_t more) {
    if (b->n + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more)
        cap *= 2;
    uint8_t *p = (uint8_t *)realloc(b->p, cap);
    if (p == NULL)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static void af_mp_be(af_mp *b, uint8_t tag, uint64_t v, int bytes) {
    b->p[b->n++] = tag;
    for (int i = bytes - 1; i >= 0; i--)
        b->p[b->n++] = (uint8_t)(v >> (8 * i));
}

/* msgpack's smallest form of an integer (what msgpack-python's packer writes). */
static int af_mp_int(af_mp *b, int64_t v) {
    if (af_mp_room(b, 9))
        return -1;
    if (v >= 0) {
        uint64_t u = (uint64_t)v;
        if (u < 128)
            b->p[b->n++] = (uint8_t)u;
        else if (u < 256)
            af_mp_be(b, 0xcc, u, 1);
        else if (u < 65536)
            af_mp_be(b, 0xcd, u, 2);
        else if (u < 4294967296ULL)
            af_mp_be(b, 0xce, u, 4);
        else
            af_mp_be(b, 0xcf, u, 8);
    } else if (v >= -32) {
        b->p[b->n++] = (uint8_t)(int8_t)v;
    } else if (v >= -128) {
        af_mp_be(b, 0xd0, (uint64_t)v, 1);
    } else if (v >= -32768) {
        af_mp_be(b, 0xd1, (uint64_t)v, 2);
    } else if (v >= -2147483648LL) {
        af_mp_be(b, 0xd2, (uint64_t)v, 4);
    } else {
        af_mp_be(b, 0xd3, (uint64_t)v, 8);
    }
    return 0;
}

static int af_mp_head(af_mp *b, uint8_t fix, uint8_t fixmax, uint8_t t8, uint8_t t16,
                      uint8_t t32, size_t n) {
    if (af_mp_room(b, 5))
        return -1;
    if (n < fixmax)
        b->p[b->n++] = (uint8_t)(fix | n);
    else if (t8 && n < 256)
        af_mp_be(b, t8, n, 1);
    else if (n < 65536)
        af_mp_be(b, t16, n, 2);
    else
        af_mp_be(b, t32, n, 4);
    return 0;
}

static int af_mp_str(af_mp *b, const char *s, size_t n) {
    if (af_mp_head(b, 0xa0, 32, 0xd9, 0xda, 0xdb, n) || af_mp_room(b, n))
        return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

static int af_mp_array(af_mp *b, size_t n) { return af_mp_head(b, 0x90, 16, 0, 0xdc, 0xdd, n); }

static int af_mp_bin(af_mp *b, size_t n) {
    /* bin has no fix form: bin8 below 256 */
    if (af_mp_room(b, 5))
        return -1;
    if (n < 256)
        af_mp_be(b, 0xc4, n, 1);
    else if (n < 65536)
        af_mp_be(b, 0xc5, n, 2);
    else
        af_mp_be(b, 0xc6, n, 4);
    return 0;
}

/* The map of chunk `c` around its words: `head` ends with the bin header, `tail` is "cmds". */
static int af_trace_encode(const af_trace *t, const af_chunk *c, af_mp *head, af_mp *tail) {
    char other[32];
    if (af_mp_room(head, 1))
        return -1;
    head->p[head->n++] = 0x83;
    if (af_mp_str(head, "unit", 4) || af_mp_array(head, 2) || af_mp_int(head, t->key[0]) ||
        af_mp_int(head, t->key[1]) || af_mp_str(head, "packed", 6) ||
        af_mp_bin(head, (size_t)c->nw * 8))
        return -1;
    if (af_mp_str(tail, "cmds", 4) || af_mp_array(tail, (size_t)c->ncmds))
        return -1;
    for (int32_t i = 0; i < c->ncmds; i++) {
        const af_cmdref *r = &c->cmds[i];
        const char *name = other;
        size_t len;
        if (r->cmd >= 0 && r->cmd < t->nnames) {
            name = t->names[r->cmd];
            len = strlen(name);
        } else {
            len = (size_t)snprintf(other, sizeof other, "#%lld", (long long)r->cmd);
        }
        if (af_mp_array(tail, 3) || af_mp_int(tail, r->word) || af_mp_str(tail, name, len))
            return -1;
        if (r->aux == -1) { /* NONE: no argument */
            if (af_mp_room(tail, 1))
                return -1;
            tail->p[tail->n++] = 0xc0;
        } else if (af_mp_int(tail, r->aux)) {
            return -1;
        }
    }
    return 0;
}

/* Write every byte of `iov` (a short write goes on where it stopped); 0 or errno. */
static int af_writev_all(int fd, struct iovec *iov, int n) {
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

static int af_trace_write_one(af_trace *t, const af_chunk *c) {
    af_mp head = {NULL, 0, 0}, tail = {NULL, 0, 0};
    int rc = ENOMEM;
    head.p = t->scratch; /* reuse one buffer: head at its start, the command list after */
    head.cap = t->scratch_cap;
    if (af_trace_encode(t, c, &head, &tail) == 0) {
        struct iovec iov[3] = {{head.p, head.n}, {c->w, (size_t)c->nw * 8}, {tail.p, tail.n}};
        rc = af_writev_all(t->fd, iov, 3);
    }
    t->scratch = head.p;
    t->scratch_cap = head.cap;
    free(tail.p);
    return rc;
}

/* Write the sealed chunks (and with `all` what the buffer holds) to the trace file.  Called
 * without `mu` held; takes `wmu` then `mu` briefly.  Returns the write error (0: none). */
static int af_trace_write(af_trace *t, pthread_mutex_t *mu, pthread_mutex_t *wmu, int all) {
    enum { BATCH = 16 };
    af_chunk batch[BATCH];
    int32_t n;
    pthread_mutex_lock(wmu);
    do {
        pthread_mutex_lock(mu);
        if (all && t->nw > 0 && af_trace_seal(t)) {
            pthread_mutex_unlock(mu);
            pthread_mutex_unlock(wmu);
            return ENOMEM;
        }
        all = 0; /* what the buffer held once: a loop still running goes on filling it */
        n = t->nsealed < BATCH ? t->nsealed : BATCH;
        memcpy(batch, t->sealed, (size_t)n * sizeof(af_chunk));
        memmove(t->sealed, t->sealed + n, (size_t)(t->nsealed - n) * sizeof(af_chunk));
        t->nsealed -= n;
        for (int32_t i = 0; i < n; i++)
            t->taken_words += batch[i].nw;
        pthread_mutex_unlock(mu);
        for (int32_t i = 0; i < n; i++) {
            if (t->werr == 0 && t->fd >= 0 && batch[i].nw > 0)
                t->werr = af_trace_write_one(t, &batch[i]);
        }
        pthread_mutex_lock(mu);
        for (int32_t i = 0; i < n; i++) {
            if (batch[i].nw == 0) {
                af_trace_recycle(t, &batch[i]);
                continue;
            }
            af_trace_recycle(t, &t->prev);
            t->prev = batch[i];
        }
        pthread_mutex_unlock(mu);
    } while (n == BATCH);
    int rc = t->werr;
    pthread_mutex_unlock(wmu);
    return rc;
}

#endif
