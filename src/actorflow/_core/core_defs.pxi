# The C declarations of the unit core (record.h, buf.h, actor.h, sm.h, unit.h) for Cython.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint64_t

cdef extern from "record.h" nogil:
    ctypedef struct af_msg:
        int64_t src, dst, desc, piece, seq, msg_id, aux
        int32_t slot
        uint8_t type, cmd
        uint16_t flags

cdef extern from "buf.h" nogil:
    ctypedef struct af_err:
        char text[512]
    ctypedef struct af_ring:
        char *data
        int32_t item, cap, head, len
    void af_ring_init(af_ring *r, int32_t item)
    void af_ring_free(af_ring *r)
    void *af_ring_push(af_ring *r)
    void *af_ring_at(const af_ring *r, int32_t i)

cdef extern from "actor.h" nogil:
    enum:
        AF_RUNNING, AF_ZOMBIE, AF_EXITED
        AF_KIND_NORMAL, AF_KIND_INPUT, AF_KIND_SOURCE, AF_KIND_OUTPUT, AF_KIND_TICK
        AF_KIND_ACC, AF_KIND_REPEAT, AF_KIND_WAIT_IDS, AF_KIND_LOCK, AF_KIND_CASE
        AF_KIND_ESAC, AF_KIND_CALLBACK, AF_NKINDS
        AF_INFO_NONE, AF_INFO_ACC, AF_INFO_REPEAT, AF_INFO_ADMIT, AF_INFO_RETURN, AF_INFO_CS
        AF_NONE
    ctypedef struct af_slotref:
        int64_t desc
        int32_t slot
    ctypedef struct af_act:
        int64_t act_id, piece
        int32_t nreads, nwrites
        af_slotref *rw
        int32_t info_kind
        int64_t info[3]
        int32_t used
    ctypedef struct af_ready:
        int32_t slot
        int64_t piece, aux
    ctypedef struct af_produced:
        int64_t desc
        int32_t register_num, ncons, words
        int64_t *consumers
        int64_t *seq
        uint64_t *held
        af_ring free_q
        int eord_sent
    ctypedef struct af_consumed:
        int64_t desc, producer
        af_ring ready
        int eord
        int64_t next_seq
    ctypedef struct af_gen:
        int64_t budget, pieces_made
        int closed, gated, is_source
        int64_t piece_num, num_cs
        af_ring ids
    ctypedef struct af_acc:
        int64_t acc_num, count, groups
        int32_t held
        int flush
    ctypedef struct af_rep:
        int64_t repeat_num, used, made
    ctypedef struct af_cspair:
        int64_t cs, n
    ctypedef struct af_lock:
        int32_t start, end, nconf
        int64_t *conf_cs
        int32_t *conf_off
        int64_t *conf_with
        af_cspair *running
        int32_t nrunning, caprunning
        int64_t admitted, returned
    ctypedef struct af_case:
        int32_t nout
        int32_t *out_of
        int64_t *instances
    ctypedef struct af_esac:
        int32_t ngroups
        int64_t *group_cs
        int32_t *group_off
        int32_t *group_cons
    ctypedef union af_kstate:
        af_gen gen
        af_acc acc
        af_rep rep
        af_lock lock
        af_case kcase
        af_esac esac
    ctypedef struct af_actor:
        int64_t task_id
        int32_t kind, status, nprod, ncons
        af_produced *prod
        af_consumed *cons
        af_act *pool
        int32_t npool, ninflight
        int64_t acts, sent
        af_kstate k

cdef extern from "sm.h" nogil:
    enum:
        AF_A_MSG, AF_A_ACT, AF_A_EXIT
    ctypedef struct af_action:
        int32_t kind, actor, act
        af_msg msg
    ctypedef struct af_out:
        af_action *a
        int32_t n, cap, actor

cdef extern from "kinds.h" nogil:
    ctypedef struct af_kind_ops:
        const char *name
    const af_kind_ops AF_KINDS[]

cdef extern from "unit.h" nogil:
    ctypedef struct af_unit:
        af_actor *actors
        char **labels
        int32_t n, live
        af_ring local, pushed
        af_out out
        af_err err
        int32_t err_unit
        int trace
        af_out seen
    int af_unit_index(af_unit *u)
    int32_t af_unit_find(const af_unit *u, int64_t task)
    int af_unit_push(af_unit *u, const af_msg *msgs, int32_t n)
    int af_unit_done(af_unit *u, int64_t task, int64_t act_id, int *started)
    int af_unit_run(af_unit *u, int started)
    void af_unit_free(af_unit *u)

cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_mutex_t:
        pass
    int pthread_mutex_init(pthread_mutex_t *m, void *attr)
    int pthread_mutex_lock(pthread_mutex_t *m)
    int pthread_mutex_trylock(pthread_mutex_t *m)
    int pthread_mutex_unlock(pthread_mutex_t *m)
    int pthread_mutex_destroy(pthread_mutex_t *m)

cdef extern from "inbox.h" nogil:
    ctypedef struct af_inbox:
        af_ring q
        int sleeping, stop, poke, ready
        int32_t pending
        int64_t spin_ns
    int af_inbox_init(af_inbox *b)
    void af_inbox_free(af_inbox *b)
    int af_inbox_put(af_inbox *b, const af_msg *m, int32_t n)
    void af_inbox_signal(af_inbox *b, int stop)
    int32_t af_inbox_take(af_inbox *b, af_ring *out, int64_t timeout_ns)

cdef extern from "tracebuf.h" nogil:
    enum:
        AF_TR_NONE, AF_TR_FLIGHT, AF_TR_TIMED
        AF_EV_SEND, AF_EV_RECV
    ctypedef struct af_cmdref:
        int64_t word, cmd, aux
    ctypedef struct af_chunk:
        int64_t *w
        int64_t nw, capw
        af_cmdref *cmds
        int32_t ncmds
    ctypedef struct af_trace:
        int mode
        af_msg *fl
        uint8_t *fl_recv
        int32_t fl_size
        int64_t fl_count
        int64_t *w
        int64_t nw, capw, flush_words
        af_cmdref *cmds
        int32_t ncmds, capcmds
        af_chunk *sealed
        int32_t nsealed, capsealed
        int64_t taken_words
        int fd, werr
        int64_t key[2]
        char **names
        int32_t nnames
        af_chunk prev
        int tsc
    int af_trace_init(af_trace *t, int mode, int32_t flight_size, int64_t flush_words)
    void af_trace_free(af_trace *t)
    void af_flight(af_trace *t, const af_msg *m, int recv)
    int af_trace_msg(af_trace *t, int code, const af_msg *m)
    int af_trace_begin(af_trace *t, int64_t task, const af_act *x)
    int af_trace_end(af_trace *t, int64_t task, int64_t act_id, int64_t piece)
    void af_trace_recycle(af_trace *t, af_chunk *c)
    ctypedef struct af_anchor:
        int64_t tsc, ns
    af_anchor af_anchor_now()
    void af_stamps_to_ns(const af_trace *t, int64_t *w, int64_t nw, af_anchor end)
    void af_trace_settle(af_trace *t)
    int af_trace_use_tsc(af_trace *t)

cdef extern from "tracewrite.h" nogil:
    ctypedef struct af_mp:
        uint8_t *p
        size_t n, cap
    int af_trace_encode(const af_trace *t, const af_chunk *c, af_mp *head, af_mp *tail)
    int af_trace_write(af_trace *t, pthread_mutex_t *mu, pthread_mutex_t *wmu, int all)

cdef extern from "runplan.h" nogil:
    enum:
        AF_RUN_PY, AF_RUN_NOOP, AF_RUN_COPY
    ctypedef struct af_copy:
        int64_t src_desc, dst_desc, nbytes
        int32_t nsrc, ndst
        char **src
        char **dst
    ctypedef struct af_runplan:
        int32_t mode, ncopies
        af_copy *copies
    void af_runplan_free(af_runplan *p)
    int af_run_copies(const af_runplan *p, const af_act *x)
    ctypedef struct af_dest:
        int64_t task
        af_inbox *inbox
    ctypedef struct af_router:
        af_dest *d
        int32_t n
        int drop_armed, drop_type
        int64_t drop_piece, drop_dst
    af_inbox *af_route_to(const af_router *r, int64_t task)
    void *af_route_ring(const af_router *r, int64_t task)
    int af_ring_put(const af_router *r, void *outlet, const af_msg *m)
    void af_router_set_rings(af_router *r, const int64_t *tasks, void **outlets, int32_t n,
                             int64_t timeout_ns)
    int af_router_drops(af_router *r, const af_msg *m)

cdef extern from "rxcheck.h" nogil:
    ctypedef struct af_rxdesc:
        int64_t id, producer
        int32_t register_num, nconsumers
        int64_t *consumers
    ctypedef struct af_rxplan:
        int64_t *tasks
        int32_t ntasks
        af_rxdesc *descs
        int32_t ndescs
        int64_t *hosted
        af_inbox **inbox
        int32_t nhosted
    void af_rxplan_free(af_rxplan *p)
    const af_rxdesc *af_rx_check(const af_rxplan *p, const af_msg *m, int32_t nblobs,
                                 af_inbox **to)
