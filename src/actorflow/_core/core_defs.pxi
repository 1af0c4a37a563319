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
