/* actor.h -- one actor's state machine data: produced and consumed regst descs, acts.
 *
 * The C twin of protocol/state.py's ActorState.  An actor is a table row built from the
 * plan (kind, produced descs with register_num and consumers, consumed descs with their
 * producer) plus the counters the rules move.  The rules themselves are in sm.h; what a
 * kind changes of them is in kinds.h.
 */
#ifndef AF_ACTOR_H
#define AF_ACTOR_H

#include <stdint.h>

#include "buf.h"
#include "record.h"

enum { AF_RUNNING = 0, AF_ZOMBIE = 1, AF_EXITED = 2 };

/* kinds: one state machine each (the kind records of protocol/kinds.py map task types here) */
enum {
    AF_KIND_NORMAL = 0, AF_KIND_INPUT, AF_KIND_SOURCE, AF_KIND_OUTPUT, AF_KIND_TICK,
    AF_KIND_ACC, AF_KIND_REPEAT, AF_KIND_WAIT_IDS, AF_KIND_LOCK, AF_KIND_CASE, AF_KIND_ESAC,
    AF_KIND_CALLBACK, AF_NKINDS
};

/* what an act's `info` holds (Act.info on the Python side) */
enum { AF_INFO_NONE = 0, AF_INFO_ACC, AF_INFO_REPEAT, AF_INFO_ADMIT, AF_INFO_RETURN,
       AF_INFO_CS };

#define AF_NONE (-1)

typedef struct af_slotref {
    int64_t desc;
    int32_t slot;
} af_slotref;

typedef struct af_act {
    int64_t act_id, piece;
    int32_t nreads, nwrites;
    af_slotref *rw;     /* nreads reads, then nwrites writes (room for the actor's max) */
    int32_t info_kind;  /* AF_INFO_* */
    int64_t info[3];
    int32_t used;       /* in flight */
} af_act;

typedef struct af_ready {
    int32_t slot;
    int64_t piece;
    int64_t aux; /* the critical-section id a main-job READY carries */
} af_ready;

typedef struct af_produced {
    int64_t desc;
    int32_t register_num, ncons, words;
    int64_t *consumers; /* ncons task ids */
    int64_t *seq;       /* next seq per consumer */
    uint64_t *held;     /* register_num x words: bit i = consumers[i] still reads the slot */
    af_ring free_q;     /* of int32_t: free slots, in the order they came free */
    int eord_sent;
} af_produced;

typedef struct af_consumed {
    int64_t desc, producer;
    af_ring ready; /* of af_ready */
    int eord;
    int64_t next_seq;
} af_consumed;

/* per-kind state (one of these is used, by kind) */
typedef struct af_gen {     /* source, input, wait_and_send_ids */
    int64_t budget;         /* AF_NONE: unbounded */
    int64_t pieces_made;
    int closed, gated, is_source;
    int64_t piece_num;      /* attrs["piece_num"], AF_NONE when absent */
    int64_t num_cs;         /* wait_and_send_ids: ids must be in [0, num_cs) */
    af_ring ids;            /* wait_and_send_ids: of int64_t */
} af_gen;

typedef struct af_acc {
    int64_t acc_num, count, groups;
    int32_t held; /* produced slot being accumulated into, -1: none */
    int flush;
} af_acc;

typedef struct af_rep {
    int64_t repeat_num, used, made;
} af_rep;

typedef struct af_cspair {
    int64_t cs, n;
} af_cspair;

typedef struct af_lock {
    int32_t start, end;          /* indices of the consumed start/end descs */
    int32_t nconf;
    int64_t *conf_cs;            /* nconf: cs ids that have a conflict list */
    int32_t *conf_off;           /* nconf + 1 offsets into conf_with */
    int64_t *conf_with;
    af_cspair *running;          /* distinct cs ids seen running, in first-seen order */
    int32_t nrunning, caprunning;
    int64_t admitted, returned;
} af_lock;

typedef struct af_case {
    int32_t nout;
    int32_t *out_of;     /* cs -> produced index */
    int64_t *instances;  /* cs -> pieces routed so far */
} af_case;

typedef struct af_esac {
    int32_t ngroups;
    int64_t *group_cs;   /* ngroups cs ids, in the order of protocol/mainjob.py's dict */
    int32_t *group_off;  /* ngroups + 1 offsets into group_cons */
    int32_t *group_cons; /* consumed indices */
} af_esac;

typedef union af_kstate {
    af_gen gen;
    af_acc acc;
    af_rep rep;
    af_lock lock;
    af_case kcase;
    af_esac esac;
} af_kstate;

typedef struct af_actor {
    int64_t task_id;
    int32_t kind;   /* AF_KIND_* */
    int32_t status; /* AF_RUNNING .. */
    int32_t nprod, ncons;
    af_produced *prod;
    af_consumed *cons;
    af_act *pool;   /* acts: in flight (used) or free */
    int32_t npool, ninflight;
    int64_t acts;   /* acts started */
    int64_t sent;   /* messages sent: msg ids are task_id << 32 | sent */
    af_kstate k;
} af_actor;

#endif
