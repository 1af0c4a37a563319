/* One wait for a reader that has both rings and zmq sockets: a record in its inbox (an
 * EVENTFD doorbell, the only kind poll() can watch) or a message on any of the sockets.
 *
 * Nothing is slept on while either already holds something (the sockets are asked with a
 * zero-timeout zmq_poll, which also makes libzmq take its pending commands).  Otherwise
 * the doorbell is armed, the rings are looked at once more, and one zmq_poll sleeps on the
 * eventfd and the sockets together until one is ready, the deadline or a signal; then the
 * doorbell is disarmed (and its eventfd drained).  ``*ready``: RING_ZQ_RINGS and/or
 * RING_ZQ_SOCKETS. */
#ifndef AF_RING_ZQ_WAIT_H
#define AF_RING_ZQ_WAIT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>

#include "ring_inbox.h"
#include "zq_api.h"

#define RING_ZQ_RINGS 1
#define RING_ZQ_SOCKETS 2
#define RING_ZQ_MAX_SOCKETS 15

/* 0 with ``*ready`` set, ETIMEDOUT, EINTR, EPROTO (a ring's counters), EINVAL (not an
 * EVENTFD inbox, or too many sockets) or libzmq's errno. */
static inline int ring_zq_wait(ring_inbox_t *in, void *const *socks, int nsocks,
                               int64_t deadline_ns, int *ready) {
    zq_pollitem_t items[RING_ZQ_MAX_SOCKETS + 1];
    *ready = 0;
    if (in->efd < 0 || nsocks < 0 || nsocks > RING_ZQ_MAX_SOCKETS) return EINVAL;
    for (int i = 0; i < nsocks; i++) {
        items[i].socket = socks[i];
        items[i].fd = 0;
        items[i].events = ZQ_POLLIN;
        items[i].revents = 0;
    }
    items[nsocks].socket = NULL;
    items[nsocks].fd = in->efd;
    items[nsocks].events = ZQ_POLLIN;
    items[nsocks].revents = 0;
    int r = ring_inbox_ready(in);
    if (r < 0) return EPROTO;
    if (r > 0) *ready |= RING_ZQ_RINGS;
    if (nsocks > 0) {
        int k = ZQ.poll(items, nsocks, 0);
        if (k < 0) return ZQ.errno_();
        if (k > 0) *ready |= RING_ZQ_SOCKETS;
    }
    if (*ready) return 0;
    for (;;) {
        int64_t left = deadline_ns - ring_now_ns();
        if (left <= 0) return ETIMEDOUT;
        r = ring_inbox_arm(in);
        if (r < 0) return EPROTO;
        if (r > 0) {
            *ready |= RING_ZQ_RINGS;
            return 0;
        }
        in->sleeps++;
        int k = ZQ.poll(items, nsocks + 1, (long)((left + 999999) / 1000000));
        int e = k < 0 ? ZQ.errno_() : 0;
        ring_inbox_disarm(in);
        r = ring_inbox_ready(in);
        if (r < 0) return EPROTO;
        if (r > 0) *ready |= RING_ZQ_RINGS;
        for (int i = 0; k > 0 && i < nsocks; i++)
            if (items[i].revents & ZQ_POLLIN) *ready |= RING_ZQ_SOCKETS;
        if (*ready) return 0;
        if (e) return e;   /* EINTR among them: the caller looks at its signals */
    }
}

#endif
