/* kinds_flow.h -- the data kinds that refine the base rules: generators (source, input: a
 * piece budget), acc (N pieces in, 1 out), repeat (1 in, N out).  protocol/kind_states.py.
 */
#ifndef AF_KINDS_FLOW_H
#define AF_KINDS_FLOW_H

#include "kind_ops.h"

/* -- generators: source, input, wait_and_send_ids ------------------------------------------- */
static int af_gen_can_act(af_actor *a, af_err *e) {
    (void)e;
    af_gen *g = &a->k.gen;
    if (g->budget != AF_NONE && g->pieces_made >= g->budget)
        return 0;
    for (int32_t i = 0; i < a->ncons; i++)
        if (a->cons[i].ready.len == 0)
            return 0;
    for (int32_t i = 0; i < a->nprod; i++)
        if (a->prod[i].free_q.len == 0)
            return 0;
    return 1;
}

static int af_gen_start(af_actor *a, af_act *x, af_err *e) {
    (void)e;
    for (int32_t i = 0; i < a->ncons; i++) {
        af_consumed *c = &a->cons[i];
        af_act_read(x, c->desc, af_ready_front(c)->slot);
        af_ring_pop(&c->ready);
    }
    for (int32_t i = 0; i < a->nprod; i++)
        af_act_write(x, a->prod[i].desc, af_free_pop(&a->prod[i]));
    x->piece = a->k.gen.pieces_made++;
    return 0;
}

static int af_gen_input_done(af_actor *a, const char *label, af_err *e) {
    (void)label;
    (void)e;
    af_gen *g = &a->k.gen;
    if (a->ncons) {
        int ended = 1;
        for (int32_t i = 0; i < a->ncons; i++)
            if (!a->cons[i].eord || a->cons[i].ready.len)
                ended = 0;
        if (ended)
            return 1;
    }
    if (g->gated) /* a multi-job plan's identity tick paces it: only the gate's EORD ends it */
        return 0;
    return g->closed && (g->budget == AF_NONE || g->pieces_made >= g->budget);
}

static int af_source_cmd(af_actor *a, const af_msg *m, const char *label, af_err *e) {
    (void)label;
    af_gen *g = &a->k.gen;
    if (m->cmd == AF_CMD_START) {
        int64_t n = m->aux != AF_NONE ? m->aux : g->piece_num;
        g->budget = n;
        g->closed = n != AF_NONE;
        return 0;
    }
    if (m->cmd == AF_CMD_STOP) {
        if (g->gated)
            return 0; /* its gate's EORD ends it, after every admitted piece */
        g->budget = (g->budget == AF_NONE || g->pieces_made < g->budget) ? g->pieces_made
                                                                         : g->budget;
        g->closed = 1;
        return 0;
    }
    return af_base_cmd(a, m, "source", e);
}

static int af_input_cmd(af_actor *a, const af_msg *m, const char *label, af_err *e) {
    af_gen *g = &a->k.gen;
    if (m->cmd == AF_CMD_FEED) {
        if (g->closed)
            return af_fail(e, "task %" PRId64 " (input %s): fed after close", a->task_id, label);
        g->budget = (g->budget == AF_NONE ? 0 : g->budget) + (m->aux == AF_NONE ? 1 : m->aux);
        return 0;
    }
    if (m->cmd == AF_CMD_CLOSE) {
        g->closed = 1;
        return 0;
    }
    return af_base_cmd(a, m, "input", e);
}

/* -- acc: N pieces in, 1 out -------------------------------------------------------------- */
static int af_acc_can_act(af_actor *a, af_err *e) {
    (void)e;
    af_acc *k = &a->k.acc;
    if (k->flush)
        return k->held >= 0;
    return a->cons[0].ready.len > 0 && (k->held >= 0 || a->prod[0].free_q.len > 0);
}

static int af_acc_start(af_actor *a, af_act *x, af_err *e) {
    (void)e;
    af_acc *k = &a->k.acc;
    af_produced *p = &a->prod[0];
    x->info_kind = AF_INFO_ACC;
    x->piece = k->groups;
    if (k->flush) { /* emit the partial group, no input read */
        k->flush = 0;
        af_act_write(x, p->desc, k->held);
        x->info[0] = 0;
        x->info[1] = 1;
        x->info[2] = -1;
        k->held = -1;
        k->count = 0;
        k->groups++;
        return 0;
    }
    af_consumed *c = &a->cons[0];
    int first = k->held < 0;
    if (first)
        k->held = af_free_pop(p);
    af_ready *r = af_ready_front(c);
    af_act_read(x, c->desc, r->slot);
    x->info[2] = r->piece;
    af_ring_pop(&c->ready);
    k->count++;
    int emit = k->count == k->acc_num;
    af_act_write(x, p->desc, k->held);
    x->info[0] = first;
    x->info[1] = emit;
    if (emit) {
        k->held = -1;
        k->count = 0;
        k->groups++;
    }
    return 0;
}

static int af_acc_finish(af_actor *a, af_act *x, af_out *o, af_err *e) {
    if (x->info[1]) {
        af_slotref *w = af_act_writes(x);
        if (af_send_ready(a, o, &a->prod[0], w[0].slot, x->piece, AF_NONE, e))
            return -1;
    }
    for (int32_t i = 0; i < x->nreads; i++)
        if (af_send_ack(a, o, &a->cons[0], x->rw[i].slot, x->info[2], e))
            return -1;
    return 0;
}

static int af_acc_before_eord(af_actor *a) {
    af_acc *k = &a->k.acc;
    if (k->held >= 0 && !k->flush) {
        k->flush = 1;
        return 1;
    }
    return 0;
}

/* -- repeat: 1 piece in, N out ------------------------------------------------------------ */
static int af_repeat_start(af_actor *a, af_act *x, af_err *e) {
    (void)e;
    af_rep *k = &a->k.rep;
    af_consumed *c = &a->cons[0];
    af_ready *r = af_ready_front(c);
    int32_t slot = r->slot;
    int64_t in_piece = r->piece;
    k->used++;
    int last = k->used == k->repeat_num;
    if (last) {
        af_ring_pop(&c->ready);
        k->used = 0;
    }
    af_act_read(x, c->desc, slot);
    af_act_write(x, a->prod[0].desc, af_free_pop(&a->prod[0]));
    x->piece = k->made++;
    x->info_kind = AF_INFO_REPEAT;
    x->info[0] = last;
    x->info[1] = in_piece;
    return 0;
}

static int af_repeat_finish(af_actor *a, af_act *x, af_out *o, af_err *e) {
    if (af_send_ready(a, o, &a->prod[0], af_act_writes(x)[0].slot, x->piece, AF_NONE, e))
        return -1;
    if (x->info[0] && af_send_ack(a, o, &a->cons[0], x->rw[0].slot, x->info[1], e))
        return -1;
    return 0;
}

#endif
