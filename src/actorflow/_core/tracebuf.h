/* tracebuf.h -- a native unit's trace: the flight ring, or the packed int64 events.
 *
 * The same records the Python recorder keeps (trace/recorder.py), so every trace tool reads
 * them unchanged: the flight ring holds the unit's last `size` messages (each one handed to
 * an actor, each one sent to another unit) as records; full tracing packs each event as
 * int64 words the moment it happens (trace/packed.py's layouts, `t` = CLOCK_MONOTONIC ns,
 * which is what time.perf_counter_ns reads), with a command's name and argument on a side
 * list keyed by the event's word offset.  A buffer that reaches `flush_words` is sealed as a
 * chunk at once (the event that crossed the line is its last), so chunks are the size the
 * Python recorder writes.  With a trace file attached (tracewrite.h) the loop writes sealed
 * chunks itself; else it hands them to Python when it next can.  Chunk buffers are reused
 * (a few spares): a fresh 600 KiB buffer per chunk cost more in page faults than the events.
 *
 * Stamps: with `tsc` on (x86-64 with an invariant TSC that the kernel's clock runs on) an
 * event is stamped with rdtsc (~8 ns, against ~20 ns for clock_gettime on this VM, ~10 a
 * piece), and an anchor (TSC, CLOCK_MONOTONIC ns) is read whenever a stamp is more than
 * AF_ANCHOR_TICKS past the last one and when a chunk is sealed; sealing turns every stamp
 * into ns by interpolating between the anchors around it (strictly increasing), so chunks,
 * dumps and files hold the same CLOCK_MONOTONIC ns as before.
 */
#ifndef AF_TRACEBUF_H
#define AF_TRACEBUF_H

#include <time.h>
#include <unistd.h>

#include "actor.h"
#include "buf.h"

enum { AF_TR_NONE = 0, AF_TR_FLIGHT = 1, AF_TR_TIMED = 2 };
enum { AF_EV_SEND = 0, AF_EV_RECV = 1, AF_EV_ACT_BEGIN = 2, AF_EV_ACT_END = 3 };

typedef struct af_cmdref {
    int64_t word, cmd, aux;
} af_cmdref;

typedef struct af_chunk {
    int64_t *w;
    int64_t nw, capw;
    af_cmdref *cmds;
    int32_t ncmds;
} af_chunk;

enum { AF_TR_SPARE = 4 };

typedef struct af_anchor {
    int64_t tsc, ns;
} af_anchor;

#define AF_ANCHOR_TICKS (1LL << 21) /* ~0.5-2 ms of TSC ticks */

typedef struct af_trace {
    int mode;
    /* flight */
    af_msg *fl;
    uint8_t *fl_recv; /* 1: handed to an actor here, 0: sent to another unit */
    int32_t fl_size;
    int64_t fl_count; /* entries ever written: the watchdog's progress marker */
    /* timed */
    int64_t *w;
    int64_t nw, capw, flush_words;
    af_cmdref *cmds;
    int32_t ncmds, capcmds;
    af_chunk *sealed; /* full chunks not yet taken */
    int32_t nsealed, capsealed;
    int64_t basew;                 /* words of a fresh buffer */
    int64_t *spare[AF_TR_SPARE];   /* buffers of basew words, for the next chunks */
    int32_t nspare;
    int64_t taken_words;           /* words handed out (taken or written) so far */
    /* the trace file (tracewrite.h): fd < 0 = none, chunks go to Python */
    int fd, werr;
    int64_t key[2];                /* the unit: (machine, thrd) */
    char **names;                  /* command code -> name */
    int32_t nnames;
    af_chunk prev;                 /* the chunk written last (for dumps' recent rows) */
    uint8_t *scratch;              /* the encoding of a chunk's head and command list */
    size_t scratch_cap;
    int tsc;                       /* stamps are TSC ticks until the chunk is sealed */
    af_anchor *anchors;            /* the current buffer's anchors, by time */
    int32_t nanchors, capanchors;
} af_trace;

static inline int64_t af_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int64_t af_tsc(void) {
#if defined(__x86_64__)
    return (int64_t)__builtin_ia32_rdtsc();
#else
    return 0;
#endif
}

static inline af_anchor af_anchor_now(void) {
    af_anchor a;
    a.tsc = af_tsc();
    a.ns = af_now_ns();
    return a;
}

static int af_anchor_add(af_trace *t, af_anchor a) {
    if (t->nanchors == t->capanchors) {
        int32_t cap = t->capanchors ? 2 * t->capanchors : 16;
        af_anchor *p = (af_anchor *)realloc(t->anchors, (size_t)cap * sizeof(af_anchor));
        if (p == NULL)
            return -1;
        t->anchors = p;
        t->capanchors = cap;
    }
    t->anchors[t->nanchors++] = a;
    return 0;
}

