/* Which peer unit process's ring a record goes into, and putting it there (the native
 * loop of a process unit).  A flat table sorted by destination task; a record goes in with
 * one push and at most one doorbell system call (only when that peer sleeps).  A full ring
 * means a bug (rings are sized for everything the plan can have in flight), so the wait for
 * room is bounded: ETIMEDOUT names it to the caller, EINTR lets it look at signals. */
#ifndef AF_RING_ROUTE_H
#define AF_RING_ROUTE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>

#include "ring_outlet.h"

typedef struct {
    const int64_t *tasks;     /* destination tasks on peer unit processes, sorted */
    ring_outlet_t **outlets;  /* ... and the outlet into that peer's segment */
    int32_t n;
} ring_routes_t;

static inline ring_outlet_t *ring_route(const ring_routes_t *r, int64_t task) {
    int32_t lo = 0, hi = r->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (r->tasks[mid] < task) lo = mid + 1;
        else hi = mid;
    }
    return lo < r->n && r->tasks[lo] == task ? r->outlets[lo] : NULL;
}

/* Put one record in: 0, or ETIMEDOUT (no room for `timeout_ns`), EINTR, EPROTO. */
static inline int ring_route_send(ring_outlet_t *o, const void *record, int64_t timeout_ns) {
    int64_t m = ring_outlet_push(o, record, 1);
    if (m == 1) return 0;
    if (m < 0) return EPROTO;
    uint32_t sent = 0;
    return ring_outlet_send(o, record, 1, ring_now_ns() + timeout_ns, &sent);
}

#endif
