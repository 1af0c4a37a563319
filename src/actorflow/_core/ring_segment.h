/* A ring segment: one file in /dev/shm holding a reader's doorbell and ``nrings`` rings
 * (one per writer), made by the node, attached by the unit processes.
 *
 *   [header 64 B][doorbell 64 B][ring_ctl_t x nrings][records of ring 0][of ring 1]...
 *
 * The creator opens the file O_EXCL with mode 0600, sizes and maps it, writes the header
 * and stores the magic number last, so a half-made segment is refused like a foreign one.
 * ``ring_seg_attach`` trusts nothing in the file: owner and mode, size, magic, version,
 * header size, record size, capacity (a power of two), ring count and doorbell kind are
 * checked, and the file's size must be exactly the layout they imply; every refusal says
 * which field held what against what was expected.
 *
 * An end of a ring is claimed by writing the holder's pid into the ring (one producer, one
 * consumer: a second holder would corrupt it); a claim held by a process that no longer
 * exists is taken over, so a unit may be restarted.  The pids also let a waiter whose wait
 * timed out ask whether the other side is still alive. */
#ifndef AF_RING_SEGMENT_H
#define AF_RING_SEGMENT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doorbell.h"
#include "ring.h"

#define RING_SEG_MAGIC UINT64_C(0x314752494c464641) /* "AFLIRG1" read as little-endian */
#define RING_SEG_VERSION 1u
#define RING_MIN_RECORD 8u
#define RING_MAX_RECORD 4096u
#define RING_MIN_CAPACITY 2u
#define RING_MAX_CAPACITY (1u << 24)
#define RING_MAX_RINGS 1024u
#define RING_MAX_BYTES (UINT64_C(1) << 32) /* 4 GiB: far above any plan's needs */

typedef struct {
    _Atomic uint64_t magic;     /* RING_SEG_MAGIC, stored last */
    uint32_t version;
    uint32_t header_bytes;      /* sizeof(ring_seg_header_t) */
    uint32_t record_bytes;
    uint32_t capacity;          /* records per ring */
    uint32_t nrings;
    uint32_t doorbell_kind;
    uint64_t total_bytes;       /* the file's size */
    int32_t creator_pid;
    uint32_t reserved_[5];
} ring_seg_header_t;

_Static_assert(sizeof(ring_seg_header_t) == 64, "the header is one cache line");

typedef struct {
    unsigned char *base;        /* the mapping (NULL: not mapped) */
    uint64_t bytes;
    uint32_t record_bytes, capacity, nrings, doorbell_kind;   /* validated copies */
} ring_seg_t;

static inline uint64_t ring_seg_data_stride(uint32_t capacity, uint32_t record_bytes) {
    uint64_t b = (uint64_t)capacity * record_bytes;
    return (b + 63) & ~UINT64_C(63);
}

static inline uint64_t ring_seg_layout_bytes(uint32_t nrings, uint32_t capacity,
                                             uint32_t record_bytes) {
    return 128 + (uint64_t)nrings * sizeof(ring_ctl_t) +
           (uint64_t)nrings * ring_seg_data_stride(capacity, record_bytes);
}

static inline doorbell_t *ring_seg_doorbell(const ring_seg_t *s) {
    return (doorbell_t *)(s->base + 64);
}

static inline ring_ctl_t *ring_seg_ctl(const ring_seg_t *s, uint32_t i) {
    return (ring_ctl_t *)(s->base + 128) + i;
}

static inline unsigned char *ring_seg_data(const ring_seg_t *s, uint32_t i) {
    return s->base + 128 + (uint64_t)s->nrings * sizeof(ring_ctl_t) +
           (uint64_t)i * ring_seg_data_stride(s->capacity, s->record_bytes);
}

static inline int ring_seg_fail(char *err, size_t errlen, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return code;
}

