/* step.h -- one actor's step: a message in (af_handle) or an act done (af_act_done),
 * the actions out.  protocol/state.py's ActorState.handle / act_done / _progress.
 */
#ifndef AF_STEP_H
#define AF_STEP_H

#include "kinds.h"

static inline const af_kind_ops *af_ops(const af_actor *a) { return &AF_KINDS[a->kind]; }

static int af_can_act(af_actor *a, af_err *e) {
    const af_kind_ops *k = af_ops(a);
    return k->can_act ? k->can_act(a, e) : af_base_can_act(a, e);
}

static int af_input_done(af_actor *a, const char *label, af_err *e) {
    const af_kind_ops *k = af_ops(a);
    return k->input_done ? k->input_done(a, label, e) : af_base_input_done(a, label, e);
}

static int af_all_prod_free(const af_actor *a) {
    for (int32_t i = 0; i < a->nprod; i++)
        if (!af_all_free(&a->prod[i]))
            return 0;
    return 1;
}

/* Start every act the state allows (kind's can_act/start_act), appending AF_A_ACT actions. */
static int af_start_acts(af_actor *a, af_out *o, af_err *e) {
    const af_kind_ops *k = af_ops(a);
    for (;;) {
        int can = af_can_act(a, e);
        if (can < 0)
            return -1;
        if (!can)
            return 0;
        int32_t index = -1;
        af_act *x = af_act_new(a, &index);
        if (x == NULL)
            return af_fail(e, "task %" PRId64 ": out of memory", a->task_id);
        if ((k->start_act ? k->start_act(a, x, e) : af_base_start(a, x, e)) < 0)
            return -1;
        x->used = 1;
        a->acts++;
        a->ninflight++;
        af_action *y = af_out_add(o, AF_A_ACT);
        if (y == NULL)
            return af_fail(e, "task %" PRId64 ": out of memory", a->task_id);
        y->act = index;
    }
}

static int af_exit(af_actor *a, af_out *o, af_err *e) {
    a->status = AF_EXITED;
    if (af_out_add(o, AF_A_EXIT) == NULL)
        return af_fail(e, "task %" PRId64 ": out of memory", a->task_id);
    return 0;
}

/* ActorState._progress (and ReentrantLockState._progress for the lock). */
static int af_progress(af_actor *a, af_out *o, const char *label, af_err *e) {
    const af_kind_ops *k = af_ops(a);
    if (k->lock_progress) { /* the lock outlives its EORD: it still takes the back edge */
        af_consumed *end = &a->cons[a->k.lock.end];
        if (a->status == AF_RUNNING) {
            if (af_start_acts(a, o, e))
                return -1;
            if (!a->ninflight) {
                int done = af_input_done(a, label, e);
                if (done < 0)
                    return -1;
                if (done) {
                    if (af_send_eord(a, o, e))
                        return -1;
                    a->status = AF_ZOMBIE;
                }
            }
        }
        if (a->status == AF_ZOMBIE && end->eord && !end->ready.len && !a->ninflight &&
            af_all_prod_free(a))
            return af_exit(a, o, e);
        return 0;
    }
    if (a->status == AF_RUNNING) {
        for (;;) {
            if (af_start_acts(a, o, e))
                return -1;
            if (a->ninflight)
                return 0;
            int done = af_input_done(a, label, e);
            if (done < 0)
                return -1;
            if (!done)
                return 0;
            if (!(k->before_eord && k->before_eord(a))) /* it may allow one more act */
                break;
        }
        if (af_send_eord(a, o, e))
            return -1;
        a->status = AF_ZOMBIE;
    }
    if (a->status == AF_ZOMBIE && !a->ninflight && af_all_prod_free(a))
        return af_exit(a, o, e);
    return 0;
}

static int af_handle(af_actor *a, const af_msg *m, af_out *o, const char *label, af_err *e) {
    if (a->status == AF_EXITED) {
        char r[160];
        af_msg_repr(m, r, sizeof r);
        return af_fail(e, "task %" PRId64 " (%s) got %s after it exited", a->task_id, label, r);
    }
    int i;
    af_consumed *c;
    switch (m->type) {
    case AF_READY:
        i = af_consumed_find(a, m->desc);
        if (i < 0)
            return af_fail(e, "task %" PRId64 " (%s) got READY for regst desc %" PRId64
                           ", which it does not consume", a->task_id, label, m->desc);
        c = &a->cons[i];
        if (c->eord)
            return af_fail(e, "task %" PRId64 ": READY on regst desc %" PRId64 " after its EORD",
                           a->task_id, c->desc);
        if (m->seq != c->next_seq)
            return af_fail(e, "task %" PRId64 ": regst desc %" PRId64 " message out of order "
                           "(seq %" PRId64 ", expected %" PRId64 ")", a->task_id, c->desc,
                           m->seq, c->next_seq);
        c->next_seq++;
        af_ready *r = (af_ready *)af_ring_push(&c->ready);
        if (r == NULL)
            return af_fail(e, "task %" PRId64 ": regst desc %" PRId64 " has too many ready "
                           "regsts queued", a->task_id, c->desc);
        r->slot = m->slot;
        r->piece = m->piece;
        r->aux = m->aux;
        break;
    case AF_ACK:
        if (af_on_ack(a, m, label, e))
            return -1;
        break;
    case AF_EORD:
        i = af_consumed_find(a, m->desc);
        if (i < 0)
            return af_fail(e, "task %" PRId64 " (%s) got EORD for regst desc %" PRId64
                           ", which it does not consume", a->task_id, label, m->desc);
        c = &a->cons[i];
        if (c->eord) /* its seq may well be the next one: only this says it is a repeat */
            return af_fail(e, "task %" PRId64 ": a second EORD on regst desc %" PRId64,
                           a->task_id, c->desc);
        if (m->seq != c->next_seq)
            return af_fail(e, "task %" PRId64 ": EORD on regst desc %" PRId64 " overtook a "
                           "READY (seq %" PRId64 ", expected %" PRId64 ")", a->task_id, c->desc,
                           m->seq, c->next_seq);
        c->eord = 1; /* no seq is read after it: eord refuses every later message */
        break;
    case AF_CMD:
        if (af_ops(a)->on_cmd == NULL) {
            if (af_base_cmd(a, m, af_ops(a)->name, e))
                return -1;
        } else if (af_ops(a)->on_cmd(a, m, label, e)) {
            return -1;
        }
        break;
    default:
        return af_fail(e, "task %" PRId64 ": unknown message type %d", a->task_id, (int)m->type);
    }
    return af_progress(a, o, label, e);
}

/* The act `act_id` finished: its READYs/ACKs, then whatever can run next. */
static int af_act_done(af_actor *a, int64_t act_id, af_out *o, const char *label, af_err *e) {
    af_act *x = NULL;
    for (int32_t i = 0; i < a->npool; i++)
        if (a->pool[i].used && a->pool[i].act_id == act_id) {
            x = &a->pool[i];
            break;
        }
    if (x == NULL)
        return af_fail(e, "task %" PRId64 ": act %" PRId64 " completed twice", a->task_id,
                       act_id);
    x->used = 0;
    a->ninflight--;
    const af_kind_ops *k = af_ops(a);
    if ((k->finish ? k->finish(a, x, o, e) : af_base_finish(a, x, o, e)) < 0)
        return -1;
    return af_progress(a, o, label, e);
}

#endif
