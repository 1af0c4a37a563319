/* One single-producer/single-consumer ring of fixed-size records in shared memory.
 *
 * The shared part (``ring_ctl_t``) holds two monotonically increasing 64-bit counters on
 * cache lines of their own: ``head`` (records published, written only by the producer) and
 * ``tail`` (records taken, written only by the consumer); slot = counter & (capacity - 1).
 * Each side keeps its own counter and a cached copy of the other's in process memory
 * (``ring_producer_t`` / ``ring_consumer_t``), so a push or pop that finds room or records
 * in the cache touches no line the other side writes.
 *
 * The other side's counter comes from another process and is not trusted: a value that
 * would mean more records than the capacity, or a counter going backwards, makes the call
 * return -EPROTO (the caller refuses the ring) instead of reading or writing out of bounds.
 *
 * Records are copied in and out whole; a consumer validates its copy, never the shared
 * bytes (the producer could change them after a check).  A producer that waits for room
 * sleeps on ``space_seq`` (a futex word of the ring), which the consumer bumps after a pop
 * only when ``producer_waiting`` says someone sleeps there. */
#ifndef AF_RING_H
#define AF_RING_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
    /* producer's line */
    _Alignas(64) _Atomic uint64_t head;      /* records published */
    _Atomic int32_t producer_pid;            /* who holds the producing end; 0: nobody */
    _Atomic uint32_t producer_waiting;       /* the producer sleeps on space_seq */
    /* consumer's line */
    _Alignas(64) _Atomic uint64_t tail;      /* records taken */
    _Atomic int32_t consumer_pid;            /* who holds the consuming end; 0: nobody */
    _Atomic uint32_t space_seq;              /* futex word: bumped when room is made for a
                                                waiting producer */
} ring_ctl_t;

_Static_assert(sizeof(ring_ctl_t) == 128, "ring_ctl_t is two cache lines");

static inline void ring_ctl_init(ring_ctl_t *c) {
    memset((void *)c, 0, sizeof *c);
}

/* The producing end, in the producer's memory. */
typedef struct {
    ring_ctl_t *ctl;
    unsigned char *data;
    uint64_t head;          /* next record's counter (ours; the shared one follows it) */
    uint64_t tail_seen;     /* the consumer's counter when we last looked */
    uint32_t capacity;      /* records; a power of two */
    uint32_t record_bytes;
} ring_producer_t;

/* The consuming end, in the consumer's memory. */
typedef struct {
    ring_ctl_t *ctl;
    unsigned char *data;
    uint64_t tail;          /* next record to take (ours) */
    uint64_t head_seen;     /* the producer's counter when we last looked */
    uint32_t capacity;
    uint32_t record_bytes;
} ring_consumer_t;

/* Bind an end to a ring whose geometry the caller validated.  The counters already in the
 * ring are taken over (an end may be reopened) after a sanity check: -EPROTO if they are
 * impossible. */
static inline int ring_producer_bind(ring_producer_t *p, ring_ctl_t *ctl, unsigned char *data,
                                     uint32_t capacity, uint32_t record_bytes) {
    uint64_t h = atomic_load_explicit(&ctl->head, memory_order_acquire);
    uint64_t t = atomic_load_explicit(&ctl->tail, memory_order_acquire);
    if (t > h || h - t > capacity) return -EPROTO;
    p->ctl = ctl; p->data = data; p->head = h; p->tail_seen = t;
    p->capacity = capacity; p->record_bytes = record_bytes;
    return 0;
}

static inline int ring_consumer_bind(ring_consumer_t *c, ring_ctl_t *ctl, unsigned char *data,
                                     uint32_t capacity, uint32_t record_bytes) {
    uint64_t h = atomic_load_explicit(&ctl->head, memory_order_acquire);
    uint64_t t = atomic_load_explicit(&ctl->tail, memory_order_acquire);
    if (t > h || h - t > capacity) return -EPROTO;
    c->ctl = ctl; c->data = data; c->tail = t; c->head_seen = h;
    c->capacity = capacity; c->record_bytes = record_bytes;
    return 0;
}

