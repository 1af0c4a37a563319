/* How long libzmq still reads a zero-copy frame: a counter per buffer, taken before each
 * zmq_msg_init_data and given back by libzmq's free callback (from its I/O thread, so it
 * touches nothing but the counter).  The owner keeps the bytes alive and unchanged while
 * the counter is above zero; ``zq_hold_release`` is the ``ffn`` of zq_frame_t. */
#ifndef AF_ZQ_HOLD_H
#define AF_ZQ_HOLD_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    _Atomic int32_t live;
} zq_hold_t;

static inline zq_hold_t *zq_hold_new(void) {
    return (zq_hold_t *)calloc(1, sizeof(zq_hold_t));
}

static inline void zq_hold_take(zq_hold_t *h) {
    atomic_fetch_add_explicit(&h->live, 1, memory_order_relaxed);
}

static inline int32_t zq_hold_live(zq_hold_t *h) {
    return atomic_load_explicit(&h->live, memory_order_acquire);
}

static void zq_hold_release(void *data, void *hint) {
    (void)data;
    atomic_fetch_sub_explicit(&((zq_hold_t *)hint)->live, 1, memory_order_release);
}

#endif
