/* record.h -- one actor message as a fixed 64-byte record (OneFlow's ActorMsg is 64 bytes).
 *
 * The same layout travels through a unit's local queue, the inbox of another unit of the
 * process, and the shared-memory rings between unit processes; the Python side sees it as
 * ``protocol.messages.Msg`` with the same ten fields.  No pointer and no variable-size part:
 * every CMD argument is an integer in ``aux`` (a count, a critical-section id; -1 = none).
 */
#ifndef AF_RECORD_H
#define AF_RECORD_H

#include <stddef.h>
#include <stdint.h>

enum { AF_READY = 0, AF_ACK = 1, AF_EORD = 2, AF_CMD = 3, AF_NTYPES = 4 };

/* CMD codes, in the order of protocol.messages.CMD_NAMES */
enum { AF_CMD_NONE = 0, AF_CMD_START = 1, AF_CMD_STOP = 2, AF_CMD_FEED = 3, AF_CMD_CLOSE = 4,
       AF_CMD_SEND = 5, AF_NCMDS = 6 };

#define AF_CLIENT (-1) /* src of messages sent by the client (Session / launcher) */

typedef struct af_msg {
    int64_t src;    /* task id of the sender, AF_CLIENT for commands */
    int64_t dst;    /* task id of the receiver */
    int64_t desc;   /* regst desc id (-1: none) */
    int64_t piece;  /* piece id (-1: none) */
    int64_t seq;    /* per (regst desc, destination): FIFO check */
    int64_t msg_id; /* unique per sender: task_id << 32 | n */
    int64_t aux;    /* CMD argument, or the critical-section id a main-job READY carries */
    int32_t slot;   /* which regst of the desc (-1: none) */
    uint8_t type;   /* AF_READY .. AF_CMD */
    uint8_t cmd;    /* AF_CMD_* when type == AF_CMD, else 0 */
    uint16_t flags; /* reserved: 0 */
} af_msg;

_Static_assert(sizeof(af_msg) == 64, "an actor message record is 64 bytes");
_Static_assert(offsetof(af_msg, slot) == 56, "slot follows the seven int64 fields");

#endif
