/* runplan.h -- how a native unit runs each actor's acts, and where its messages go.
 *
 * An act whose kind moves no data (ticks, the main job's kinds) is a no-op; one that copies
 * host regsts unchanged (identity, comm_net landing, repeat, host copies) is a list of
 * memcpys between fixed regst addresses, chosen by the act's slots; only the rest call a
 * Python kernel (and take the GIL).  The router maps a task to the inbox of the native unit
 * that hosts it in this process; a task it does not know goes through Python.
 */
#ifndef AF_RUNPLAN_H
#define AF_RUNPLAN_H

#include "actor.h"
#include "inbox.h"
#include "ring_route.h"

enum { AF_RUN_PY = 0, AF_RUN_NOOP = 1, AF_RUN_COPY = 2 };

typedef struct af_copy {
    int64_t src_desc, dst_desc, nbytes;
    int32_t nsrc, ndst;
    char **src; /* per slot of the source desc: the blob's address */
    char **dst; /* per slot of the destination desc */
} af_copy;

typedef struct af_runplan {
    int32_t mode;
    int32_t ncopies;
    af_copy *copies;
} af_runplan;

static void af_runplan_free(af_runplan *p) {
    for (int32_t i = 0; i < p->ncopies; i++) {
        free(p->copies[i].src);
        free(p->copies[i].dst);
    }
    free(p->copies);
    p->copies = NULL;
    p->ncopies = 0;
}

/* The slot the act reads (reads) or writes (writes) of `desc`; -1 if it does not. */
static inline int32_t af_act_slot(const af_act *x, int64_t desc, int writes) {
    int32_t from = writes ? x->nreads : 0, to = writes ? x->nreads + x->nwrites : x->nreads;
    for (int32_t i = from; i < to; i++)
        if (x->rw[i].desc == desc)
            return x->rw[i].slot;
    return -1;
}

/* Run a COPY act: 0, or -1 when the act's slots do not fit the plan (a bug: refuse). */
static int af_run_copies(const af_runplan *p, const af_act *x) {
    for (int32_t i = 0; i < p->ncopies; i++) {
        const af_copy *c = &p->copies[i];
        int32_t rs = af_act_slot(x, c->src_desc, 0), ws = af_act_slot(x, c->dst_desc, 1);
        if (rs < 0 || ws < 0 || rs >= c->nsrc || ws >= c->ndst)
            return -1;
        memcpy(c->dst[ws], c->src[rs], (size_t)c->nbytes);
    }
    return 0;
}

typedef struct af_dest {
    int64_t task;
    af_inbox *inbox;
} af_dest;

typedef struct af_router {
    af_dest *d;
    int32_t n;
    /* fault injection (tests): lose the first message of this type and piece between units */
    int drop_armed; /* read and cleared atomically: one loss, whichever unit meets it first */
    int drop_type;
    int64_t drop_piece;
    int64_t drop_dst; /* -2: to any task */
    /* a process unit's peers: records for their tasks go into their rings (ring_route.h) */
    ring_routes_t rings;
    int64_t ring_timeout_ns; /* how long a full ring may hold the loop (a bug: reported) */
} af_router;

/* 1 when `m` is the message to lose (and no other one will be). */
static inline int af_router_drops(af_router *r, const af_msg *m) {
    if (!__atomic_load_n(&r->drop_armed, __ATOMIC_ACQUIRE) || m->type != r->drop_type ||
        m->piece != r->drop_piece || m->src < 0 || (r->drop_dst != -2 && m->dst != r->drop_dst))
        return 0;
    int armed = 1;
    return __atomic_compare_exchange_n(&r->drop_armed, &armed, 0, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

static af_inbox *af_route_to(const af_router *r, int64_t task) {
    int32_t lo = 0, hi = r->n;
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (r->d[mid].task < task)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n && r->d[lo].task == task ? r->d[lo].inbox : NULL;
}

/* The ring of the peer unit process hosting `task`, or NULL (ring_route.h). */
static inline void *af_route_ring(const af_router *r, int64_t task) {
    return r->rings.n ? (void *)ring_route(&r->rings, task) : NULL;
}

/* One record into a peer's ring: 0, ETIMEDOUT, EINTR or EPROTO. */
static inline int af_ring_put(const af_router *r, void *outlet, const af_msg *m) {
    return ring_route_send((ring_outlet_t *)outlet, m, r->ring_timeout_ns);
}

static inline void af_router_set_rings(af_router *r, const int64_t *tasks, void **outlets,
                                       int32_t n, int64_t timeout_ns) {
    r->rings.tasks = tasks;
    r->rings.outlets = (ring_outlet_t **)outlets;
    r->rings.n = n;
    r->ring_timeout_ns = timeout_ns;
}

#endif
