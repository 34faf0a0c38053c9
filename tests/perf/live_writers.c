/*
 * live_writers -- N live processes counting into their stats segments,
 * each row changing between two scrapes: the exporter's fixture of the
 * perf suite (tests/perf/test_exporter.py).
 *
 *   live_writers N
 *
 * Forks N writers (at most 4,096).  Each fires one round: every label set
 * of the reading bench's fixture (tests/stats/stats_workload labels 64: 64
 * handlers, 64 payment results, a label cut at its field's width, a NULL
 * one), durations and amounts moving with the round so native buckets
 * fill.  "ready N" on stdout once all N have fired a round; each line read
 * on stdin is one more round in every writer, then "ready N" again.  At
 * the end of stdin the writers are stopped and it exits 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "billing/probes.h"

#define MAX_WRITERS 4096

static void fire_round(unsigned long long r)
{
	char handler[32];
	for (int i = 0; i < 64; i++) {
		unsigned long long ns = 100000ULL * (1 + (unsigned long long)(i + r) % 50);
		snprintf(handler, sizeof handler, "h%03d", i);
		BILLING_REQUEST_DONE((unsigned long long)i, handler, 0, ns);
		BILLING_PAYMENT_AUTH((unsigned long long)i, 100LL + (long long)(r % 1000) * 7, "EUR", "gw", i, 3 * ns);
	}
	BILLING_REQUEST_DONE(1ULL, "h000-and-a-very-long-tail-that-is-cut-off", 0, 100000ULL);
	BILLING_ERROR(1ULL, NULL, 7);
}

/* A writer: a round now, then one per SIGUSR1, each acknowledged by a
 * byte on ack; it ends with its parent. */
static void writer(int ack, pid_t parent)
{
	sigset_t usr1;
	int sig;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	for (unsigned long long r = 0;; r++) {
		fire_round(r);
		if (write(ack, "x", 1) != 1)
			_exit(1);
		if (sigwait(&usr1, &sig) != 0)
			_exit(1);
	}
}

static int await_acks(int ack, int n)
{
	char buf[256];
	while (n > 0) {
		ssize_t got = read(ack, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		n -= (int)got;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static pid_t pids[MAX_WRITERS];
	int n = argc == 2 ? atoi(argv[1]) : 0, acks[2], rc = 0;
	char line[64];
	sigset_t usr1;

	if (n < 1 || n > MAX_WRITERS) {
		fprintf(stderr, "usage: live_writers N (1..%d)\n", MAX_WRITERS);
		return 2;
	}
	/* Blocked before the fork: a signal sent before a writer waits stays pending. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &usr1, NULL) != 0 || pipe(acks) != 0) {
		perror("live_writers");
		return 1;
	}
	pid_t self = getpid();
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("live_writers: fork");
			n = i;
			rc = 1;
			break;
		}
		if (pids[i] == 0) {
			close(acks[0]);
			writer(acks[1], self);
		}
	}
	close(acks[1]);
	while (rc == 0) {
		if (await_acks(acks[0], n) != 0) {
			fprintf(stderr, "live_writers: a writer ended\n");
			rc = 1;
			break;
		}
		printf("ready %d\n", n);
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin))
			break;
		for (int i = 0; i < n; i++)
			kill(pids[i], SIGUSR1);
	}
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGTERM);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	return rc;
}
