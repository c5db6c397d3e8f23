/* workers.h: independent jobs run on several threads.  Prefix: workers_.
 *
 * The runtime compiles kernels this way (NVRTC takes 0.1 to 1 s a kernel,
 * and the autotuner compiles tens of them): tile_kernel_prefetch, the CUDA
 * backend's prefetch.  A job must touch nothing another job touches; the
 * compiler (lower, passes, emit) keeps no global state, and NVRTC compiles
 * distinct programs concurrently. */
#ifndef TILE_WORKERS_H
#define TILE_WORKERS_H

enum { WORKERS_MAX = 64 };

/* How many threads to run `njobs` jobs on: $TILEC_COMPILE_THREADS when it is
 * a number >= 1, else the CPUs the process may run on (its affinity: a
 * container's cpuset, taskset), at most 32; at most njobs and WORKERS_MAX,
 * at least 1.  (A CPU quota without a cpuset is not seen: set the variable
 * there.) */
int workers_count(int njobs);

/* Calls job(user, i) once for every i in 0..njobs-1, on the calling thread and
 * up to nthreads - 1 others, and returns when all have returned.  Threads
 * that cannot be started leave their share to the rest (at worst the caller
 * runs every job), so this cannot fail. */
void workers_run(int njobs, int nthreads, void (*job)(void *user, int index), void *user);

#endif
