/* rxcheck.h -- a record from another machine, checked before a native unit sees it.
 *
 * The rules of actors/inbound.py's Inbound._problem for READY / ACK / EORD, field by
 * field: ids and counters in range, the destination hosted here (by a native unit: its
 * inbox), the sender in the plan, the regst desc linking sender and receiver in the
 * message's direction, the slot below register_num (READY, ACK), a non-negative seq, blobs
 * only on a READY.  A record that breaks a rule is not taken here (-1): the node's Python
 * receiver then checks it again and drops, counts and reports it with the rule it broke,
 * so both paths refuse the same records with the same words.  CMDs always go that way.
 */
#ifndef AF_RXCHECK_H
#define AF_RXCHECK_H

#include "inbox.h"
#include "record.h"

typedef struct af_rxdesc {
    int64_t id, producer;
    int32_t register_num, nconsumers;
    int64_t *consumers;
} af_rxdesc;

typedef struct af_rxplan {
    int64_t *tasks;       /* every task of the plan, sorted */
    int32_t ntasks;
    af_rxdesc *descs;     /* every regst desc this receiver may see, sorted by id */
    int32_t ndescs;
    int64_t *hosted;      /* tasks of this machine on native units, sorted */
    af_inbox **inbox;     /* ... and the inbox of each one's unit */
    int32_t nhosted;
} af_rxplan;

static int32_t af_rx_find(const int64_t *v, int32_t n, int64_t key, size_t stride) {
    int32_t lo = 0, hi = n - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int64_t k = *(const int64_t *)((const char *)v + (size_t)mid * stride);
        if (k == key)
            return mid;
        if (k < key)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static void af_rxplan_free(af_rxplan *p) {
    for (int32_t i = 0; i < p->ndescs; i++)
        free(p->descs[i].consumers);
    free(p->tasks);
    free(p->descs);
    free(p->hosted);
    free(p->inbox);
    memset(p, 0, sizeof *p);
}

/* The desc of an accepted READY/ACK/EORD `m` (with `nblobs` blob frames) and the inbox it
 * goes to, or NULL: not taken here. */
static const af_rxdesc *af_rx_check(const af_rxplan *p, const af_msg *m, int32_t nblobs,
                                    af_inbox **to) {
    if (m->type != AF_READY && m->type != AF_ACK && m->type != AF_EORD)
        return NULL;
    if (m->src < -1 || m->dst < -1 || m->desc < -1 || m->slot < -1 || m->piece < -1 ||
        m->seq < -1 || m->aux < -1 || m->msg_id < 0 || m->cmd != 0)
        return NULL;
    int32_t h = af_rx_find(p->hosted, p->nhosted, m->dst, sizeof(int64_t));
    if (h < 0)
        return NULL;
    if (af_rx_find(p->tasks, p->ntasks, m->src, sizeof(int64_t)) < 0)
        return NULL;
    int32_t k = af_rx_find(&p->descs[0].id, p->ndescs, m->desc, sizeof(af_rxdesc));
    if (k < 0)
        return NULL;
    const af_rxdesc *d = &p->descs[k];
    int64_t producer = m->type == AF_ACK ? m->dst : m->src; /* an ACK goes back */
    int64_t consumer = m->type == AF_ACK ? m->src : m->dst;
    if (d->producer != producer)
        return NULL;
    int found = 0;
    for (int32_t i = 0; i < d->nconsumers && !found; i++)
        found = d->consumers[i] == consumer;
    if (!found)
        return NULL;
    if (m->type != AF_EORD && (m->slot < 0 || m->slot >= d->register_num))
        return NULL;
    if (m->seq < 0)
        return NULL;
    if (nblobs > 0 && m->type != AF_READY)
        return NULL;
    *to = p->inbox[h];
    return d;
}

#endif
