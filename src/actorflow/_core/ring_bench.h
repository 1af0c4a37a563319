/* Floor loops for the transport bench: a ping-pong and a numbered stream over rings, in C
 * so the bench measures the rings and not the caller.  Resumable: each returns EINTR or
 * ETIMEDOUT with ``*done`` set, and the caller may call again to go on. */
#ifndef AF_RING_BENCH_H
#define AF_RING_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>

#include "ring_inbox.h"
#include "ring_outlet.h"

#define RING_BENCH_MAX_RECORD 4096

/* ``n`` round trips of one record; the initiator sends first.  Every wait gets
 * ``timeout_ns``. */
static inline int ring_bench_pingpong(ring_inbox_t *in, ring_outlet_t *out, long n, int initiator,
                                      int64_t timeout_ns, long *done) {
    unsigned char rec[RING_BENCH_MAX_RECORD];
    memset(rec, 0, sizeof rec);
    uint32_t sent;
    int e;
    while (*done < n) {
        if (initiator) {
            memcpy(rec, done, sizeof *done);
            if ((e = ring_outlet_send(out, rec, 1, ring_now_ns() + timeout_ns, &sent))) return e;
        }
        if ((e = ring_inbox_wait(in, ring_now_ns() + timeout_ns))) return e;
        int64_t m = ring_inbox_take(in, rec, 1, NULL);
        if (m < 0) return EPROTO;
        if (m == 0) continue;
        if (!initiator)
            if ((e = ring_outlet_send(out, rec, 1, ring_now_ns() + timeout_ns, &sent))) return e;
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
        uint32_t sent = 0;
        int e = ring_outlet_send(out, recs, k, ring_now_ns() + timeout_ns, &sent);
        *done += sent;
        if (e) return e;
    }
    return 0;
}

/* Receive ``n`` records, checking they arrive numbered in order (EPROTO otherwise); the
 * times of the first and of the last. */
static inline int ring_bench_recv(ring_inbox_t *in, long n, int64_t timeout_ns, long *done,
                                  int64_t *t_first, int64_t *t_last) {
    unsigned char recs[RING_BENCH_MAX_RECORD];
    uint32_t rb = in->seg.record_bytes;
    uint32_t per = (uint32_t)(sizeof recs / rb);
    if (per == 0) return EINVAL;
    while (*done < n) {
        int e = ring_inbox_wait(in, ring_now_ns() + timeout_ns);
        if (e) return e;
        uint32_t want = (uint32_t)((n - *done) < per ? (n - *done) : per);
        int64_t m = ring_inbox_take(in, recs, want, NULL);
        if (m < 0) return EPROTO;
        for (int64_t j = 0; j < m; j++) {
            long v;
            memcpy(&v, recs + (size_t)j * rb, sizeof v);
            if (v != *done) return EPROTO;
            if (*done == 0) *t_first = ring_now_ns();
            (*done)++;
        }
    }
    *t_last = ring_now_ns();
    return 0;
}

#endif
