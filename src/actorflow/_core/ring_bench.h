/* Floor loops for the transport bench: a ping-pong and a numbered stream over rings, in C
 * so the bench measures the rings and not the caller.  Resumable: each returns EINTR or
 * ETIMEDOUT with ``*done`` set, and the caller may call again to go on.  The clock is read
 * only before a wait that may sleep, as a unit loop would (a deadline costs a clock read). */
#ifndef AF_RING_BENCH_H
#define AF_RING_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>

#include "ring_inbox.h"
#include "ring_outlet.h"

#define RING_BENCH_MAX_RECORD 4096

static inline int ring_bench_send_one(ring_outlet_t *out, const void *rec, int64_t timeout_ns) {
    int64_t m = ring_outlet_push(out, rec, 1);
    if (m == 1) return 0;
    if (m < 0) return EPROTO;
    uint32_t sent;
    return ring_outlet_send(out, rec, 1, ring_now_ns() + timeout_ns, &sent);
}

/* ``n`` round trips of one record; the initiator sends first, the other side answers each
 * record with one of its own.  Every wait gets ``timeout_ns``.  ``*step``: the half of
 * round ``*done`` already made (the initiator's record is out / the answerer has taken it),
 * so a resumed call neither sends twice nor loses a record; start with 0. */
static inline int ring_bench_take_one(ring_inbox_t *in, void *rec, int64_t timeout_ns) {
    int64_t m = ring_inbox_take(in, rec, 1, NULL);
    if (m == 0) {
        int e = ring_inbox_wait(in, ring_now_ns() + timeout_ns);
        if (e) return e;
        m = ring_inbox_take(in, rec, 1, NULL);
    }
    return m < 0 ? EPROTO : (m == 0 ? EAGAIN : 0);
}

static inline int ring_bench_pingpong(ring_inbox_t *in, ring_outlet_t *out, long n, int initiator,
                                      int64_t timeout_ns, long *done, int *step) {
    unsigned char rec[RING_BENCH_MAX_RECORD];
    memset(rec, 0, sizeof rec);
    int e;
    while (*done < n) {
        memcpy(rec, done, sizeof *done);
        if (!*step) {
            e = initiator ? ring_bench_send_one(out, rec, timeout_ns)
                          : ring_bench_take_one(in, rec, timeout_ns);
            if (e == EAGAIN) continue;
            if (e) return e;
            *step = 1;
            memcpy(rec, done, sizeof *done);
        }
        e = initiator ? ring_bench_take_one(in, rec, timeout_ns)
                      : ring_bench_send_one(out, rec, timeout_ns);
        if (e == EAGAIN) continue;
        if (e) return e;
        *step = 0;
        (*done)++;
    }
    return 0;
}

/* Send ``n`` records numbered from *done, ``batch`` per push (1 = one doorbell check each). */
static inline int ring_bench_send(ring_outlet_t *out, long n, int batch, int64_t timeout_ns,
                                  long *done) {
    unsigned char recs[RING_BENCH_MAX_RECORD];
    uint32_t rb = out->ring.record_bytes;
    uint32_t per = (uint32_t)(sizeof recs / rb);
    if (batch > 0 && (uint32_t)batch < per) per = (uint32_t)batch;
    memset(recs, 0, sizeof recs);
    while (*done < n) {
        uint32_t k = (uint32_t)((n - *done) < per ? (n - *done) : per);
        for (uint32_t j = 0; j < k; j++) {
            long v = *done + j;
            memcpy(recs + (size_t)j * rb, &v, sizeof v);
        }
        int64_t m = ring_outlet_push(out, recs, k);
        if (m < 0) return EPROTO;
        *done += m;
        if ((uint32_t)m == k) continue;
        uint32_t sent = 0;
        int e = ring_outlet_send(out, recs + (size_t)m * rb, k - (uint32_t)m,
                                 ring_now_ns() + timeout_ns, &sent);
        *done += sent;
        if (e) return e;
    }
    return 0;
}

/* Receive ``n`` records, checking they arrive numbered in order from 0 (EPROTO
 * otherwise); the times at which record ``skip`` and the last one arrived (a warm-up of
 * ``skip`` records is left out of a rate). */
static inline int ring_bench_recv(ring_inbox_t *in, long n, long skip, int64_t timeout_ns,
                                  long *done, int64_t *t_first, int64_t *t_last) {
    unsigned char recs[RING_BENCH_MAX_RECORD];
    uint32_t rb = in->seg.record_bytes;
    uint32_t per = (uint32_t)(sizeof recs / rb);
    if (per == 0) return EINVAL;
    while (*done < n) {
        uint32_t want = (uint32_t)((n - *done) < per ? (n - *done) : per);
        int64_t m = ring_inbox_take(in, recs, want, NULL);
        if (m == 0) {
            int e = ring_inbox_wait(in, ring_now_ns() + timeout_ns);
            if (e) return e;
            continue;
        }
        if (m < 0) return EPROTO;
        int64_t now = *done <= skip && skip < *done + m ? ring_now_ns() : 0;
        for (int64_t j = 0; j < m; j++) {
            long v;
            memcpy(&v, recs + (size_t)j * rb, sizeof v);
            if (v != *done) return EPROTO;
            if (*done == skip) *t_first = now;
            (*done)++;
        }
    }
    *t_last = ring_now_ns();
    return 0;
}

#endif
