/*
 * bpftrace_process.c -- a running bpftrace as /proc shows it: its SIGINT
 * handler, and whether it waits in epoll_wait (see bpftrace_process.h).
 */
#include "bpftrace_process.h"
#include "proc_status.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int bp_bpftrace_catches_sigint(pid_t pid)
{
	return (bp_proc_status_mask(pid, "SigCgt") >> (SIGINT - 1)) & 1;
}

int bp_bpftrace_idle(pid_t pid)
{
	char path[64], wchan[64] = "";
	snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(wchan, 1, sizeof wchan - 1, f);
	fclose(f);
	wchan[n] = '\0';
	return strcmp(wchan, "do_epoll_wait") == 0;
}

long long bp_monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void bp_sigint_watch_sent(bp_sigint_watch_t *watch)
{
	watch->sent_ms = watch->window_ms = bp_monotonic_ms();
	watch->samples = watch->polling = 0;
}

int bp_sigint_watch_missed(bp_sigint_watch_t *watch, pid_t tracer)
{
	if (!watch->sent_ms)
		return 0;
	int polling = bp_bpftrace_idle(tracer);
	watch->samples++;
	watch->polling += polling;
	long long now = bp_monotonic_ms();
	if (now - watch->window_ms < 1000)
		return 0;
	/* a whole second since the last SIGINT, nearly all of it in epoll_wait */
	int missed = polling && watch->polling * 10 >= watch->samples * 8 && bp_bpftrace_catches_sigint(tracer);
	watch->window_ms = now;
	watch->samples = watch->polling = 0;
	return missed;
}
