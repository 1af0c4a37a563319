/* unit.h -- the actors of one unit and the local queue between them (protocol/unit_core.py).
 *
 * A unit core takes message records pushed to it, hands each to its actor (the local queue
 * first: messages between its own actors never leave it), and stops as soon as a message
 * has started an act, so the runtime runs the act before the next message is looked at.
 * What it hands back (af_out) is what only the runtime can do: messages for other units,
 * acts to launch, exits.
 */
#ifndef AF_UNIT_H
#define AF_UNIT_H

#include "step.h"

typedef struct af_route {
    int64_t task;
    int32_t index;
} af_route;

typedef struct af_unit {
    af_actor *actors;
    char **labels;      /* per actor: its task label, for error messages */
    int32_t n, live;
    af_route *by_task;  /* sorted by task id */
    af_ring local;      /* of af_msg: between this unit's actors, handled first */
    af_ring pushed;     /* of af_msg: pushed by the runtime, not handled yet */
    af_out out;
    af_err err;
    int32_t err_unit;   /* 1: err is about the unit (the caller prefixes its name) */
    /* trace: every message handed to an actor (recv) and every message an actor sent
       (sent), in order, for the runtime's recorder; off when `trace` is 0 */
    int trace;
    af_out seen;        /* AF_A_MSG entries; act = 0 recv, 1 sent to another unit, 2 local */
} af_unit;

static int af_route_cmp(const void *x, const void *y) {
    int64_t a = ((const af_route *)x)->task, b = ((const af_route *)y)->task;
    return (a > b) - (a < b);
}

static int32_t af_unit_find(const af_unit *u, int64_t task) {
    int32_t lo = 0, hi = u->n;
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (u->by_task[mid].task < task)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < u->n && u->by_task[lo].task == task ? u->by_task[lo].index : -1;
}

/* After the actors are filled in: the task -> actor index lookup. */
static int af_unit_index(af_unit *u) {
    u->by_task = (af_route *)malloc((size_t)(u->n ? u->n : 1) * sizeof(af_route));
    if (u->by_task == NULL)
        return -1;
    for (int32_t i = 0; i < u->n; i++) {
        u->by_task[i].task = u->actors[i].task_id;
        u->by_task[i].index = i;
    }
    qsort(u->by_task, (size_t)u->n, sizeof(af_route), af_route_cmp);
    u->live = u->n;
    af_ring_init(&u->local, sizeof(af_msg));
    af_ring_init(&u->pushed, sizeof(af_msg));
    return 0;
}

static int af_seen(af_unit *u, const af_msg *m, int32_t sent) {
    af_action *x = af_out_add(&u->seen, AF_A_MSG);
    if (x == NULL)
        return af_fail(&u->err, "out of memory");
    x->act = sent;
    x->msg = *m;
    return 0;
}

/* Move the actions appended from `from` on: local messages to the local queue, the rest
   stay in `out` (compacted in order).  Returns 1 when they start an act, -1 on error. */
static int af_unit_carry(af_unit *u, int32_t from) {
    af_out *o = &u->out;
    int started = 0;
    int32_t keep = from;
    for (int32_t i = from; i < o->n; i++) {
        af_action *x = &o->a[i];
        if (x->kind == AF_A_MSG) {
            int local = af_unit_find(u, x->msg.dst) >= 0;
            if (u->trace && af_seen(u, &x->msg, local ? 2 : 1))
                return -1;
            if (local) {
                af_msg *m = (af_msg *)af_ring_push(&u->local);
                if (m == NULL)
                    return af_fail(&u->err, "the local queue overflowed");
                *m = x->msg;
                continue;
            }
        } else if (x->kind == AF_A_ACT) {
            started = 1;
        } else {
            u->live--;
        }
        if (keep != i)
            o->a[keep] = *x;
        keep++;
    }
    o->n = keep;
    return started;
}

