/*
 * prefork_program.c -- a pre-fork service built the README's way (linked
 * against libbillingprobes.so): its requests are timed by the library's
 * helpers, so request-start/done fire in libbillingprobes.so, and its
 * invoices by this program's own macro.
 *
 *   prefork_program WORKERS THREADS N
 *
 * Prints "ready pid PID" and waits for a line on stdin; then forks
 * WORKERS workers, each of which, from its first instruction on, serves
 * N requests (each creating one invoice) on each of THREADS threads and
 * exits; once they are all gone it prints "fired requests=R invoices=I"
 * and waits for a line on stdin (or its end) before it exits.  Built
 * twice, as two programs from one source: a service and another program
 * that maps the same library.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "billing/probes.h"
#include "billing/timing.h"
#include "thread_fleet.h"

static long per_thread;

static void *serve(void *arg)
{
	uint64_t base = ((uint64_t)getpid() << 32) | ((uint64_t)(long)arg << 24);
	for (long i = 0; i < per_thread; i++) {
		billing_request_t r;
		billing_request_begin(&r, base + (uint64_t)i, "prefork.invoice");
		BILLING_INVOICE_CREATE(base + (uint64_t)i, 7, 1250, "EUR");
		(void)billing_request_end(&r, 0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	char line[16];
	if (argc != 4 || atoi(argv[1]) < 1 || atoi(argv[2]) < 1 || atol(argv[3]) < 1) {
		fprintf(stderr, "usage: prefork_program WORKERS THREADS N\n");
		return 2;
	}
	int workers = atoi(argv[1]), threads = atoi(argv[2]);
	per_thread = atol(argv[3]);
	printf("ready pid %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 3;
	for (int w = 0; w < workers; w++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			_exit(run_fleet(threads, serve));
	}
	int failed = 0, status;
	while (wait(&status) > 0)
		failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	if (failed) {
		fprintf(stderr, "prefork_program: a worker failed\n");
		return 1;
	}
	long fired = (long)workers * threads * per_thread;
	printf("fired requests=%ld invoices=%ld\n", fired, fired);
	fflush(stdout);
	/* alive until the test has scraped: it writes a line or closes stdin */
	if (fgets(line, sizeof line, stdin) == NULL)
		(void)0;
	return 0;
}
