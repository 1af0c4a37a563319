/* kinds.h -- what each actor kind changes of the base rules: one ops row per kind.
 *
 * The C twin of protocol/kind_states.py and protocol/mainjob.py.  A kind is a row of
 * AF_KINDS: its name (as ``blocked_on()["kind"]`` says it) and the hooks it refines; a NULL
 * hook takes the base rule.  Adding a kind = one row here (+ its state in actor.h, its table
 * entry in unit_core.pyx) and its Python reference in protocol/.
 */
#ifndef AF_KINDS_H
#define AF_KINDS_H

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

static int af_wait_cmd(af_actor *a, const af_msg *m, const char *label, af_err *e) {
    (void)label;
    af_gen *g = &a->k.gen;
    if (m->cmd == AF_CMD_SEND) {
        if (g->closed)
            return af_fail(e, "task %" PRId64 " (wait_and_send_ids): id sent after close",
                           a->task_id);
        if (m->aux < 0 || m->aux >= g->num_cs)
            return af_fail(e, "task %" PRId64 " (wait_and_send_ids): critical section id %"
                           PRId64 " is not in [0, %" PRId64 ")", a->task_id, m->aux, g->num_cs);
        int64_t *slot = (int64_t *)af_ring_push(&g->ids);
        if (slot == NULL)
            return af_fail(e, "task %" PRId64 " (wait_and_send_ids): too many ids queued",
                           a->task_id);
        *slot = m->aux;
        g->budget = (g->budget == AF_NONE ? 0 : g->budget) + 1;
        return 0;
    }
    if (m->cmd == AF_CMD_CLOSE) {
        g->closed = 1;
        return 0;
    }
    return af_base_cmd(a, m, "wait_and_send_ids", e);
}

static int af_wait_start(af_actor *a, af_act *x, af_err *e) {
    af_gen_start(a, x, e);
    af_gen *g = &a->k.gen;
    x->info_kind = AF_INFO_CS;
    x->info[0] = *(int64_t *)af_ring_front(&g->ids);
    af_ring_pop(&g->ids);
    return 0;
}

