/* buf.h -- growable FIFOs and the error text of a failed call.
 *
 * A unit core queues message records (its local queue, the messages pushed to it) and an
 * actor queues ready regsts; all are rings that double when full, up to a bound past which
 * the caller reports a protocol error (a peer that floods an actor is a bug, not a reason
 * to eat the machine's memory).
 */
#ifndef AF_BUF_H
#define AF_BUF_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

#define AF_ERR_LEN 512
#define AF_QUEUE_MAX (1 << 24) /* entries of one FIFO, at most */

typedef struct af_err {
    char text[AF_ERR_LEN];
} af_err;

/* Set the error text (printf-style); always returns -1 so callers can `return af_fail(..)`. */
static int af_fail(af_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int af_fail(af_err *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, AF_ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

/* A FIFO of fixed-size items: `head` indexes the oldest, `len` items follow it. */
typedef struct af_ring {
    char *data;
    int32_t item, cap, head, len;
} af_ring;

static void af_ring_init(af_ring *r, int32_t item) {
    r->data = NULL;
    r->item = item;
    r->cap = r->head = r->len = 0;
}

static void af_ring_free(af_ring *r) {
    free(r->data);
    r->data = NULL;
    r->cap = r->head = r->len = 0;
}

static int af_ring_grow(af_ring *r) {
    int32_t cap = r->cap ? r->cap * 2 : 8;
    if (cap > AF_QUEUE_MAX)
        return -1;
    char *d = (char *)malloc((size_t)cap * (size_t)r->item);
    if (d == NULL)
        return -1;
    for (int32_t i = 0; i < r->len; i++)
        memcpy(d + (size_t)i * r->item, r->data + (size_t)((r->head + i) % r->cap) * r->item,
               (size_t)r->item);
    free(r->data);
    r->data = d;
    r->cap = cap;
    r->head = 0;
    return 0;
}

/* A slot at the tail to fill in (NULL: out of memory or over AF_QUEUE_MAX). */
static inline void *af_ring_push(af_ring *r) {
    if (r->len == r->cap && af_ring_grow(r) < 0)
        return NULL;
    void *p = r->data + (size_t)((r->head + r->len) % r->cap) * r->item;
    r->len++;
    return p;
}

static inline void *af_ring_at(const af_ring *r, int32_t i) {
    return r->data + (size_t)((r->head + i) % r->cap) * r->item;
}

static inline void *af_ring_front(const af_ring *r) { return af_ring_at(r, 0); }

static inline void af_ring_pop(af_ring *r) {
    r->head = (r->head + 1) % r->cap;
    r->len--;
}

#endif
