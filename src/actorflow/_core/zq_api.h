/* libzmq's C API, found at run time in the libzmq pyzmq already loaded.
 *
 * No zmq.h and no link step: the wheel ships no header, and linking would tie the build to
 * one ``libzmq-<hash>.so``; a second libzmq (the system's) could not use pyzmq's sockets
 * (ENOTSOCK).  So the few functions are declared here (their C ABI has been stable since
 * libzmq 4.0) and resolved with ``dlopen(<pyzmq's extension>, RTLD_NOLOAD)`` + ``dlsym``,
 * which searches that extension's dependencies (pyzmq.libs/libzmq-*.so).  A missing symbol
 * fails the load with its name; nothing here works before ``zq_load`` succeeded.
 *
 * The table is static: every compiled module that includes this header loads its own copy
 * (``zq_load`` is cheap and idempotent). */
#ifndef AF_ZQ_API_H
#define AF_ZQ_API_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* constants of zmq.h (part of the ABI) */
#define ZQ_DONTWAIT 1
#define ZQ_SNDMORE 2
#define ZQ_POLLIN 1
#define ZQ_POLLOUT 2
#define ZQ_RCVMORE 13
#define ZQ_TYPE 16
#define ZQ_ETERM (156384712 + 53)   /* ZMQ_HAUSNUMERO + 53 */

typedef struct {
    _Alignas(8) unsigned char _[64];
} zq_msg_t;                          /* zmq_msg_t: 64 opaque bytes */

typedef struct {
    void *socket;
    int fd;
    short events;
    short revents;
} zq_pollitem_t;                     /* zmq_pollitem_t on POSIX */

typedef void(zq_free_fn)(void *data, void *hint);

typedef struct {
    int (*msg_init)(zq_msg_t *m);
    int (*msg_init_data)(zq_msg_t *m, void *data, size_t size, zq_free_fn *ffn, void *hint);
    int (*msg_send)(zq_msg_t *m, void *s, int flags);
    int (*msg_recv)(zq_msg_t *m, void *s, int flags);
    int (*msg_close)(zq_msg_t *m);
    void *(*msg_data)(zq_msg_t *m);
    size_t (*msg_size)(const zq_msg_t *m);
    int (*msg_more)(const zq_msg_t *m);
    int (*send)(void *s, const void *buf, size_t len, int flags);
    int (*poll)(zq_pollitem_t *items, int nitems, long timeout_ms);
    int (*getsockopt)(void *s, int opt, void *val, size_t *len);
    int (*errno_)(void);
    const char *(*strerror)(int errnum);
    void (*version)(int *major, int *minor, int *patch);
    int loaded;
    char libpath[512];               /* the file the functions came from */
} zq_api_t;

static zq_api_t ZQ;

/* Resolve the functions from ``path``, a file already loaded in this process (pyzmq's
 * extension, or libzmq itself).  0, or -1 with the reason in ``err``. */
static inline int zq_load(const char *path, char *err, size_t errlen) {
    if (ZQ.loaded) return 0;
    zq_api_t api;
    memset(&api, 0, sizeof api);
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, errlen, "%s is not loaded in this process (import zmq first): %s", path,
                 why ? why : "dlopen failed");
        return -1;
    }
    struct { const char *name; void **slot; } want[] = {
        {"zmq_msg_init", (void **)&api.msg_init},
        {"zmq_msg_init_data", (void **)&api.msg_init_data},
        {"zmq_msg_send", (void **)&api.msg_send},
        {"zmq_msg_recv", (void **)&api.msg_recv},
        {"zmq_msg_close", (void **)&api.msg_close},
        {"zmq_msg_data", (void **)&api.msg_data},
        {"zmq_msg_size", (void **)&api.msg_size},
        {"zmq_msg_more", (void **)&api.msg_more},
        {"zmq_send", (void **)&api.send},
        {"zmq_poll", (void **)&api.poll},
        {"zmq_getsockopt", (void **)&api.getsockopt},
        {"zmq_errno", (void **)&api.errno_},
        {"zmq_strerror", (void **)&api.strerror},
        {"zmq_version", (void **)&api.version},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        dlerror();
        void *p = dlsym(h, want[i].name);
        if (!p) {
            const char *why = dlerror();
            snprintf(err, errlen, "libzmq symbol %s not found through %s: %s", want[i].name,
                     path, why ? why : "no such symbol");
            dlclose(h);
            return -1;
        }
        memcpy(want[i].slot, &p, sizeof p);   /* object pointer -> function pointer */
    }
    Dl_info info;
    void *fp;
    memcpy(&fp, &api.send, sizeof fp);
    if (dladdr(fp, &info) && info.dli_fname)
        snprintf(api.libpath, sizeof api.libpath, "%s", info.dli_fname);
    dlclose(h);   /* drops only our reference: pyzmq keeps the library loaded */
    api.loaded = 1;
    ZQ = api;
    return 0;
}

#endif