static int af_cs_finish_ready(af_actor *a, af_act *x, af_out *o, af_err *e) {
    /* READY of the written regst carrying the act's critical-section id, then the ACKs */
    af_slotref *w = af_act_writes(x);
    int64_t cs = x->info_kind == AF_INFO_CS ? x->info[0] : x->info[1];
    for (int32_t i = 0; i < x->nwrites; i++)
        if (af_send_ready(a, o, &a->prod[af_produced_find(a, w[i].desc)], w[i].slot, x->piece,
                          cs, e))
            return -1;
    for (int32_t i = 0; i < x->nreads; i++)
        if (af_send_ack(a, o, &a->cons[af_consumed_find(a, x->rw[i].desc)], x->rw[i].slot,
                        x->piece, e))
            return -1;
    return 0;
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

/* -- reentrant_lock: admits ids whose critical section conflicts with none running ---------- */
static af_cspair *af_running(af_lock *k, int64_t cs, int create) {
    for (int32_t i = 0; i < k->nrunning; i++)
        if (k->running[i].cs == cs)
            return &k->running[i];
    if (!create)
        return NULL;
    if (k->nrunning == k->caprunning) {
        int32_t cap = k->caprunning ? 2 * k->caprunning : 4;
        af_cspair *r = (af_cspair *)realloc(k->running, (size_t)cap * sizeof(af_cspair));
        if (r == NULL)
            return NULL;
        k->running = r;
        k->caprunning = cap;
    }
    af_cspair *p = &k->running[k->nrunning++];
    p->cs = cs;
    p->n = 0;
    return p;
}

static int af_admissible(af_lock *k, int64_t cs) {
    for (int32_t i = 0; i < k->nconf; i++) {
        if (k->conf_cs[i] != cs)
            continue;
        for (int32_t j = k->conf_off[i]; j < k->conf_off[i + 1]; j++) {
            af_cspair *r = af_running(k, k->conf_with[j], 0);
            if (r != NULL && r->n)
                return 0;
        }
        return 1;
    }
    return 1;
}

static int af_lock_can_act(af_actor *a, af_err *e) {
    (void)e;
    af_lock *k = &a->k.lock;
    if (a->cons[k->end].ready.len)
        return 1;
    af_consumed *s = &a->cons[k->start];
    if (!s->ready.len || !a->prod[0].free_q.len)
        return 0;
    return af_admissible(k, af_ready_front(s)->aux);
}

static int af_lock_start(af_actor *a, af_act *x, af_err *e) {
    af_lock *k = &a->k.lock;
    af_consumed *end = &a->cons[k->end];
    if (end->ready.len) {
        af_ready r = *af_ready_front(end);
        af_ring_pop(&end->ready);
        af_cspair *run = af_running(k, r.aux, 0);
        if (run == NULL || run->n <= 0)
            return af_fail(e, "task %" PRId64 " (reentrant_lock): critical section %" PRId64
                           " returned but it is not running", a->task_id, r.aux);
        run->n--;
        k->returned++;
        x->piece = r.piece;
        af_act_read(x, end->desc, r.slot);
        x->info_kind = AF_INFO_RETURN;
        x->info[1] = r.aux;
        return 0;
    }
    af_consumed *s = &a->cons[k->start];
    af_ready r = *af_ready_front(s);
    af_ring_pop(&s->ready);
    af_cspair *run = af_running(k, r.aux, 1);
    if (run == NULL)
        return af_fail(e, "task %" PRId64 " (reentrant_lock): out of memory", a->task_id);
    run->n++;
    k->admitted++;
    x->piece = r.piece;
    af_act_read(x, s->desc, r.slot);
    af_act_write(x, a->prod[0].desc, af_free_pop(&a->prod[0]));
    x->info_kind = AF_INFO_ADMIT;
    x->info[1] = r.aux;
    return 0;
}

static int af_lock_input_done(af_actor *a, const char *label, af_err *e) {
    (void)label;
    (void)e;
    af_lock *k = &a->k.lock;
    return a->cons[k->start].eord && !a->cons[k->start].ready.len &&
           !a->cons[k->end].ready.len && k->admitted == k->returned;
}

/* -- case: routes each admitted id to its critical section's output ----------------------- */
static int af_case_target(af_actor *a, int64_t cs, af_err *e) {
    af_case *k = &a->k.kcase;
    if (cs < 0 || cs >= k->nout)
        return af_fail(e, "task %" PRId64 " (case): critical section id %" PRId64
                       " is not in [0, %d)", a->task_id, cs, (int)k->nout);
    return k->out_of[cs];
}

static int af_case_can_act(af_actor *a, af_err *e) {
    af_consumed *c = &a->cons[0];
    if (!c->ready.len)
        return 0;
    int t = af_case_target(a, af_ready_front(c)->aux, e);
    if (t < 0)
        return -1;
    return a->prod[t].free_q.len > 0;
}

static int af_case_start(af_actor *a, af_act *x, af_err *e) {
    af_consumed *c = &a->cons[0];
    af_ready r = *af_ready_front(c);
    af_ring_pop(&c->ready);
    int t = af_case_target(a, r.aux, e);
    if (t < 0)
        return -1;
    af_act_read(x, c->desc, r.slot);
    af_act_write(x, a->prod[t].desc, af_free_pop(&a->prod[t]));
    x->piece = a->k.kcase.instances[r.aux]++;
    x->info_kind = AF_INFO_CS;
    x->info[0] = r.aux;
    return 0;
}

/* -- esac: returns an id once every sink tick of its critical section finished ------------ */
static int af_esac_ready_group(af_actor *a) {
    af_esac *k = &a->k.esac;
    for (int32_t g = 0; g < k->ngroups; g++) {
        int all = 1;
        for (int32_t j = k->group_off[g]; j < k->group_off[g + 1]; j++)
            if (!a->cons[k->group_cons[j]].ready.len)
                all = 0;
        if (all)
            return g;
    }
    return -1;
}

static int af_esac_can_act(af_actor *a, af_err *e) {
    (void)e;
    return a->prod[0].free_q.len > 0 && af_esac_ready_group(a) >= 0;
}

static int af_esac_start(af_actor *a, af_act *x, af_err *e) {
    (void)e;
    af_esac *k = &a->k.esac;
    int g = af_esac_ready_group(a);
    x->piece = -1;
    for (int32_t j = k->group_off[g]; j < k->group_off[g + 1]; j++) {
        af_consumed *c = &a->cons[k->group_cons[j]];
        af_ready *r = af_ready_front(c);
        af_act_read(x, c->desc, r->slot);
        x->piece = r->piece;
        af_ring_pop(&c->ready);
    }
    af_act_write(x, a->prod[0].desc, af_free_pop(&a->prod[0]));
    x->info_kind = AF_INFO_CS;
    x->info[0] = k->group_cs[g];
    return 0;
}

static int af_esac_input_done(af_actor *a, const char *label, af_err *e) {
    (void)label;
    for (int32_t i = 0; i < a->ncons; i++)
        if (!a->cons[i].eord)
            return 0;
    for (int32_t i = 0; i < a->ncons; i++)
        if (a->cons[i].ready.len) {
            char q[256];
            af_queued_repr(a, q, sizeof q);
            return af_fail(e, "task %" PRId64 " (esac): every sink tick ended but regsts are "
                           "left on descs %s: its machines finished different numbers of "
                           "pieces", a->task_id, q);
        }
    return 1;
}

/* -- the table ------------------------------------------------------------------------------ */
static const af_kind_ops AF_KINDS[AF_NKINDS] = {
    [AF_KIND_NORMAL] = {"normal", NULL, NULL, NULL, NULL, NULL, NULL, 0},
    [AF_KIND_INPUT] = {"input", af_input_cmd, af_gen_can_act, af_gen_start, NULL,
                       af_gen_input_done, NULL, 0},
    [AF_KIND_SOURCE] = {"source", af_source_cmd, af_gen_can_act, af_gen_start, NULL,
                        af_gen_input_done, NULL, 0},
    [AF_KIND_OUTPUT] = {"output", NULL, NULL, NULL, NULL, NULL, NULL, 0},
    [AF_KIND_TICK] = {"tick", NULL, NULL, NULL, NULL, NULL, NULL, 0},
    [AF_KIND_ACC] = {"acc", NULL, af_acc_can_act, af_acc_start, af_acc_finish, NULL,
                     af_acc_before_eord, 0},
    [AF_KIND_REPEAT] = {"repeat", NULL, NULL, af_repeat_start, af_repeat_finish, NULL, NULL, 0},
    [AF_KIND_WAIT_IDS] = {"wait_and_send_ids", af_wait_cmd, af_gen_can_act, af_wait_start,
                          af_cs_finish_ready, af_gen_input_done, NULL, 0},
    [AF_KIND_LOCK] = {"reentrant_lock", NULL, af_lock_can_act, af_lock_start,
                      af_cs_finish_ready, af_lock_input_done, NULL, 1},
    [AF_KIND_CASE] = {"case", NULL, af_case_can_act, af_case_start, NULL, NULL, NULL, 0},
    [AF_KIND_ESAC] = {"esac", NULL, af_esac_can_act, af_esac_start, af_cs_finish_ready,
                      af_esac_input_done, NULL, 0},
    [AF_KIND_CALLBACK] = {"callback_tick", NULL, NULL, NULL, NULL, NULL, NULL, 0},
};

#endif
