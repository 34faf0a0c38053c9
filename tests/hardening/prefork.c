/*
 * prefork.c -- a pre-forking daemon in miniature, for the fork() test.
 *
 *     prefork WORKERS FIRES
 *
 * The parent forks WORKERS children before any tracer exists, the way a
 * pre-forking billing daemon starts its workers.  Every process then waits
 * for signals:
 *   SIGUSR1  fire one round: FIRES invoice-create probes, then
 *            "fired PID" on stdout (the test counts on the line)
 *   SIGUSR2  (parent) fork one more worker now, maybe while a tracer is on
 *   SIGTERM  exit; the parent first stops and reaps its workers
 * Each process announces itself as "parent PID" or "worker PID" when it is
 * ready for signals.  The probe carries the firing process's PID and the
 * round number, so a tracer's figures can be checked per process.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "billing/probes.h"

#define MAX_WORKERS 16

static pid_t workers[MAX_WORKERS];
static int n_workers;

static void fire_round(long fires, unsigned long long round)
{
	unsigned long long pid = (unsigned long long)getpid();
	long i;
	for (i = 0; i < fires; i++)
		BILLING_INVOICE_CREATE(pid, round, 1250, "EUR");
	printf("fired %llu\n", pid);
}

/* Waits for the stop signals with sigwait(): no handler, no async-signal
 * worries.  Returns when SIGTERM arrives. */
static void serve(const sigset_t *wanted, long fires, int is_parent);

static pid_t start_worker(const sigset_t *wanted, long fires)
{
	pid_t pid;
	if (n_workers == MAX_WORKERS) {
		fprintf(stderr, "prefork: at most %d workers\n", MAX_WORKERS);
		return -1;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("prefork: fork");
		return -1;
	}
	if (pid == 0) {
		n_workers = 0;
		serve(wanted, fires, 0);
		exit(0);
	}
	workers[n_workers++] = pid;
	return pid;
}

static void serve(const sigset_t *wanted, long fires, int is_parent)
{
	unsigned long long round = 0;
	int sig;

	printf("%s %ld\n", is_parent ? "parent" : "worker", (long)getpid());
	for (;;) {
		if (sigwait(wanted, &sig) != 0)
			return;
		if (sig == SIGUSR1)
			fire_round(fires, ++round);
		else if (sig == SIGUSR2 && is_parent)
			start_worker(wanted, fires);
		else if (sig == SIGTERM)
			return;
	}
}

int main(int argc, char **argv)
{
	sigset_t wanted;
	long n, fires;
	char *end;
	int i;

	if (argc != 3) {
		fprintf(stderr, "usage: prefork WORKERS FIRES\n");
		return 2;
	}
	n = strtol(argv[1], &end, 10);
	if (*end != '\0' || n < 0 || n > MAX_WORKERS) {
		fprintf(stderr, "prefork: WORKERS wants 0..%d, got '%s'\n", MAX_WORKERS, argv[1]);
		return 2;
	}
	fires = strtol(argv[2], &end, 10);
	if (*end != '\0' || fires < 1 || fires > 1000000) {
		fprintf(stderr, "prefork: FIRES wants 1..1000000, got '%s'\n", argv[2]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Blocked before the first fork, so every worker inherits the mask. */
	sigemptyset(&wanted);
	sigaddset(&wanted, SIGUSR1);
	sigaddset(&wanted, SIGUSR2);
	sigaddset(&wanted, SIGTERM);
	sigprocmask(SIG_BLOCK, &wanted, NULL);

	for (i = 0; i < n; i++)
		if (start_worker(&wanted, fires) < 0)
			return 1;
	serve(&wanted, fires, 1);
	for (i = 0; i < n_workers; i++)
		kill(workers[i], SIGTERM);
	for (i = 0; i < n_workers; i++)
		waitpid(workers[i], NULL, 0);
	return 0;
}