/* Handle queued messages (local first) until one starts an act or none is left. */
static int af_unit_run(af_unit *u, int started) {
    while (!started) {
        af_msg m;
        if (u->local.len) {
            m = *(af_msg *)af_ring_front(&u->local);
            af_ring_pop(&u->local);
        } else if (u->pushed.len) {
            m = *(af_msg *)af_ring_front(&u->pushed);
            af_ring_pop(&u->pushed);
        } else {
            return 0;
        }
        int32_t i = af_unit_find(u, m.dst);
        if (i < 0) {
            char r[160];
            af_msg_repr(&m, r, sizeof r);
            u->err_unit = 1;
            return af_fail(&u->err, "got %s for a task it does not host", r);
        }
        if (u->trace && af_seen(u, &m, 0))
            return -1;
        int32_t from = u->out.n;
        u->out.actor = i;
        if (af_handle(&u->actors[i], &m, &u->out, u->labels[i], &u->err))
            return -1;
        started = af_unit_carry(u, from);
        if (started < 0)
            return -1;
    }
    return 0;
}

/* push: queue `n` records, then run.  The caller clears u->out before. */
static int af_unit_push(af_unit *u, const af_msg *msgs, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        af_msg *m = (af_msg *)af_ring_push(&u->pushed);
        if (m == NULL)
            return af_fail(&u->err, "too many messages pushed");
        *m = msgs[i];
    }
    return af_unit_run(u, 0);
}

/* completed: one finished act (task, act id) at a time; af_unit_run after the last. */
static int af_unit_done(af_unit *u, int64_t task, int64_t act_id, int *started) {
    int32_t i = af_unit_find(u, task);
    if (i < 0) {
        u->err_unit = 2;
        return af_fail(&u->err, "completed act of task %" PRId64 ", which it does not host",
                       task);
    }
    int32_t from = u->out.n;
    u->out.actor = i;
    if (af_act_done(&u->actors[i], act_id, &u->out, u->labels[i], &u->err))
        return -1;
    int s = af_unit_carry(u, from);
    if (s < 0)
        return -1;
    *started |= s;
    return 0;
}

static void af_actor_free(af_actor *a) {
    for (int32_t i = 0; i < a->nprod; i++) {
        af_produced *p = &a->prod[i];
        free(p->consumers);
        free(p->seq);
        free(p->held);
        af_ring_free(&p->free_q);
    }
    for (int32_t i = 0; i < a->ncons; i++)
        af_ring_free(&a->cons[i].ready);
    free(a->prod);
    free(a->cons);
    for (int32_t i = 0; i < a->npool; i++)
        free(a->pool[i].rw);
    free(a->pool);
    switch (a->kind) {
    case AF_KIND_INPUT:
    case AF_KIND_SOURCE:
    case AF_KIND_WAIT_IDS:
        af_ring_free(&a->k.gen.ids);
        break;
    case AF_KIND_LOCK:
        free(a->k.lock.conf_cs);
        free(a->k.lock.conf_off);
        free(a->k.lock.conf_with);
        free(a->k.lock.running);
        break;
    case AF_KIND_CASE:
        free(a->k.kcase.out_of);
        free(a->k.kcase.instances);
        break;
    case AF_KIND_ESAC:
        free(a->k.esac.group_cs);
        free(a->k.esac.group_off);
        free(a->k.esac.group_cons);
        break;
    default:
        break;
    }
}

static void af_unit_free(af_unit *u) {
    if (u->actors != NULL)
        for (int32_t i = 0; i < u->n; i++)
            af_actor_free(&u->actors[i]);
    if (u->labels != NULL)
        for (int32_t i = 0; i < u->n; i++)
            free(u->labels[i]);
    free(u->actors);
    free(u->labels);
    free(u->by_task);
    af_ring_free(&u->local);
    af_ring_free(&u->pushed);
    free(u->out.a);
    free(u->seen.a);
    memset(u, 0, sizeof *u);
}

#endif
