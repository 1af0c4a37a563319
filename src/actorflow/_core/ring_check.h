/* What a record read from a ring must be before a state machine sees it.
 *
 * The same rules as actors/inbound.py's check of a message from a socket, for what a peer
 * unit process of the machine may send through its ring: a READY, ACK or EORD (never a
 * command: those come from the node), between tasks the plan links through the regst desc
 * it names, from a task that lives on the unit writing that ring, to a task this unit
 * hosts, with a slot below the desc's register_num and no negative sequence number.  The
 * plan's facts are flat sorted tables made once (``ring_check_t``); a check is a few binary
 * searches and writes why a record is refused.
 */
#ifndef AF_RING_CHECK_H
#define AF_RING_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "record.h"

typedef struct {
    int64_t id;
    int64_t producer;
    int32_t register_num;
    int32_t first, count;      /* its consumers: consumers[first .. first + count), sorted */
} ring_desc_t;

typedef struct {
    const int64_t *tasks;      /* every task of the machine, sorted */
    const int32_t *thrds;      /* ... and the unit (thrd) that hosts it */
    int32_t ntasks;
    const ring_desc_t *descs;  /* every regst desc the machine's tasks touch, sorted by id */
    int32_t ndescs;
    const int64_t *consumers;
    int32_t me;                /* the reading unit's thrd */
    const int32_t *writers;    /* ring i is written by unit writers[i] */
    int32_t nwriters;
} ring_check_t;

static inline int32_t ring_check_find(const int64_t *a, int32_t n, int64_t v) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && a[lo] == v ? lo : -1;
}

static inline const ring_desc_t *ring_check_desc(const ring_check_t *c, int64_t id) {
    int32_t lo = 0, hi = c->ndescs;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (c->descs[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < c->ndescs && c->descs[lo].id == id ? &c->descs[lo] : NULL;
}

/* The unit hosting `task` on this machine, or -1. */
static inline int32_t ring_check_unit(const ring_check_t *c, int64_t task) {
    int32_t i = ring_check_find(c->tasks, c->ntasks, task);
    return i < 0 ? -1 : c->thrds[i];
}

/* 0 when record `m` from ring `ring` may be handled; else -1 with the reason in `why`. */
static inline int ring_check_record(const ring_check_t *c, const af_msg *m, uint32_t ring,
                                   char *why, size_t whylen) {
#define RING_REFUSE(...) do { snprintf(why, whylen, __VA_ARGS__); return -1; } while (0)
    if (ring >= (uint32_t)c->nwriters) RING_REFUSE("ring %u does not exist", ring);
    int32_t writer = c->writers[ring];
    if (m->type > AF_EORD) {
        if (m->type == AF_CMD) RING_REFUSE("a command from unit %d (commands come from the node)", writer);
        RING_REFUSE("message type %u", (unsigned)m->type);
    }
    if (m->cmd != 0 || m->flags != 0)
        RING_REFUSE("a %s with command code %u and flags %u", m->type == AF_READY ? "READY" :
                    m->type == AF_ACK ? "ACK" : "EORD", (unsigned)m->cmd, (unsigned)m->flags);
    int32_t src_unit = ring_check_unit(c, m->src);
    if (src_unit != writer)
        RING_REFUSE("a record in the ring of unit %d claims sender task %" PRId64 ", which "
                    "that unit does not host", writer, m->src);
    if (ring_check_unit(c, m->dst) != c->me)
        RING_REFUSE("destination task %" PRId64 " is not hosted here", m->dst);
    const ring_desc_t *d = ring_check_desc(c, m->desc);
    if (d == NULL) RING_REFUSE("regst desc %" PRId64 " is not in the plan", m->desc);
    int64_t producer = m->type == AF_ACK ? m->dst : m->src;
    int64_t consumer = m->type == AF_ACK ? m->src : m->dst;
    if (d->producer != producer ||
        ring_check_find(c->consumers + d->first, d->count, consumer) < 0)
        RING_REFUSE("regst desc %" PRId64 " does not link task %" PRId64 " to task %" PRId64,
                    m->desc, m->src, m->dst);
    if (m->type != AF_EORD && (m->slot < 0 || m->slot >= d->register_num))
        RING_REFUSE("slot %d outside [0, %d) of regst desc %" PRId64, m->slot, d->register_num,
                    m->desc);
    if (m->seq < 0) RING_REFUSE("negative seq %" PRId64, m->seq);
    return 0;
#undef RING_REFUSE
}

#endif
