/* A writer's outlet: the producing end of one ring of a reader's segment.
 *
 * ``ring_outlet_push`` copies records in, publishes them and rings the reader's doorbell
 * (a system call only when the reader sleeps).  ``ring_outlet_send`` pushes all of a batch,
 * waiting for room when the ring is full: a spin if the budget allows, then a sleep on the
 * ring's ``space_seq`` until the reader makes room, the deadline passes or a signal
 * arrives.  A full ring means the reader is slow, stopped or dead; the outlet never decides
 * which: the wait times out and the caller looks (``ring_outlet_consumer_pid``). */
#ifndef AF_RING_OUTLET_H
#define AF_RING_OUTLET_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "doorbell.h"
#include "ring.h"
#include "ring_owner.h"
#include "ring_segment.h"
#include "ring_spin.h"

typedef struct {
    ring_producer_t ring;
    ring_ctl_t *ctl;
    doorbell_t *bell;             /* the reader's */
    uint32_t bell_kind;
    int efd;                      /* the reader's eventfd (EVENTFD kind), else -1 */
    uint32_t index;               /* which ring of the segment */
    uint32_t want;                /* records the current room wait needs */
    ring_spin_t spin;
    ring_owner_t owner;
    uint64_t wakes, full_waits;   /* doorbell system calls; waits for room */
} ring_outlet_t;

/* Claim and bind the producing end of ring ``index``.  0, EINVAL (no such ring), EBADF (an
 * EVENTFD segment needs the reader's ``efd``), EBUSY (``*holder``: the live holder) or
 * EPROTO (the ring's counters are impossible). */
static inline int ring_outlet_open(ring_outlet_t *o, const ring_seg_t *seg, uint32_t index,
                                   int efd, int64_t spin_ns, int procs, int32_t *holder) {
    memset(o, 0, sizeof *o);
    if (index >= seg->nrings) return EINVAL;
    if (seg->doorbell_kind == DOORBELL_EVENTFD && efd < 0) return EBADF;
    o->ctl = ring_seg_ctl(seg, index);
    int e = ring_claim(&o->ctl->producer_pid, holder);
    if (e) return e;
    if (ring_producer_bind(&o->ring, o->ctl, ring_seg_data(seg, index), seg->capacity,
                           seg->record_bytes) != 0) {
        ring_release_claim(&o->ctl->producer_pid);
        return EPROTO;
    }
    o->bell = ring_seg_doorbell(seg);
    o->bell_kind = seg->doorbell_kind;
    o->efd = seg->doorbell_kind == DOORBELL_EVENTFD ? efd : -1;
    o->index = index;
    ring_spin_init(&o->spin, spin_ns, procs, ring_usable_cpus());
    ring_owner_take(&o->owner);
    return 0;
}

static inline void ring_outlet_close(ring_outlet_t *o) {
    if (!o->ctl) return;
    if (ring_owner_here(&o->owner)) {
        atomic_store_explicit(&o->ctl->producer_waiting, 0, memory_order_relaxed);
        ring_release_claim(&o->ctl->producer_pid);
    }
    o->ctl = NULL;
    o->owner.pid = 0;
}

static inline int32_t ring_outlet_consumer_pid(const ring_outlet_t *o) {
    return atomic_load_explicit(&o->ctl->consumer_pid, memory_order_acquire);
}

/* Push up to ``n`` records and ring the doorbell if any went in; count or -EPROTO. */
static inline int64_t ring_outlet_push(ring_outlet_t *o, const void *records, uint32_t n) {
    int64_t m = ring_push(&o->ring, records, n);
    if (m > 0) o->wakes += (uint64_t)doorbell_ring(o->bell, o->bell_kind, o->efd);
    return m;
}

static inline int ring_outlet_has_room(void *arg) {
    ring_outlet_t *o = (ring_outlet_t *)arg;
    int64_t r = ring_room(&o->ring, o->want);
    if (r < 0) return (int)r;
    return (uint64_t)r >= o->want;
}

/* Wait for room for ``want`` records (at most the capacity): 0, ETIMEDOUT, EINTR, EPROTO. */
static inline int ring_outlet_wait_room(ring_outlet_t *o, uint32_t want, int64_t deadline_ns) {
    o->want = want < o->ring.capacity ? (want ? want : 1) : o->ring.capacity;
    int r = ring_outlet_has_room(o);
    if (r == 0) r = ring_spin_until(&o->spin, ring_outlet_has_room, o);
    for (;;) {
        if (r > 0) return 0;
        if (r < 0) return EPROTO;
        uint32_t seq = atomic_load_explicit(&o->ctl->space_seq, memory_order_acquire);
        atomic_store_explicit(&o->ctl->producer_waiting, 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);  /* the flag before re-reading the tail */
        r = ring_outlet_has_room(o);
        if (r != 0) {
            atomic_store_explicit(&o->ctl->producer_waiting, 0, memory_order_relaxed);
            continue;
        }
        o->full_waits++;
        int e = doorbell_futex_sleep(&o->ctl->space_seq, seq, deadline_ns);
        atomic_store_explicit(&o->ctl->producer_waiting, 0, memory_order_relaxed);
        r = ring_outlet_has_room(o);
        if (r != 0) continue;
        if (e) return e;
    }
}

/* Push all ``n`` records, waiting for room as needed.  0, or ETIMEDOUT / EINTR / EPROTO
 * with ``*sent`` records already in (the caller resumes after them). */
static inline int ring_outlet_send(ring_outlet_t *o, const void *records, uint32_t n,
                                   int64_t deadline_ns, uint32_t *sent) {
    const unsigned char *p = (const unsigned char *)records;
    uint32_t done = 0;
    int e = 0;
    while (done < n) {
        int64_t m = ring_outlet_push(o, p + (size_t)done * o->ring.record_bytes, n - done);
        if (m < 0) {
            e = EPROTO;
            break;
        }
        done += (uint32_t)m;
        if (done == n) break;
        e = ring_outlet_wait_room(o, n - done, deadline_ns);
        if (e) break;
    }
    *sent = done;
    return e;
}

#endif
