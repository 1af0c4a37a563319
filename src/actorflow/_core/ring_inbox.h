/* A reader's inbox: the consuming end of every ring of one segment, and its doorbell.
 *
 * ``ring_inbox_take`` drains the rings round-robin (each record's ring index -- which peer
 * sent it -- goes to ``origins`` so the caller can check the sender may send it);
 * ``ring_inbox_wait`` returns once a record waits, spinning first if the budget allows,
 * then sleeping on the doorbell until a deadline or a signal.  A reader that must also
 * watch sockets uses an EVENTFD doorbell: ``ring_inbox_arm`` then its own poll on the
 * eventfd and the sockets, then ``ring_inbox_disarm``.
 *
 * The inbox never decides that a writer is dead: a wait times out (ETIMEDOUT) and the
 * caller looks at the writers (``ring_inbox_producer_pid``). */
#ifndef AF_RING_INBOX_H
#define AF_RING_INBOX_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdlib.h>

#include "doorbell.h"
#include "ring.h"
#include "ring_owner.h"
#include "ring_segment.h"
#include "ring_spin.h"

typedef struct {
    ring_seg_t seg;               /* a copy of the mapping's description (not owned) */
    ring_consumer_t *rings;       /* seg.nrings ends, malloc'ed */
    doorbell_t *bell;
    int efd;                      /* the doorbell's eventfd (EVENTFD kind), else -1 */
    uint32_t next;                /* the ring a take starts at (round-robin) */
    uint32_t bad_ring;            /* the ring of the last -EPROTO */
    ring_spin_t spin;
    ring_owner_t owner;
    uint64_t sleeps;              /* times the reader slept on the doorbell */
} ring_inbox_t;

/* Claim and bind the consuming end of every ring.  0, ENOMEM, EBADF (an EVENTFD segment
 * needs ``efd``), EBUSY (``*holder``: the live pid holding ring ``*bad_ring``) or EPROTO
 * (ring ``*bad_ring``'s counters are impossible).  Nothing stays claimed on failure. */
static inline int ring_inbox_open(ring_inbox_t *in, const ring_seg_t *seg, int efd,
                                  int64_t spin_ns, int procs, int32_t *holder) {
    memset(in, 0, sizeof *in);
    if (seg->doorbell_kind == DOORBELL_EVENTFD && efd < 0) return EBADF;
    in->rings = (ring_consumer_t *)calloc(seg->nrings, sizeof(ring_consumer_t));
    if (!in->rings) return ENOMEM;
    in->seg = *seg;
    in->bell = ring_seg_doorbell(seg);
    in->efd = seg->doorbell_kind == DOORBELL_EVENTFD ? efd : -1;
    ring_spin_init(&in->spin, spin_ns, procs, ring_usable_cpus());
    for (uint32_t i = 0; i < seg->nrings; i++) {
        ring_ctl_t *ctl = ring_seg_ctl(seg, i);
        int e = ring_claim(&ctl->consumer_pid, holder);
        if (!e && ring_consumer_bind(&in->rings[i], ctl, ring_seg_data(seg, i), seg->capacity,
                                     seg->record_bytes) != 0) {
            ring_release_claim(&ctl->consumer_pid);
            e = EPROTO;
        }
        if (e) {
            in->bad_ring = i;
            while (i-- > 0) ring_release_claim(&ring_seg_ctl(seg, i)->consumer_pid);
            free(in->rings);
            in->rings = NULL;
            return e;
        }
    }
    ring_owner_take(&in->owner);
    return 0;
}

/* Give up the claims (the mapping stays: the segment's owner unmaps it). */
static inline void ring_inbox_close(ring_inbox_t *in) {
    if (!in->rings) return;
    if (ring_owner_here(&in->owner))
        for (uint32_t i = 0; i < in->seg.nrings; i++)
            ring_release_claim(&ring_seg_ctl(&in->seg, i)->consumer_pid);
    free(in->rings);
    in->rings = NULL;
    in->owner.pid = 0;
}

static inline int32_t ring_inbox_producer_pid(const ring_inbox_t *in, uint32_t i) {
    return atomic_load_explicit(&ring_seg_ctl(&in->seg, i)->producer_pid, memory_order_acquire);
}

/* Take up to ``max`` records from the rings, round-robin; the count, or -EPROTO (ring in
 * ``bad_ring``).  ``origins`` (may be NULL): each record's ring index. */
static inline int64_t ring_inbox_take(ring_inbox_t *in, void *out, uint32_t max, uint32_t *origins) {
    uint32_t n = in->seg.nrings, got = 0;
    size_t rb = in->seg.record_bytes;
    for (uint32_t k = 0; k < n && got < max; k++) {
        uint32_t i = (in->next + k) % n;
        int64_t m = ring_pop(&in->rings[i], (unsigned char *)out + (size_t)got * rb, max - got);
        if (m < 0) {
            in->bad_ring = i;
            return m;
        }
        if (origins)
            for (int64_t j = 0; j < m; j++) origins[got + j] = i;
        got += (uint32_t)m;
    }
    in->next = n ? (in->next + 1) % n : 0;
    return got;
}

/* >0 if some ring holds a record, 0 if none, -EPROTO (ring in ``bad_ring``). */
static inline int ring_inbox_ready(void *arg) {
    ring_inbox_t *in = (ring_inbox_t *)arg;
    for (uint32_t i = 0; i < in->seg.nrings; i++) {
        int64_t w = ring_waiting(&in->rings[i]);
        if (w != 0) {
            if (w < 0) in->bad_ring = i;
            return w > 0 ? 1 : (int)w;
        }
    }
    return 0;
}

/* Arm the doorbell for a sleep the caller does itself (eventfd + sockets in one poll).
 * 1: records already wait (not armed); 0: armed, sleep now; -EPROTO. */
static inline int ring_inbox_arm(ring_inbox_t *in) {
    int r = ring_inbox_ready(in);
    if (r) return r;
    doorbell_arm(in->bell);
    r = ring_inbox_ready(in);
    if (r) doorbell_disarm(in->bell);
    return r;
}

static inline void ring_inbox_disarm(ring_inbox_t *in) {
    doorbell_disarm(in->bell);
    if (in->efd >= 0) doorbell_drain_fd(in->efd);
}

/* Wait until a record waits: 0, ETIMEDOUT (``deadline_ns``, CLOCK_MONOTONIC, passed),
 * EINTR (a signal: look at it, then wait again if you like) or EPROTO. */
static inline int ring_inbox_wait(ring_inbox_t *in, int64_t deadline_ns) {
    int r = ring_inbox_ready(in);
    if (r == 0) r = ring_spin_until(&in->spin, ring_inbox_ready, in);
    for (;;) {
        if (r > 0) return 0;
        if (r < 0) return EPROTO;
        uint32_t seq = doorbell_arm(in->bell);
        r = ring_inbox_ready(in);
        if (r != 0) {
            doorbell_disarm(in->bell);
            continue;
        }
        in->sleeps++;
        int e = doorbell_sleep(in->bell, in->seg.doorbell_kind, seq, in->efd, deadline_ns);
        doorbell_disarm(in->bell);
        r = ring_inbox_ready(in);
        if (r != 0) continue;
        if (e == ETIMEDOUT || e == EINTR) return e;
        if (e != 0) return e;
    }
}

#endif
