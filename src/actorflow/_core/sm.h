/* sm.h -- the base rules of the actor protocol (protocol/state.py), in C.
 *
 * Rules (docs/architecture.md, "The actor protocol and the unit loop"): act when every consumed desc has a ready regst
 * and every produced desc a free one; after an act, READY to every consumer of each written
 * regst and ACK for each read one; an ACK frees a regst once every consumer acked it; EORD
 * once every input ended and nothing is in flight, then the zombie state until every
 * produced regst is free, then exit.  Kinds change parts of this through the hooks of
 * kinds.h.  Every function returns -1 with `err` set on a protocol violation, with the same
 * words as the Python reference.
 */
#ifndef AF_SM_H
#define AF_SM_H

#include <inttypes.h>

#include "actor.h"
#include "buf.h"

enum { AF_A_MSG = 0, AF_A_ACT = 1, AF_A_EXIT = 2 };

typedef struct af_action {
    int32_t kind;  /* AF_A_* */
    int32_t actor; /* index of the actor in its unit */
    int32_t act;   /* AF_A_ACT: index into the actor's act pool */
    af_msg msg;    /* AF_A_MSG */
} af_action;

/* the actions of one call, in the order they arose */
typedef struct af_out {
    af_action *a;
    int32_t n, cap;
    int32_t actor; /* the actor whose actions are being appended */
} af_out;

static af_action *af_out_add(af_out *o, int32_t kind) {
    if (o->n == o->cap) {
        int32_t cap = o->cap ? o->cap * 2 : 64;
        af_action *a = (af_action *)realloc(o->a, (size_t)cap * sizeof(af_action));
        if (a == NULL)
            return NULL;
        o->a = a;
        o->cap = cap;
    }
    af_action *x = &o->a[o->n++];
    x->kind = kind;
    x->actor = o->actor;
    x->act = -1;
    return x;
}

static const char *const AF_TYPE_NAMES[] = {"READY", "ACK", "EORD", "CMD"};
static const char *const AF_CMD_NAMES[] = {"", "start", "stop", "feed", "close", "send"};

/* Msg.__repr__ of protocol/messages.py */
static void af_msg_repr(const af_msg *m, char *buf, size_t n) {
    if (m->type == AF_CMD) {
        const char *name = m->cmd < AF_NCMDS ? AF_CMD_NAMES[m->cmd] : "?";
        if (m->aux == AF_NONE)
            snprintf(buf, n, "Msg(CMD %s %" PRId64 "->%" PRId64 ")", name, m->src, m->dst);
        else
            snprintf(buf, n, "Msg(CMD %s %" PRId64 " %" PRId64 "->%" PRId64 ")", name, m->aux,
                     m->src, m->dst);
        return;
    }
    char aux[40] = "";
    if (m->aux != AF_NONE)
        snprintf(aux, sizeof aux, " aux=%" PRId64, m->aux);
    snprintf(buf, n,
             "Msg(%s %" PRId64 "->%" PRId64 " desc=%" PRId64 " slot=%d piece=%" PRId64
             " seq=%" PRId64 "%s)",
             m->type < AF_NTYPES ? AF_TYPE_NAMES[m->type] : "?", m->src, m->dst, m->desc,
             (int)m->slot, m->piece, m->seq, aux);
}

/* -- produced / consumed helpers ------------------------------------------------------- */
static inline int af_all_free(const af_produced *p) { return p->free_q.len == p->register_num; }

static inline int32_t af_free_pop(af_produced *p) {
    int32_t s = *(int32_t *)af_ring_front(&p->free_q);
    af_ring_pop(&p->free_q);
    return s;
}

static inline void af_free_push(af_produced *p, int32_t slot) {
    /* never grows: a desc holds at most register_num free slots (room made at build) */
    *(int32_t *)af_ring_push(&p->free_q) = slot;
}

static inline uint64_t *af_held(af_produced *p, int32_t slot) {
    return p->held + (size_t)slot * (size_t)p->words;
}

static int af_produced_find(const af_actor *a, int64_t desc) {
    for (int32_t i = 0; i < a->nprod; i++)
        if (a->prod[i].desc == desc)
            return i;
    return -1;
}

static int af_consumed_find(const af_actor *a, int64_t desc) {
    for (int32_t i = 0; i < a->ncons; i++)
        if (a->cons[i].desc == desc)
            return i;
    return -1;
}

static inline af_ready *af_ready_front(af_consumed *c) { return (af_ready *)af_ring_front(&c->ready); }

/* -- acts ---------------------------------------------------------------------------------- */
/* A free act record of `a` (grows the pool); NULL when out of memory. */
static af_act *af_act_new(af_actor *a, int32_t *index) {
    int32_t i = 0;
    while (i < a->npool && a->pool[i].used)
        i++;
    if (i == a->npool) {
        int32_t n = a->npool ? a->npool * 2 : 2;
        af_act *p = (af_act *)realloc(a->pool, (size_t)n * sizeof(af_act));
        if (p == NULL)
            return NULL;
        a->pool = p;
        int32_t room = a->ncons + a->nprod;
        for (int32_t j = a->npool; j < n; j++) {
            memset(&p[j], 0, sizeof(af_act));
            p[j].rw = (af_slotref *)calloc((size_t)(room ? room : 1), sizeof(af_slotref));
        }
        a->npool = n;
        for (int32_t j = i; j < n; j++)
            if (p[j].rw == NULL)
                return NULL;
    }
    *index = i;
    af_act *x = &a->pool[i];
    x->act_id = a->acts;
    x->piece = AF_NONE;
    x->nreads = x->nwrites = 0;
    x->info_kind = AF_INFO_NONE;
    x->info[0] = x->info[1] = x->info[2] = 0;
    return x;
}