/* The stamp of an event now: ns, or TSC ticks (see above). */
static inline int64_t af_stamp(af_trace *t) {
    if (!t->tsc)
        return af_now_ns();
    int64_t c = af_tsc();
    if (c - t->anchors[t->nanchors - 1].tsc > AF_ANCHOR_TICKS) {
        af_anchor a;
        a.tsc = c;
        a.ns = af_now_ns();
        if (af_anchor_add(t, a))
            t->anchors[t->nanchors - 1] = a; /* no memory: a coarser line, still exact here */
    }
    return c;
}

/* Words of the event starting at w[0] (0: not an event this trace writes). */
static inline int64_t af_event_words(const int64_t *w, int64_t left) {
    switch (w[0]) {
    case 0: case 1: return 10;                                      /* SEND, RECV */
    case 2: return left >= 7 ? 7 + 2 * (w[5] + w[6]) : 0;           /* ACT_BEGIN */
    case 3: return 5;                                               /* ACT_END */
    default: return 0;
    }
}

/* TSC stamps of w[0, nw) -> ns, between the buffer's anchors and `end` (read now). */
static void af_stamps_to_ns(const af_trace *t, int64_t *w, int64_t nw, af_anchor end) {
    int32_t k = 0, n = t->nanchors;
    int64_t last = INT64_MIN;
    for (int64_t i = 0; i < nw;) {
        int64_t len = af_event_words(w + i, nw - i);
        if (len <= 0 || i + len > nw)
            break;
        int64_t c = w[i + 1];
        while (k + 1 < n && t->anchors[k + 1].tsc <= c)
            k++;
        af_anchor a = t->anchors[k], b = k + 1 < n ? t->anchors[k + 1] : end;
        int64_t ns = a.ns;
        if (b.tsc > a.tsc)
            ns += (int64_t)((double)(c - a.tsc) * ((double)(b.ns - a.ns) / (double)(b.tsc - a.tsc)));
        if (ns <= last) /* TSCs of two cores a few ticks apart: time never goes back, and */
            ns = last + 1; /* two events never share a time (clock_gettime never gave one) */
        w[i + 1] = last = ns;
        i += len;
    }
}

/* The buffer's stamps become ns (it is being sealed or taken); anchors start again. */
static void af_trace_settle(af_trace *t) {
    if (!t->tsc)
        return;
    af_anchor end = af_anchor_now();
    af_stamps_to_ns(t, t->w, t->nw, end);
    t->anchors[0] = end;
    t->nanchors = 1;
}

/* Use TSC stamps (the caller checked the TSC is invariant and the kernel's clock). */
static int af_trace_use_tsc(af_trace *t) {
#if defined(__x86_64__)
    t->nanchors = 0;
    if (af_anchor_add(t, af_anchor_now()))
        return -1;
    t->tsc = 1;
#endif
    return 0;
}

static int af_trace_init(af_trace *t, int mode, int32_t flight_size, int64_t flush_words) {
    memset(t, 0, sizeof *t);
    t->fd = -1;
    t->mode = mode;
    if (mode == AF_TR_FLIGHT) {
        t->fl_size = flight_size > 0 ? flight_size : 1;
        t->fl = (af_msg *)calloc((size_t)t->fl_size, sizeof(af_msg));
        t->fl_recv = (uint8_t *)calloc((size_t)t->fl_size, 1);
        return t->fl && t->fl_recv ? 0 : -1;
    }
    if (mode == AF_TR_TIMED) {
        t->flush_words = flush_words;
        t->capw = t->basew = flush_words + 4096;
        t->w = (int64_t *)malloc((size_t)t->capw * sizeof(int64_t));
        return t->w ? 0 : -1;
    }
    return 0;
}

static void af_trace_free(af_trace *t) {
    free(t->fl);
    free(t->fl_recv);
    free(t->w);
    free(t->cmds);
    for (int32_t i = 0; i < t->nsealed; i++) {
        free(t->sealed[i].w);
        free(t->sealed[i].cmds);
    }
    free(t->sealed);
    for (int32_t i = 0; i < t->nspare; i++)
        free(t->spare[i]);
    free(t->prev.w);
    free(t->prev.cmds);
    if (t->names != NULL) {
        for (int32_t i = 0; i < t->nnames; i++)
            free(t->names[i]);
        free(t->names);
    }
    free(t->scratch);
    free(t->anchors);
    if (t->fd >= 0)
        close(t->fd);
    memset(t, 0, sizeof *t);
    t->fd = -1;
}