/* The geometry rules, shared by create (the caller's arguments) and attach (the file's). */
static inline int ring_seg_check_geometry(uint32_t nrings, uint32_t capacity, uint32_t record_bytes,
                                          uint32_t doorbell_kind, char *err, size_t errlen) {
    if (record_bytes < RING_MIN_RECORD || record_bytes > RING_MAX_RECORD || record_bytes % 8)
        return ring_seg_fail(err, errlen, EINVAL,
                             "record size %u bytes: expected a multiple of 8 from %u to %u",
                             record_bytes, RING_MIN_RECORD, RING_MAX_RECORD);
    if (capacity < RING_MIN_CAPACITY || capacity > RING_MAX_CAPACITY || (capacity & (capacity - 1)))
        return ring_seg_fail(err, errlen, EINVAL,
                             "capacity %u records: expected a power of two from %u to %u",
                             capacity, RING_MIN_CAPACITY, RING_MAX_CAPACITY);
    if (nrings < 1 || nrings > RING_MAX_RINGS)
        return ring_seg_fail(err, errlen, EINVAL, "ring count %u: expected 1 to %u", nrings,
                             RING_MAX_RINGS);
    if (doorbell_kind != DOORBELL_FUTEX && doorbell_kind != DOORBELL_EVENTFD)
        return ring_seg_fail(err, errlen, EINVAL,
                             "doorbell kind %u: expected %d (futex) or %d (eventfd)",
                             doorbell_kind, DOORBELL_FUTEX, DOORBELL_EVENTFD);
    uint64_t total = ring_seg_layout_bytes(nrings, capacity, record_bytes);
    if (total > RING_MAX_BYTES)
        return ring_seg_fail(err, errlen, EINVAL,
                             "%u rings of %u records of %u bytes need %llu bytes, more than "
                             "the %llu a segment may hold", nrings, capacity, record_bytes,
                             (unsigned long long)total, (unsigned long long)RING_MAX_BYTES);
    return 0;
}

/* Create the segment file ``path`` (must not exist), mode 0600, and map it. */
static inline int ring_seg_create(ring_seg_t *s, const char *path, uint32_t nrings,
                                  uint32_t capacity, uint32_t record_bytes,
                                  uint32_t doorbell_kind, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    int e = ring_seg_check_geometry(nrings, capacity, record_bytes, doorbell_kind, err, errlen);
    if (e) return e;
    uint64_t total = ring_seg_layout_bytes(nrings, capacity, record_bytes);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return ring_seg_fail(err, errlen, errno, "cannot create %s: %s", path, strerror(errno));
    /* the umask can only clear bits; set the mode outright anyway */
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)total) != 0) {
        e = errno;
        close(fd);
        unlink(path);
        return ring_seg_fail(err, errlen, e, "cannot size %s to %llu bytes: %s", path,
                             (unsigned long long)total, strerror(e));
    }
    void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    e = errno;
    close(fd);
    if (m == MAP_FAILED) {
        unlink(path);
        return ring_seg_fail(err, errlen, e, "cannot map %s (%llu bytes): %s", path,
                             (unsigned long long)total, strerror(e));
    }
    s->base = (unsigned char *)m;
    s->bytes = total;
    s->record_bytes = record_bytes; s->capacity = capacity; s->nrings = nrings;
    s->doorbell_kind = doorbell_kind;
    ring_seg_header_t *h = (ring_seg_header_t *)s->base;
    h->version = RING_SEG_VERSION;
    h->header_bytes = sizeof *h;
    h->record_bytes = record_bytes;
    h->capacity = capacity;
    h->nrings = nrings;
    h->doorbell_kind = doorbell_kind;
    h->total_bytes = total;
    h->creator_pid = (int32_t)getpid();
    doorbell_init(ring_seg_doorbell(s));
    for (uint32_t i = 0; i < nrings; i++) ring_ctl_init(ring_seg_ctl(s, i));
    atomic_store_explicit(&h->magic, RING_SEG_MAGIC, memory_order_release);
    return 0;
}

/* Map an existing segment and validate everything in it.  ``want_*``: 0 accepts any
 * value, otherwise the file must hold exactly that. */
