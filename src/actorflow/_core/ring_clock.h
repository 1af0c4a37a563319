/* Time and spinning for the ring waits: a monotonic clock in nanoseconds, the pause a
 * spinning waiter issues, and how many CPUs this process may run on (a spin is only worth
 * it while every process of the machine has a core of its own). */
#ifndef AF_RING_CLOCK_H
#define AF_RING_CLOCK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdint.h>
#include <time.h>

static inline int64_t ring_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline struct timespec ring_timespec(int64_t ns) {
    struct timespec ts;
    if (ns < 0) ns = 0;
    ts.tv_sec = (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}

static inline void ring_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/* CPUs this process may run on (its affinity mask, not the machine's count: a container
 * or taskset limits it); at least 1. */
static inline int ring_usable_cpus(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

#endif
