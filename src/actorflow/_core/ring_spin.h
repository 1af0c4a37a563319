/* The adaptive spin before a ring waiter sleeps.
 *
 * Waking a sleeping process costs ~20-50 us on these machines; a short spin catches a
 * record that is a few microseconds away for a fraction of that -- but only while the
 * writer has a core of its own.  When a machine's processes outnumber its cores a spin
 * steals the very core the writer needs, so the budget is then zero, whatever was asked.
 * Otherwise the budget adapts: a spin that ends in a sleep halves it, one that catches its
 * record restores it; at zero it is retried now and then (every RING_SPIN_RETRY sleeps),
 * so a phase change (the writer got busy, then fast again) is followed. */
#ifndef AF_RING_SPIN_H
#define AF_RING_SPIN_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdint.h>

#include "ring_clock.h"

#define RING_SPIN_FLOOR_NS 500     /* below this a spin is not worth its bookkeeping */
#define RING_SPIN_RETRY 64

typedef struct {
    int64_t max_ns;     /* 0: never spin */
    int64_t cur_ns;
    uint32_t sleeps_since_try;
    uint64_t hits, misses;   /* counters for benches and diagnosis */
} ring_spin_t;

/* ``procs``: the processes of the machine that run at once (units + node); ``cpus``: the
 * cores they may use (ring_usable_cpus()). */
static inline void ring_spin_init(ring_spin_t *s, int64_t want_ns, int procs, int cpus) {
    s->max_ns = (want_ns > 0 && procs <= cpus) ? want_ns : 0;
    s->cur_ns = s->max_ns;
    s->sleeps_since_try = 0;
    s->hits = s->misses = 0;
}

typedef int (*ring_ready_fn)(void *arg);   /* >0 ready, 0 not yet, <0 an error to return */

/* Spin up to the current budget; the last ready() result (>0 ready, 0 not, <0 error). */
static inline int ring_spin_until(ring_spin_t *s, ring_ready_fn ready, void *arg) {
    if (s->cur_ns <= 0) {
        if (s->max_ns > 0 && ++s->sleeps_since_try >= RING_SPIN_RETRY) {
            s->sleeps_since_try = 0;
            s->cur_ns = s->max_ns / 4 > RING_SPIN_FLOOR_NS ? s->max_ns / 4 : RING_SPIN_FLOOR_NS;
        } else {
            return 0;
        }
    }
    int64_t end = ring_now_ns() + s->cur_ns;
    for (;;) {
        for (int i = 0; i < 32; i++) {
            int r = ready(arg);
            if (r != 0) {
                if (r > 0) {
                    s->hits++;
                    s->cur_ns = s->max_ns;
                }
                return r;
            }
            ring_cpu_relax();
        }
        if (ring_now_ns() >= end) break;
    }
    s->misses++;
    s->cur_ns /= 2;
    if (s->cur_ns < RING_SPIN_FLOOR_NS) s->cur_ns = 0;
    return 0;
}

#endif