static inline void af_act_read(af_act *x, int64_t desc, int32_t slot) {
    x->rw[x->nreads].desc = desc;
    x->rw[x->nreads].slot = slot;
    x->nreads++;
}

static inline void af_act_write(af_act *x, int64_t desc, int32_t slot) {
    af_slotref *w = &x->rw[x->nreads + x->nwrites];
    w->desc = desc;
    w->slot = slot;
    x->nwrites++;
}

static inline af_slotref *af_act_writes(af_act *x) { return x->rw + x->nreads; }

/* -- sending ------------------------------------------------------------------------------- */
static inline int64_t af_next_id(af_actor *a) { return (a->task_id << 32) | ++a->sent; }

static int af_send(af_actor *a, af_out *o, uint8_t type, int64_t dst, int64_t desc,
                   int32_t slot, int64_t piece, int64_t seq, int64_t aux, af_err *e) {
    af_action *x = af_out_add(o, AF_A_MSG);
    if (x == NULL)
        return af_fail(e, "task %" PRId64 ": out of memory", a->task_id);
    af_msg *m = &x->msg;
    m->type = type;
    m->cmd = 0;
    m->flags = 0;
    m->src = a->task_id;
    m->dst = dst;
    m->desc = desc;
    m->slot = slot;
    m->piece = piece;
    m->seq = seq;
    m->msg_id = af_next_id(a);
    m->aux = aux;
    return 0;
}

/* READY of slot `slot` to every consumer (reading marks = all of them); a desc nobody reads
   (task-local scratch) is free again at once. */
static int af_send_ready(af_actor *a, af_out *o, af_produced *p, int32_t slot, int64_t piece,
                         int64_t aux, af_err *e) {
    if (p->ncons == 0) {
        af_free_push(p, slot);
        return 0;
    }
    uint64_t *h = af_held(p, slot);
    for (int32_t w = 0; w < p->words; w++) {
        int32_t bits = p->ncons - w * 64;
        h[w] = bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
    }
    for (int32_t i = 0; i < p->ncons; i++)
        if (af_send(a, o, AF_READY, p->consumers[i], p->desc, slot, piece, p->seq[i]++, aux, e))
            return -1;
    return 0;
}

static inline int af_send_ack(af_actor *a, af_out *o, af_consumed *c, int32_t slot,
                              int64_t piece, af_err *e) {
    return af_send(a, o, AF_ACK, c->producer, c->desc, slot, piece, 0, AF_NONE, e);
}

static int af_send_eord(af_actor *a, af_out *o, af_err *e) {
    for (int32_t i = 0; i < a->nprod; i++) {
        af_produced *p = &a->prod[i];
        if (p->eord_sent)
            continue;
        p->eord_sent = 1;
        for (int32_t j = 0; j < p->ncons; j++)
            if (af_send(a, o, AF_EORD, p->consumers[j], p->desc, -1, AF_NONE, p->seq[j]++,
                        AF_NONE, e))
                return -1;
    }
    return 0;
}

/* An ACK: clear the sender's reading mark of the slot; free it when nobody reads it. */
static int af_on_ack(af_actor *a, const af_msg *m, const char *label, af_err *e) {
    int i = af_produced_find(a, m->desc);
    if (i < 0)
        return af_fail(e, "task %" PRId64 " (%s) got ACK for regst desc %" PRId64
                       ", which it does not produce", a->task_id, label, m->desc);
    af_produced *p = &a->prod[i];
    int32_t who = -1;
    for (int32_t j = 0; j < p->ncons; j++)
        if (p->consumers[j] == m->src) {
            who = j;
            break;
        }
    int32_t slot = m->slot;
    uint64_t *h = (slot >= 0 && slot < p->register_num) ? af_held(p, slot) : NULL;
    if (h == NULL || who < 0 || !(h[who / 64] & ((uint64_t)1 << (who % 64))))
        return af_fail(e, "task %" PRId64 ": unexpected ACK from task %" PRId64
                       " for regst desc %" PRId64 " slot %d (not held by it)",
                       a->task_id, m->src, p->desc, (int)slot);
    h[who / 64] &= ~((uint64_t)1 << (who % 64));
    for (int32_t w = 0; w < p->words; w++)
        if (h[w])
            return 0;
    af_free_push(p, slot);
    return 0;
}

/* Python's repr of {desc: n, ...} for the descs with queued regsts. */
static void af_queued_repr(const af_actor *a, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "{");
    int first = 1;
    for (int32_t i = 0; i < a->ncons && k < n; i++) {
        const af_consumed *c = &a->cons[i];
        if (c->ready.len == 0)
            continue;
        k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64 ": %d", first ? "" : ", ", c->desc,
                              (int)c->ready.len);
        first = 0;
    }
    if (k < n)
        snprintf(buf + k, n - k, "}");
}

#endif
