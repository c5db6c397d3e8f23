/* workers.c: independent jobs on several threads (workers.h). */
#define _GNU_SOURCE   /* sched_getaffinity, CPU_COUNT */
#include "workers.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#define WORKERS_STACK_BYTES ((size_t)16 << 20)
/* Without TILEC_COMPILE_THREADS: NVRTC takes some hundreds of MB a compile,
 * and a tuner's batch or a driver's kernels are tens at most */
#define WORKERS_DEFAULT_MAX 32

int workers_count(int njobs) {
    long n = 0;
    const char *v = getenv("TILEC_COMPILE_THREADS");
    if (v && *v) {
        char *end;
        n = strtol(v, &end, 10);
        if (*end || n < 1) n = 0;   /* (not a count: as if unset) */
    }
    if (n == 0) {   /* the CPUs this process may run on (a container's or taskset's), at most WORKERS_DEFAULT_MAX */
        cpu_set_t set;
        n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
        if (n > WORKERS_DEFAULT_MAX) n = WORKERS_DEFAULT_MAX;
    }
    if (n > njobs) n = njobs;
    if (n > WORKERS_MAX) n = WORKERS_MAX;
    return n < 1 ? 1 : (int)n;
}

typedef struct Pool {
    void (*job)(void *user, int index);
    void *user;
    int njobs;
    int next;   /* the next job to take (atomic) */
} Pool;

/* Takes jobs until none is left: threads that start late, or the caller
 * alone, finish the rest. */
static void *take_jobs(void *arg) {
    Pool *p = arg;
    for (;;) {
        int i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (i >= p->njobs) return NULL;
        p->job(p->user, i);
    }
}

void workers_run(int njobs, int nthreads, void (*job)(void *user, int index), void *user) {
    Pool p = {job, user, njobs, 0};
    pthread_t threads[WORKERS_MAX];
    int started = 0;
    if (nthreads > WORKERS_MAX) nthreads = WORKERS_MAX;
    if (nthreads > njobs) nthreads = njobs;
    /* (a generous stack: NVRTC's front end and optimiser run on it, as on a
     * main thread's 8 MiB) */
    pthread_attr_t attr;
    int have_attr = pthread_attr_init(&attr) == 0;
    if (have_attr) pthread_attr_setstacksize(&attr, WORKERS_STACK_BYTES);
    while (started < nthreads - 1 && pthread_create(&threads[started], have_attr ? &attr : NULL, take_jobs, &p) == 0)
        started++;
    if (have_attr) pthread_attr_destroy(&attr);
    take_jobs(&p);
    for (int t = 0; t < started; t++) pthread_join(threads[t], NULL);
}