/* A chunk's buffers are done with: a spare for a later chunk, or freed. */
static void af_trace_recycle(af_trace *t, af_chunk *c) {
    if (c->w != NULL && c->capw == t->basew && t->nspare < AF_TR_SPARE)
        t->spare[t->nspare++] = c->w;
    else
        free(c->w);
    free(c->cmds);
    memset(c, 0, sizeof *c);
}

/* Seal the current buffer as a chunk and start a new one. */
static int af_trace_seal(af_trace *t) {
    if (t->nsealed == t->capsealed) {
        int32_t cap = t->capsealed ? 2 * t->capsealed : 4;
        af_chunk *s = (af_chunk *)realloc(t->sealed, (size_t)cap * sizeof(af_chunk));
        if (s == NULL)
            return -1;
        t->sealed = s;
        t->capsealed = cap;
    }
    int64_t *w = t->nspare ? t->spare[--t->nspare]
                           : (int64_t *)malloc((size_t)t->basew * sizeof(int64_t));
    if (w == NULL)
        return -1;
    af_trace_settle(t);
    af_chunk *c = &t->sealed[t->nsealed++];
    c->w = t->w;
    c->nw = t->nw;
    c->capw = t->capw;
    c->cmds = t->cmds;
    c->ncmds = t->ncmds;
    t->w = w;
    t->capw = t->basew;
    t->nw = 0;
    t->cmds = NULL;
    t->ncmds = t->capcmds = 0;
    return 0;
}

static inline int af_trace_full(af_trace *t) {
    return t->nw >= t->flush_words ? af_trace_seal(t) : 0;
}

static inline void af_flight(af_trace *t, const af_msg *m, int recv) {
    int32_t i = (int32_t)(t->fl_count % t->fl_size);
    t->fl[i] = *m;
    t->fl_recv[i] = (uint8_t)recv;
    t->fl_count++;
}

static inline int64_t *af_words(af_trace *t, int64_t n) {
    if (t->nw + n > t->capw) {
        int64_t cap = 2 * (t->nw + n);
        int64_t *w = (int64_t *)realloc(t->w, (size_t)cap * sizeof(int64_t));
        if (w == NULL)
            return NULL;
        t->w = w;
        t->capw = cap;
    }
    int64_t *p = t->w + t->nw;
    t->nw += n;
    return p;
}

/* SEND / RECV: code, t, type, src, dst, desc, slot, piece, seq, msg_id */
static int af_trace_msg(af_trace *t, int code, const af_msg *m) {
    if (m->type == AF_CMD) {
        if (t->ncmds == t->capcmds) {
            int32_t cap = t->capcmds ? 2 * t->capcmds : 16;
            af_cmdref *c = (af_cmdref *)realloc(t->cmds, (size_t)cap * sizeof(af_cmdref));
            if (c == NULL)
                return -1;
            t->cmds = c;
            t->capcmds = cap;
        }
        af_cmdref *c = &t->cmds[t->ncmds++];
        c->word = t->nw;
        c->cmd = m->cmd;
        c->aux = m->aux;
    }
    int64_t *w = af_words(t, 10);
    if (w == NULL)
        return -1;
    w[0] = code;
    w[1] = af_stamp(t);
    w[2] = m->type;
    w[3] = m->src;
    w[4] = m->dst;
    w[5] = m->desc;
    w[6] = m->slot;
    w[7] = m->piece;
    w[8] = m->seq;
    w[9] = m->msg_id;
    return af_trace_full(t);
}

/* ACT_BEGIN: code, t, task, act_id, piece, n_reads, n_writes, (desc, slot) ... */
static int af_trace_begin(af_trace *t, int64_t task, const af_act *x) {
    int32_t n = x->nreads + x->nwrites;
    int64_t *w = af_words(t, 7 + 2 * (int64_t)n);
    if (w == NULL)
        return -1;
    w[0] = AF_EV_ACT_BEGIN;
    w[1] = af_stamp(t);
    w[2] = task;
    w[3] = x->act_id;
    w[4] = x->piece;
    w[5] = x->nreads;
    w[6] = x->nwrites;
    for (int32_t i = 0; i < n; i++) {
        w[7 + 2 * i] = x->rw[i].desc;
        w[8 + 2 * i] = x->rw[i].slot;
    }
    return af_trace_full(t);
}

/* ACT_END: code, t, task, act_id, piece */
static int af_trace_end(af_trace *t, int64_t task, int64_t act_id, int64_t piece) {
    int64_t *w = af_words(t, 5);
    if (w == NULL)
        return -1;
    w[0] = AF_EV_ACT_END;
    w[1] = af_stamp(t);
    w[2] = task;
    w[3] = act_id;
    w[4] = piece;
    return af_trace_full(t);
}

#endif
