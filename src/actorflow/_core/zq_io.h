/* Multipart messages on a libzmq socket with bounded waits (``zq_api.h`` loaded first).
 *
 * Every call takes an absolute CLOCK_MONOTONIC deadline and returns 0 or an errno:
 * ETIMEDOUT (nothing could be sent/received in time), EINTR (a signal: look at it and call
 * again), or libzmq's own (ETERM: the context is closing; ENOTSOCK ...).  A first frame is
 * tried without blocking and only then does the call sleep in zmq_poll, so a socket with
 * room or a message waiting costs no poll.  A multipart message is never left half done: a
 * send resumes from ``*sent`` (the frames already out), and the frames after the first of
 * a message that arrived are taken at once (libzmq delivers a message whole).
 *
 * Zero copy: a frame with a ``hold`` goes out with zmq_msg_init_data -- libzmq reads the
 * caller's bytes from its I/O thread; the hold's counter (``zq_hold.h``) is taken for it
 * and given back when libzmq lets go, and the caller keeps the bytes alive and unchanged
 * while it is above zero (a regst slot is not reused until then).  Frames without one are
 * copied. */
#ifndef AF_ZQ_IO_H
#define AF_ZQ_IO_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>

#include "ring_clock.h"
#include "zq_api.h"
#include "zq_hold.h"

typedef struct {
    const void *data;
    size_t len;
    zq_hold_t *hold;     /* NULL: libzmq copies the bytes */
} zq_frame_t;

/* Wait until the socket can ``events`` (ZQ_POLLIN / ZQ_POLLOUT). */
static inline int zq_wait(void *sock, short events, int64_t deadline_ns) {
    int64_t left = deadline_ns - ring_now_ns();
    if (left <= 0) return ETIMEDOUT;
    zq_pollitem_t item = {sock, 0, events, 0};
    long ms = (long)((left + 999999) / 1000000);
    int r = ZQ.poll(&item, 1, ms);
    if (r < 0) return ZQ.errno_();
    if (r == 0 || !(item.revents & events)) return ETIMEDOUT;
    return 0;
}

/* One frame, without blocking: 0, EAGAIN or an errno. */
static inline int zq_send_one(void *sock, const zq_frame_t *f, int more) {
    int flags = ZQ_DONTWAIT | (more ? ZQ_SNDMORE : 0);
    if (!f->hold) return ZQ.send(sock, f->data, f->len, flags) >= 0 ? 0 : ZQ.errno_();
    zq_msg_t m;
    zq_hold_take(f->hold);
    if (ZQ.msg_init_data(&m, (void *)f->data, f->len, zq_hold_release, f->hold) != 0) {
        int e = ZQ.errno_();
        zq_hold_release(NULL, f->hold);
        return e;
    }
    if (ZQ.msg_send(&m, sock, flags) >= 0) return 0;   /* libzmq owns it now */
    int e = ZQ.errno_();
    ZQ.msg_close(&m);   /* not taken: libzmq lets go of the bytes (the hold is given back) */
    return e;
}

/* Send frames ``*sent`` .. ``n - 1`` of one message (resume with the same arguments after
 * EINTR or ETIMEDOUT); 0 once all are out. */
static inline int zq_send_frames(void *sock, const zq_frame_t *frames, uint32_t n,
                                 int64_t deadline_ns, uint32_t *sent) {
    while (*sent < n) {
        int e = zq_send_one(sock, &frames[*sent], *sent + 1 < n);
        if (e == 0) {
            (*sent)++;
            continue;
        }
        if (e == EINTR) continue;   /* libzmq took nothing; retry now */
        if (e != EAGAIN) return e;
        e = zq_wait(sock, ZQ_POLLOUT, deadline_ns);
        if (e) return e;
    }
    return 0;
}

static inline void zq_close_frames(zq_msg_t *msgs, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) ZQ.msg_close(&msgs[i]);
}

/* Receive one whole message into ``msgs`` (``*got`` frames; the caller closes them).  A
 * message of more than ``max`` frames is taken whole and the extra frames dropped:
 * EMSGSIZE with ``max`` kept.  ETIMEDOUT / EINTR: nothing was taken. */
static inline int zq_recv_frames(void *sock, zq_msg_t *msgs, uint32_t max, uint32_t *got,
                                 int64_t deadline_ns) {
    *got = 0;
    if (max == 0) return EINVAL;
    ZQ.msg_init(&msgs[0]);
    for (;;) {
        if (ZQ.msg_recv(&msgs[0], sock, ZQ_DONTWAIT) >= 0) break;
        int e = ZQ.errno_();
        if (e == EINTR) continue;
        if (e == EAGAIN) e = zq_wait(sock, ZQ_POLLIN, deadline_ns);
        if (e) {
            ZQ.msg_close(&msgs[0]);
            return e;
        }
    }
    *got = 1;
    int more = ZQ.msg_more(&msgs[0]);
    zq_msg_t extra;
    int dropped = 0;
    while (more) {
        zq_msg_t *m = *got < max ? &msgs[*got] : &extra;
        ZQ.msg_init(m);
        int r;
        while ((r = ZQ.msg_recv(m, sock, ZQ_DONTWAIT)) < 0 && ZQ.errno_() == EINTR) {}
        if (r < 0) {   /* cannot happen with a whole message queued; do not leak */
            int e = ZQ.errno_();
            ZQ.msg_close(m);
            return e;
        }
        more = ZQ.msg_more(m);
        if (m == &extra) {
            ZQ.msg_close(m);
            dropped = 1;
        } else {
            (*got)++;
        }
    }
    return dropped ? EMSGSIZE : 0;
}

#endif
