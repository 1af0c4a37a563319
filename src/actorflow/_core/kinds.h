/* kinds.h -- what each actor kind changes of the base rules: one ops row per kind.
 *
 * The C twin of protocol/kind_states.py and protocol/mainjob.py.  A kind is a row of
 * AF_KINDS: its name (as ``blocked_on()["kind"]`` says it) and the hooks it refines; a NULL
 * hook takes the base rule (kind_ops.h); the hooks live in kinds_flow.h (data kinds) and
 * kinds_mainjob.h.  Adding a kind = one row here, its hooks, its state in actor.h, its rows
 * in build.pxi, and its Python reference in protocol/.
 */
#ifndef AF_KINDS_H
#define AF_KINDS_H

#include "kinds_mainjob.h"

/* -- the table ------------------------------------------------------------------------------ */
static const af_kind_ops AF_KINDS[AF_NKINDS] = {
    [AF_KIND_NORMAL] = {"normal", NULL, NULL, NULL, NULL, NULL, NULL, 0},
    [AF_KIND_INPUT] = {"input", af_input_cmd, af_gen_can_act, af_gen_start, NULL,
                       af_gen_input_done, NULL, 0},
    [AF_KIND_SOURCE] = {"source", af_source_cmd, af_gen_can_act, af_gen_start, NULL,
                        af_gen_input_done, NULL, 0},
    [AF_KIND_OUTPUT] = {"output", NULL, NULL, NULL, NULL, NULL, NULL, 0},
    [AF_KIND_TICK] = {"tick", NULL, NULL, NULL, NULL, NULL, NULL, 0},
    [AF_KIND_ACC] = {"acc", NULL, af_acc_can_act, af_acc_start, af_acc_finish, NULL,
                     af_acc_before_eord, 0},
    [AF_KIND_REPEAT] = {"repeat", NULL, NULL, af_repeat_start, af_repeat_finish, NULL, NULL, 0},
    [AF_KIND_WAIT_IDS] = {"wait_and_send_ids", af_wait_cmd, af_gen_can_act, af_wait_start,
                          af_cs_finish_ready, af_gen_input_done, NULL, 0},
    [AF_KIND_LOCK] = {"reentrant_lock", NULL, af_lock_can_act, af_lock_start,
                      af_cs_finish_ready, af_lock_input_done, NULL, 1},
    [AF_KIND_CASE] = {"case", NULL, af_case_can_act, af_case_start, NULL, NULL, NULL, 0},
    [AF_KIND_ESAC] = {"esac", NULL, af_esac_can_act, af_esac_start, af_cs_finish_ready,
                      af_esac_input_done, NULL, 0},
    [AF_KIND_CALLBACK] = {"callback_tick", NULL, NULL, NULL, NULL, NULL, NULL, 0},
};

#endif