static inline int ring_seg_attach(ring_seg_t *s, const char *path, uint32_t want_nrings,
                                  uint32_t want_capacity, uint32_t want_record_bytes,
                                  char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return ring_seg_fail(err, errlen, errno, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) != 0) {
        e = errno;
        close(fd);
        return ring_seg_fail(err, errlen, e, "cannot stat %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) e = ring_seg_fail(err, errlen, EINVAL, "%s is not a regular file", path);
    else if (st.st_uid != geteuid())
        e = ring_seg_fail(err, errlen, EPERM, "%s belongs to uid %u, not to this user (%u)", path,
                          (unsigned)st.st_uid, (unsigned)geteuid());
    else if (st.st_mode & 077)
        e = ring_seg_fail(err, errlen, EPERM, "%s has mode %04o: expected 0600 (no access for "
                          "group or others)", path, (unsigned)(st.st_mode & 07777));
    else if ((uint64_t)st.st_size < 128)
        e = ring_seg_fail(err, errlen, EINVAL, "%s has %llu bytes, less than a ring segment's "
                          "128-byte header", path, (unsigned long long)st.st_size);
    if (e) {
        close(fd);
        return e;
    }
    uint64_t size = (uint64_t)st.st_size;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    e = errno;
    close(fd);
    if (m == MAP_FAILED)
        return ring_seg_fail(err, errlen, e, "cannot map %s: %s", path, strerror(e));
    const ring_seg_header_t *h = (const ring_seg_header_t *)m;
    /* one copy of the fields: the file may change under us */
    ring_seg_header_t c;
    char why[256];
    c.magic = atomic_load_explicit(&h->magic, memory_order_acquire);
    memcpy((char *)&c + 8, (const char *)h + 8, sizeof c - 8);
    if (c.magic != RING_SEG_MAGIC)
        e = ring_seg_fail(err, errlen, EINVAL, "%s is not a ring segment (magic %#llx, expected "
                          "%#llx): a foreign file or one whose creator did not finish", path,
                          (unsigned long long)c.magic, (unsigned long long)RING_SEG_MAGIC);
    else if (c.version != RING_SEG_VERSION)
        e = ring_seg_fail(err, errlen, EINVAL, "%s: ring segment version %u, this build reads %u",
                          path, c.version, RING_SEG_VERSION);
    else if (c.header_bytes != sizeof(ring_seg_header_t))
        e = ring_seg_fail(err, errlen, EINVAL, "%s: header of %u bytes, expected %zu", path,
                          c.header_bytes, sizeof(ring_seg_header_t));
    else if ((e = ring_seg_check_geometry(c.nrings, c.capacity, c.record_bytes, c.doorbell_kind,
                                          why, sizeof why)) != 0)
        ring_seg_fail(err, errlen, e, "%s: %s", path, why);
    else if (want_nrings && c.nrings != want_nrings)
        e = ring_seg_fail(err, errlen, EINVAL, "%s holds %u rings, expected %u", path, c.nrings,
                          want_nrings);
    else if (want_capacity && c.capacity != want_capacity)
        e = ring_seg_fail(err, errlen, EINVAL, "%s: capacity %u records, expected %u", path,
                          c.capacity, want_capacity);
    else if (want_record_bytes && c.record_bytes != want_record_bytes)
        e = ring_seg_fail(err, errlen, EINVAL, "%s: records of %u bytes, expected %u", path,
                          c.record_bytes, want_record_bytes);
    else {
        uint64_t layout = ring_seg_layout_bytes(c.nrings, c.capacity, c.record_bytes);
        if (c.total_bytes != layout || size != layout)
            e = ring_seg_fail(err, errlen, EINVAL, "%s: %llu bytes on disk and %llu in the "
                              "header, but its geometry needs %llu", path,
                              (unsigned long long)size, (unsigned long long)c.total_bytes,
                              (unsigned long long)layout);
    }
    if (e) {
        munmap(m, size);
        return e;
    }
    s->base = (unsigned char *)m;
    s->bytes = size;
    s->record_bytes = c.record_bytes; s->capacity = c.capacity; s->nrings = c.nrings;
    s->doorbell_kind = c.doorbell_kind;
    return 0;
}

static inline void ring_seg_unmap(ring_seg_t *s) {
    if (s->base) munmap(s->base, s->bytes);
    s->base = NULL;
}

/* 1 if a process with this pid exists (EPERM: it exists, it is not ours). */
static inline int ring_pid_alive(int32_t pid) {
    if (pid <= 0) return 0;
    return kill(pid, 0) == 0 || errno == EPERM;
}

/* Claim an end (``who``: &ctl->producer_pid or &ctl->consumer_pid) for this process.
 * 0, or EBUSY with the live holder's pid in *holder (this process's own pid when it holds
 * the end already: a second reader or writer in one process would corrupt the ring too). */
static inline int ring_claim(_Atomic int32_t *who, int32_t *holder) {
    int32_t me = (int32_t)getpid();
    for (;;) {
        int32_t cur = atomic_load_explicit(who, memory_order_acquire);
        if (cur == me || (cur != 0 && ring_pid_alive(cur))) {  /* us too: one end, one holder */
            *holder = cur;
            return EBUSY;
        }
        if (atomic_compare_exchange_strong_explicit(who, &cur, me, memory_order_acq_rel,
                                                    memory_order_acquire))
            return 0;
    }
}

static inline void ring_release_claim(_Atomic int32_t *who) {
    int32_t me = (int32_t)getpid();
    atomic_compare_exchange_strong_explicit(who, &me, 0, memory_order_acq_rel, memory_order_relaxed);
}

#endif
