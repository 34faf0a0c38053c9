/*
 * prefork_service.c -- a pre-forking billing service in miniature, for
 * `billing-probes trace` on a service made of several processes.
 *
 *     prefork_service WORKERS
 *
 * The parent forks WORKERS workers, as a pre-fork daemon does before any
 * tracer exists.  Each process announces itself on stdout ("parent PID",
 * "worker PID") once it waits for signals, and then:
 *   SIGUSR1  fires one round and prints "fired PID N" (N: its rounds so far)
 *   SIGUSR2  (parent) forks one more worker, e.g. while a tracer runs
 *   SIGTERM  exits; the parent first ends and reaps its workers
 * A round is what biz_metrics, tps and errors count: one invoice (1250
 * EUR), one approved payment (1999 EUR), one declined (250000 EUR, code
 * 51), one refund (500 EUR), two transactions (one committed, one failed
 * with status 5) and one error (validation, 22).  Signals are taken with
 * sigwaitinfo(), never in a handler; lines are written whole with one
 * write() each (atomic on the shared pipe).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "billing/probes.h"

#define MAX_WORKERS 64

static void say(const char *what, long n)
{
	char line[96];
	int len = n >= 0 ? snprintf(line, sizeof line, "%s %d %ld\n", what, (int)getpid(), n)
	                 : snprintf(line, sizeof line, "%s %d\n", what, (int)getpid());
	if (write(STDOUT_FILENO, line, (size_t)len) != len)
		_exit(3);
}

static void fire_round(unsigned long long round)
{
	unsigned long long id = ((unsigned long long)getpid() << 20) + round;
	BILLING_INVOICE_CREATE(id, 7, 1250, "EUR");
	BILLING_PAYMENT_AUTH(2 * id, 1999, "EUR", "sim", 0, 1000);
	BILLING_PAYMENT_AUTH(2 * id + 1, 250000, "EUR", "sim", 51, 1000);
	BILLING_REFUND_PROCESS(id, 2 * id, 500, "EUR", "duplicate");
	BILLING_TRANSACTION_DONE(id, "payment", 0, 1000);
	BILLING_TRANSACTION_DONE(id + 1, "payment", 5, 1000);
	BILLING_ERROR(id, "validation", 22);
}

/* Serve signals until SIGTERM.  Returns for the parent on SIGUSR2 (fork
 * a worker) with 1, on SIGTERM with 0. */
static int serve(const sigset_t *set, int is_parent, long *rounds)
{
	for (;;) {
		siginfo_t info;
		int sig = sigwaitinfo(set, &info);
		if (sig == SIGUSR1) {
			fire_round((unsigned long long)++*rounds);
			say("fired", *rounds);
		} else if (sig == SIGUSR2 && is_parent) {
			return 1;
		} else if (sig == SIGTERM) {
			return 0;
		}
	}
}

static pid_t start_worker(const sigset_t *set)
{
	pid_t pid = fork();
	if (pid == 0) {
		long rounds = 0;
		say("worker", -1);
		serve(set, 0, &rounds);
		_exit(0);
	}
	return pid;
}

int main(int argc, char **argv)
{
	int workers = argc > 1 ? atoi(argv[1]) : 3;
	if (workers < 0 || workers > MAX_WORKERS / 2) {
		fprintf(stderr, "usage: prefork_service WORKERS (0 to %d)\n", MAX_WORKERS / 2);
		return 2;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);

	pid_t pids[MAX_WORKERS];
	int n = 0;
	for (int i = 0; i < workers; i++)
		if ((pids[n] = start_worker(&set)) > 0)
			n++;
	long rounds = 0;
	say("parent", -1);
	while (serve(&set, 1, &rounds)) {
		if (n < MAX_WORKERS && (pids[n] = start_worker(&set)) > 0)
			n++;
	}
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGTERM);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	return 0;
}