/* Room for this many records (re-reading the consumer's counter when the cache says
 * fewer than ``want``); -EPROTO if the consumer's counter is impossible. */
static inline int64_t ring_room(ring_producer_t *p, uint32_t want) {
    uint64_t used = p->head - p->tail_seen;
    if (p->capacity - used >= want) return (int64_t)(p->capacity - used);
    uint64_t t = atomic_load_explicit(&p->ctl->tail, memory_order_acquire);
    if (t < p->tail_seen || t > p->head) return -EPROTO;
    p->tail_seen = t;
    return (int64_t)(p->capacity - (p->head - t));
}

/* Copy up to ``n`` records in and publish them; the number pushed (0 when full) or -EPROTO.
 * Does not ring the consumer's doorbell (the caller does, once per batch). */
static inline int64_t ring_push(ring_producer_t *p, const void *records, uint32_t n) {
    int64_t room = ring_room(p, n);
    if (room <= 0) return room;
    uint32_t m = (uint64_t)room < n ? (uint32_t)room : n;
    uint32_t at = (uint32_t)(p->head & (p->capacity - 1));
    uint32_t first = p->capacity - at < m ? p->capacity - at : m;
    size_t rb = p->record_bytes;
    memcpy(p->data + (size_t)at * rb, records, (size_t)first * rb);
    if (m > first)
        memcpy(p->data, (const unsigned char *)records + (size_t)first * rb, (size_t)(m - first) * rb);
    p->head += m;
    atomic_store_explicit(&p->ctl->head, p->head, memory_order_release);
    return m;
}

/* Records waiting (re-reading the producer's counter when the cache says none);
 * -EPROTO if the producer's counter is impossible. */
static inline int64_t ring_waiting(ring_consumer_t *c) {
    if (c->head_seen != c->tail) return (int64_t)(c->head_seen - c->tail);
    uint64_t h = atomic_load_explicit(&c->ctl->head, memory_order_acquire);
    if (h < c->head_seen || h - c->tail > c->capacity) return -EPROTO;
    c->head_seen = h;
    return (int64_t)(h - c->tail);
}

/* Wake the producer if it sleeps waiting for room (after a pop published the tail). */
static inline void ring_wake_producer(ring_ctl_t *ctl) {
    atomic_thread_fence(memory_order_seq_cst);  /* the tail before reading the flag */
    if (!atomic_load_explicit(&ctl->producer_waiting, memory_order_relaxed)) return;
    if (!atomic_exchange_explicit(&ctl->producer_waiting, 0, memory_order_acq_rel)) return;
    atomic_fetch_add_explicit(&ctl->space_seq, 1, memory_order_release);
    syscall(SYS_futex, (uint32_t *)&ctl->space_seq, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Copy out up to ``max`` records and free their slots; the number taken or -EPROTO. */
static inline int64_t ring_pop(ring_consumer_t *c, void *out, uint32_t max) {
    int64_t avail = ring_waiting(c);
    if (avail <= 0 || max == 0) return avail < 0 ? avail : 0;
    uint32_t m = (uint64_t)avail < max ? (uint32_t)avail : max;
    uint32_t at = (uint32_t)(c->tail & (c->capacity - 1));
    uint32_t first = c->capacity - at < m ? c->capacity - at : m;
    size_t rb = c->record_bytes;
    memcpy(out, c->data + (size_t)at * rb, (size_t)first * rb);
    if (m > first)
        memcpy((unsigned char *)out + (size_t)first * rb, c->data, (size_t)(m - first) * rb);
    c->tail += m;
    atomic_store_explicit(&c->ctl->tail, c->tail, memory_order_release);
    ring_wake_producer(c->ctl);
    return m;
}

#endif
