/* A stream worker's wake-up: a mutex, a condition and a "sleeping" flag (eager VM).
 *
 * The issuing thread appends to a stream's FIFO under the mutex and signals only when the
 * worker sleeps; the worker waits without the GIL, bounded (so a lost wake-up costs at
 * most the timeout, and a stop request is seen), and returns on EINTR (signals).
 */
#ifndef AF_EAGER_WAKE_H
#define AF_EAGER_WAKE_H

#include <errno.h>
#include <pthread.h>
#include <time.h>

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int sleeping;
    int kicked; /* kicked while it slept: wake even if *ready is still 0 (a stop) */
} af_wake;

static void af_wake_init(af_wake *w) {
    pthread_condattr_t a;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &a);
    pthread_condattr_destroy(&a);
    w->sleeping = 0;
    w->kicked = 0;
}

static void af_wake_destroy(af_wake *w) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* Wait (mutex held) until *ready != 0, a kick (say a stop request), a signal or `seconds`
 * passed; returns with the mutex held. */
static void af_wake_wait(af_wake *w, const volatile long *ready, double seconds) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long ns = (long)((seconds - (long)seconds) * 1e9);
    ts.tv_sec += (time_t)seconds + (ts.tv_nsec + ns) / 1000000000L;
    ts.tv_nsec = (ts.tv_nsec + ns) % 1000000000L;
    while (!*ready && !w->kicked) {
        w->sleeping = 1;
        int rc = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        w->sleeping = 0;
        if (rc == ETIMEDOUT || rc == EINTR) break;
    }
    w->kicked = 0;
}

/* After an append (mutex held): wake the worker if it sleeps, once. */
static void af_wake_kick(af_wake *w) {
    if (w->sleeping) {
        w->sleeping = 0;
        w->kicked = 1;
        pthread_cond_signal(&w->cv);
    }
}

#endif
