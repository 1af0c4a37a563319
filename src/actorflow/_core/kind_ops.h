/* kind_ops.h -- what a kind may change of the base rules (one row of hooks), and the base
 * rules themselves (protocol/state.py's ActorState: the ``normal`` kind as it is).
 */
#ifndef AF_KIND_OPS_H
#define AF_KIND_OPS_H

#include "sm.h"

typedef struct af_kind_ops {
    const char *name;
    int (*on_cmd)(af_actor *a, const af_msg *m, const char *label, af_err *e);
    int (*can_act)(af_actor *a, af_err *e);                       /* 1 / 0 / -1 */
    int (*start_act)(af_actor *a, af_act *x, af_err *e);          /* 0 / -1 */
    int (*finish)(af_actor *a, af_act *x, af_out *o, af_err *e);  /* 0 / -1 */
    int (*input_done)(af_actor *a, const char *label, af_err *e); /* 1 / 0 / -1 */
    int (*before_eord)(af_actor *a);                              /* 1: one more act possible */
    int lock_progress; /* the reentrant lock outlives its EORD (see af_progress) */
} af_kind_ops;

/* -- the base rules ------------------------------------------------------------------------ */
static int af_base_cmd(af_actor *a, const af_msg *m, const char *kind, af_err *e) {
    return af_fail(e, "task %" PRId64 " (%s) does not take command '%s'", a->task_id, kind,
                   m->cmd < AF_NCMDS ? AF_CMD_NAMES[m->cmd] : "?");
}

static int af_base_can_act(af_actor *a, af_err *e) {
    (void)e;
    for (int32_t i = 0; i < a->ncons; i++)
        if (a->cons[i].ready.len == 0)
            return 0;
    for (int32_t i = 0; i < a->nprod; i++)
        if (a->prod[i].free_q.len == 0)
            return 0;
    return a->ncons > 0;
}

static int af_base_start(af_actor *a, af_act *x, af_err *e) {
    (void)e;
    x->piece = af_ready_front(&a->cons[0])->piece;
    for (int32_t i = 0; i < a->ncons; i++) {
        af_consumed *c = &a->cons[i];
        af_act_read(x, c->desc, af_ready_front(c)->slot);
        af_ring_pop(&c->ready);
    }
    for (int32_t i = 0; i < a->nprod; i++)
        af_act_write(x, a->prod[i].desc, af_free_pop(&a->prod[i]));
    return 0;
}

static int af_base_finish(af_actor *a, af_act *x, af_out *o, af_err *e) {
    af_slotref *w = af_act_writes(x);
    for (int32_t i = 0; i < x->nwrites; i++)
        if (af_send_ready(a, o, &a->prod[af_produced_find(a, w[i].desc)], w[i].slot, x->piece,
                          AF_NONE, e))
            return -1;
    for (int32_t i = 0; i < x->nreads; i++)
        if (af_send_ack(a, o, &a->cons[af_consumed_find(a, x->rw[i].desc)], x->rw[i].slot,
                        x->piece, e))
            return -1;
    return 0;
}

static int af_base_input_done(af_actor *a, const char *label, af_err *e) {
    if (a->ncons == 0)
        return 0;
    int32_t left = 0;
    for (int32_t i = 0; i < a->ncons; i++) {
        if (!a->cons[i].eord)
            return 0;
        left += a->cons[i].ready.len > 0;
    }
    if (left == 0)
        return 1;
    if (left == a->ncons)
        return 0; /* blocked on a free output regst; acts again after an ACK */
    char q[256];
    af_queued_repr(a, q, sizeof q);
    return af_fail(e, "task %" PRId64 " (%s): every input ended (EORD) but regsts are still "
                   "queued on descs %s while others are empty: its inputs carried different "
                   "piece counts", a->task_id, label, q);
}

#endif
