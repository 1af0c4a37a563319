/* The doorbell of a reader: a word in shared memory that writers ring after publishing,
 * and that costs them nothing unless the reader sleeps.
 *
 * The reader arms it (``sleeping = 1``, a full fence), checks once more for work, then
 * sleeps: on the futex word itself (FUTEX kind), or in poll() on an eventfd (EVENTFD kind:
 * a reader that must also watch sockets passes that fd to zmq_poll, which cannot wait on a
 * futex).  A writer publishes, fences, and only if ``sleeping`` is set does it clear it
 * (one writer wins the exchange) and wake the reader: a busy reader costs writers one load.
 * Both fences are sequentially consistent, so either the writer sees ``sleeping`` or the
 * reader sees the record: no lost wake-up.
 *
 * Every sleep has an absolute deadline and returns EINTR when a signal arrives, so the
 * caller can look at its signals and at its peer's health (a doorbell never learns that a
 * writer died). */
#ifndef AF_DOORBELL_H
#define AF_DOORBELL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring_clock.h"

enum { DOORBELL_FUTEX = 1, DOORBELL_EVENTFD = 2 };

typedef struct {
    _Alignas(64) _Atomic uint32_t seq;   /* the futex word: bumped by every wake */
    _Atomic uint32_t sleeping;           /* the reader is (about to be) asleep */
    uint32_t reserved_[14];
} doorbell_t;                            /* one cache line */

_Static_assert(sizeof(doorbell_t) == 64, "doorbell_t is one cache line");

static inline void doorbell_init(doorbell_t *db) {
    atomic_store_explicit(&db->seq, 0, memory_order_relaxed);
    atomic_store_explicit(&db->sleeping, 0, memory_order_relaxed);
}

/* Writer side, after publishing: wake the reader only if it sleeps.  ``kind``: the
 * validated copy the caller holds (the shared word could be scribbled on); ``efd``: the
 * reader's eventfd for an EVENTFD doorbell.  Returns 1 if it woke the reader. */
static inline int doorbell_ring(doorbell_t *db, uint32_t kind, int efd) {
    atomic_thread_fence(memory_order_seq_cst);  /* the record before reading 'sleeping' */
    if (!atomic_load_explicit(&db->sleeping, memory_order_relaxed)) return 0;
    if (!atomic_exchange_explicit(&db->sleeping, 0, memory_order_acq_rel)) return 0;
    atomic_fetch_add_explicit(&db->seq, 1, memory_order_release);
    if (kind == DOORBELL_EVENTFD) {
        uint64_t one = 1;
        /* EAGAIN: the counter is saturated, the reader is woken anyway */
        while (write(efd, &one, sizeof one) < 0 && errno == EINTR) {}
    } else {
        syscall(SYS_futex, (uint32_t *)&db->seq, FUTEX_WAKE, 1, NULL, NULL, 0);
    }
    return 1;
}

/* Reader side: arm before the last look for work; returns the futex value to sleep on. */
static inline uint32_t doorbell_arm(doorbell_t *db) {
    uint32_t seq = atomic_load_explicit(&db->seq, memory_order_acquire);
    atomic_store_explicit(&db->sleeping, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);  /* 'sleeping' before re-reading the rings */
    return seq;
}

static inline void doorbell_disarm(doorbell_t *db) {
    atomic_store_explicit(&db->sleeping, 0, memory_order_relaxed);
}

/* Sleep on a futex word until it differs from ``seq``, a wake, ``deadline_ns``
 * (CLOCK_MONOTONIC) or a signal.  0 (woken, or the word had changed), ETIMEDOUT or EINTR. */
static inline int doorbell_futex_sleep(_Atomic uint32_t *word, uint32_t seq, int64_t deadline_ns) {
    if (ring_now_ns() >= deadline_ns) return ETIMEDOUT;
    struct timespec abs_ts = ring_timespec(deadline_ns);
    /* WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline: no drift over retries */
    long r = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET, seq, &abs_ts, NULL,
                     FUTEX_BITSET_MATCH_ANY);
    if (r == 0) return 0;
    if (errno == EAGAIN) return 0;
    if (errno == ETIMEDOUT || errno == EINTR) return errno;
    return errno;
}

/* Take whatever an eventfd holds (non-blocking fd: nothing there is not an error). */
static inline void doorbell_drain_fd(int efd) {
    uint64_t v;
    while (read(efd, &v, sizeof v) < 0 && errno == EINTR) {}
}

/* Sleep in poll() on an eventfd until readable, ``deadline_ns`` or a signal; drains it.
 * 0, ETIMEDOUT or EINTR. */
static inline int doorbell_fd_sleep(int efd, int64_t deadline_ns) {
    int64_t left = deadline_ns - ring_now_ns();
    if (left <= 0) return ETIMEDOUT;
    struct pollfd p = {.fd = efd, .events = POLLIN, .revents = 0};
    struct timespec ts = ring_timespec(left);
    int r = ppoll(&p, 1, &ts, NULL);
    if (r < 0) return errno;
    if (r == 0) return ETIMEDOUT;
    doorbell_drain_fd(efd);
    return 0;
}

/* Sleep on the doorbell of either kind (``efd``: the reader's eventfd, EVENTFD kind). */
static inline int doorbell_sleep(doorbell_t *db, uint32_t kind, uint32_t seq, int efd,
                                 int64_t deadline_ns) {
    if (kind == DOORBELL_EVENTFD) return doorbell_fd_sleep(efd, deadline_ns);
    return doorbell_futex_sleep(&db->seq, seq, deadline_ns);
}

#endif
