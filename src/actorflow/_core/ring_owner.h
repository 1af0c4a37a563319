/* Which process owns an object: one made in a process must refuse to work in a child made
 * by fork (its peer pid, its claims on a ring and its sockets belong to the parent).  A
 * fork-child hook bumps a generation counter, so the check on a hot path is one compare
 * instead of a getpid() system call. */
#ifndef AF_RING_OWNER_H
#define AF_RING_OWNER_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

static volatile uint32_t ring_fork_generation;

static void ring_on_fork_child(void) { ring_fork_generation++; }

/* Call once at import in EVERY compiled module that includes this header: the counter and
 * the hook are static, one copy per module, and a module that never registered its hook
 * would never see a fork.  Later calls do nothing. */
static inline int ring_owner_init(void) {
    static int registered;
    if (registered) return 0;
    if (pthread_atfork(NULL, NULL, ring_on_fork_child) != 0) return -1;
    registered = 1;
    return 0;
}

typedef struct {
    int32_t pid;      /* for messages: who made the object */
    uint32_t gen;     /* ring_fork_generation when it was made */
} ring_owner_t;

static inline void ring_owner_take(ring_owner_t *o) {
    o->pid = (int32_t)getpid();
    o->gen = ring_fork_generation;
}

/* 1 in the process that made the object, 0 in a forked child. */
static inline int ring_owner_here(const ring_owner_t *o) {
    return o->gen == ring_fork_generation && o->pid != 0;
}

#endif
