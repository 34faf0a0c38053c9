/*
 * bpftrace_process.h -- what the trace launcher reads of a running
 * bpftrace through /proc, to start and stop it at the right moments.
 */
#ifndef BP_BPFTRACE_PROCESS_H
#define BP_BPFTRACE_PROCESS_H

#include <sys/types.h>

/* Has bpftrace its SIGINT handler in place (SigCgt in /proc/PID/status)?
 * It installs it once the script is compiled, just before it attaches,
 * and restores the default action when it stops polling, before it
 * prints its maps. */
int bp_bpftrace_catches_sigint(pid_t pid);

/* Is bpftrace asleep in epoll_wait(), every event read so far printed?
 * The moment to send SIGINT: bpftrace 0.17 drops every event it reads
 * after a SIGINT until it leaves its main loop, so a SIGINT that lands
 * while it prints a batch loses the rest of that batch. */
int bp_bpftrace_idle(pid_t pid);

/* How long bpftrace's output must have been quiet, and bpftrace idle, after
 * the traced processes are gone, before the launcher sends SIGINT: a
 * script that prints from a timer (slow_requests' queue of trails, one a
 * millisecond) waits in epoll_wait between two prints, and a SIGINT there
 * would cut the queue short. */
#define BP_BPFTRACE_QUIET_MS 250
/* ... and how long after they are gone it is stopped whatever it prints */
#define BP_BPFTRACE_STOP_MS 5000

/* The launcher's clock: CLOCK_MONOTONIC in milliseconds. */
long long bp_monotonic_ms(void);

/* bpftrace 0.17 looks at its SIGINT flag only when epoll_wait() returns
 * EINTR.  A SIGINT handled while it runs anywhere else (reading events,
 * or runnable but waiting for a CPU on a loaded machine) sets the flag
 * and is never looked at again: it polls until killed.  The watch tells
 * when to send SIGINT again: bpftrace still catches SIGINT (still in its
 * main loop) and has waited in epoll_wait nearly all of a full second
 * since the last SIGINT.  Its drain of END output waits there too, but
 * ends after 100 ms of quiet, so a second SIGINT never cuts it short.
 * (Seen: 6 of 60 stops under CPU contention.)  The tests stop bpftrace
 * by the same rule: billingtest.interrupt_bpftrace() in tests/lib. */
typedef struct {
	long long sent_ms;   /* when the last SIGINT went; 0: none yet */
	long long window_ms; /* start of the current one-second window */
	int samples, polling;
} bp_sigint_watch_t;

/* A SIGINT was just sent (by the launcher, or forwarded). */
void bp_sigint_watch_sent(bp_sigint_watch_t *watch);

/* Call every few tens of milliseconds after a SIGINT: 1 when bpftrace
 * missed it and should get another. */
int bp_sigint_watch_missed(bp_sigint_watch_t *watch, pid_t tracer);

#endif
