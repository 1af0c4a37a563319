/* inbox.h -- a unit's inbox for records from other threads of its process.
 *
 * Any thread puts; only the unit's loop takes, and takes everything that waits at once.
 * The putter signals the condition only when the loop sleeps on it (`sleeping`), so a
 * busy unit costs its peers a lock and a copy, no system call.  Every wait is bounded and
 * returns on a stop request.
 */
#ifndef AF_INBOX_H
#define AF_INBOX_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "buf.h"

typedef struct af_inbox {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    af_ring q;     /* of af_msg */
    int sleeping;  /* the loop waits on cv (and no signal was sent for this sleep yet) */
    int32_t pending; /* q.len as last published: a spinning loop reads it without the lock */
    int64_t spin_ns; /* how long the loop spins for a record before it sleeps (0: never) */
    int stop;      /* the runtime asked the loop to end */
    int poke;      /* wake the loop once without a message (idle work to do) */
    int ready;
} af_inbox;

static int af_inbox_init(af_inbox *b) {
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC))
        return -1;
    if (pthread_mutex_init(&b->mu, NULL) || pthread_cond_init(&b->cv, &ca))
        return -1;
    pthread_condattr_destroy(&ca);
    af_ring_init(&b->q, sizeof(af_msg));
    b->sleeping = b->stop = b->poke = 0;
    b->pending = 0;
    b->spin_ns = 0;
    b->ready = 1;
    return 0;
}

static void af_inbox_free(af_inbox *b) {
    if (!b->ready)
        return;
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    af_ring_free(&b->q);
    b->ready = 0;
}

/* Put `n` records; -1 when the inbox cannot grow (the sender reports it). */
static int af_inbox_put(af_inbox *b, const af_msg *m, int32_t n) {
    int rc = 0;
    pthread_mutex_lock(&b->mu);
    for (int32_t i = 0; i < n; i++) {
        af_msg *slot = (af_msg *)af_ring_push(&b->q);
        if (slot == NULL) {
            rc = -1;
            break;
        }
        *slot = m[i];
    }
    int wake = b->sleeping;
    b->sleeping = 0; /* one signal per sleep */
    __atomic_store_n(&b->pending, b->q.len, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&b->mu);
    if (wake) /* after the unlock: the woken loop does not block on the mutex at once */
        pthread_cond_signal(&b->cv);
    return rc;
}

static void af_inbox_signal(af_inbox *b, int stop) {
    pthread_mutex_lock(&b->mu);
    if (stop)
        b->stop = 1;
    else
        b->poke = 1;
    __atomic_store_n(&b->pending, 1, __ATOMIC_RELEASE); /* ends a spin too */
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* Move every waiting record into `out` (grown as needed); wait up to `timeout_ns` for the
   first.  Returns the number taken (0: timed out, poked or stopped; see b->stop). */
static inline void af_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline int64_t af_clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int32_t af_inbox_take(af_inbox *b, af_ring *out, int64_t timeout_ns) {
    if (b->spin_ns > 0 && timeout_ns > 0 &&
        !__atomic_load_n(&b->pending, __ATOMIC_ACQUIRE)) { /* a short spin, then sleep */
        int64_t until = af_clock_ns() + b->spin_ns;
        do {
            for (int i = 0; i < 64; i++)
                af_relax();
        } while (!__atomic_load_n(&b->pending, __ATOMIC_ACQUIRE) && af_clock_ns() < until);
    }
    pthread_mutex_lock(&b->mu);
    if (b->q.len == 0 && !b->stop && !b->poke && timeout_ns > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = ts.tv_nsec + timeout_ns % 1000000000LL;
        ts.tv_sec += (time_t)(timeout_ns / 1000000000LL + ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        while (b->q.len == 0 && !b->stop && !b->poke) {
            b->sleeping = 1;
            int rc = pthread_cond_timedwait(&b->cv, &b->mu, &ts);
            if (rc == ETIMEDOUT)
                break;
        }
        b->sleeping = 0;
    }
    b->poke = 0;
    int32_t n = b->q.len;
    for (int32_t i = 0; i < n; i++) {
        af_msg *slot = (af_msg *)af_ring_push(out);
        if (slot == NULL) {
            n = i;
            break;
        }
        *slot = *(af_msg *)af_ring_front(&b->q);
        af_ring_pop(&b->q);
    }
    __atomic_store_n(&b->pending, b->q.len, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&b->mu);
    return n;
}

#endif
