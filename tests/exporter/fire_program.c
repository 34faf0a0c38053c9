/*
 * fire_program.c -- fires billing probes in known numbers for the
 * exporter's tests, once the exporter is attached.
 *
 *   fire_program threads T N     T threads, each fires request-done N times
 *                                (same handler and status) and payment-auth N times
 *   fire_program hostile         payment-auth with hostile gateway names:
 *                                not UTF-8, quotes, backslashes, newlines, C1 CSI,
 *                                300 bytes; then, after a line on stdin,
 *                                10,000 distinct names
 *   fire_program spans N         N requests through the timing helpers
 *                                (libbillingprobes) and N through this
 *                                program's own request-start/done macros
 *
 *   fire_program go T N          threads T N, started by a line on stdin
 *                                without waiting for the exporter
 *   fire_program now T N         threads T N at once, without waiting
 *
 * It prints "waiting pid PID" and fires only when the exporter has raised
 * a semaphore (or after ATTACH_WAIT_S: then it exits 3), then prints the counts
 * it fired and waits for a line on stdin (so the test can scrape while it
 * still lives) unless stdin is closed.  "go" and "now" do not wait for the
 * semaphores: they test that the exporter is attached when it says it is
 * ready (a fire while no semaphore is raised is not counted).
 *
 * Built twice: statically against libbillingprobes (only the probes used
 * here are in its notes; FIRE_NO_SPANS leaves the helpers out, so the
 * program carries no db, gateway or transaction probes at all), and with
 * -Wl,--no-as-needed against libbillingprobes.so, so request-done sits in
 * two modules of one process.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "billing/probes.h"
#include "billing/timing.h"
#include "thread_fleet.h"

static long per_thread;

/* How long to wait for the exporter: its start (BPF programs loaded and
 * verified, probes attached) is seconds when idle and many times that
 * beside a loaded machine's other work; the tests' own deadlines are
 * longer still. */
#define ATTACH_WAIT_S 180

static int wait_attached(void)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 }, start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		if (BILLING_REQUEST_DONE_ENABLED() && BILLING_PAYMENT_AUTH_ENABLED())
			return 0;
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < ATTACH_WAIT_S);
	fprintf(stderr, "fire_program: no exporter attached within %d s\n", ATTACH_WAIT_S);
	return -1;
}

static void *fire_thread(void *arg)
{
	(void)arg;
	for (long i = 0; i < per_thread; i++) {
		BILLING_REQUEST_DONE((uint64_t)i, "threads.same", 0, 1000);
		BILLING_PAYMENT_AUTH((uint64_t)i, 100, "EUR", "threads-gw", 0, 2000);
	}
	return NULL;
}

static int run_threads(int threads, long n)
{
	int rc;
	per_thread = n;
	rc = run_fleet(threads, fire_thread);
	if (rc != 0)
		return rc;
	printf("fired request_done=%ld payment_auth=%ld\n", threads * n, threads * n);
	return 0;
}

static int run_hostile(void)
{
	static const char *const odd[] = {
		"bad\xff\xfeutf8",
		"quote\"inside",
		"back\\slash",
		"new\nline",
		"tab\tand\rcr",
		"\xc3\x28",
		"\xe2\x82",
		"ok-\xc3\xa9t\xc3\xa9",
		"c1-\xc2\x9bJ", /* CSI J: erase the screen below */
		"",
		"other",
	};
	char name[400];
	long fired = 0;

	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++, fired++)
		BILLING_PAYMENT_AUTH((uint64_t)i, 100, odd[i], odd[i], 0, 1000);
	memset(name, 'x', 300);
	name[300] = '\0';
	BILLING_PAYMENT_AUTH(1, 100, name, name, 51, 1000);
	BILLING_ERROR(1, name, 7);
	BILLING_REQUEST_DONE(1, name, 500, 1000);
	fired++;
	/* The odd names first, scraped on their own (so they are among the
	 * first 64 values the exporter sees), then the flood. */
	printf("fired payment_auth=%ld\n", fired);
	fflush(stdout);
	if (fgets(name, sizeof name, stdin) == NULL)
		return 0;
	for (int i = 0; i < 10000; i++, fired++) {
		snprintf(name, sizeof name, "gw-%05d", i);
		BILLING_PAYMENT_AUTH((uint64_t)i, 100, "EUR", name, i % 7, 1000);
	}
	printf("fired payment_auth=%ld\n", fired);
	return 0;
}

#ifndef FIRE_NO_SPANS
static int run_spans(long n)
{
	for (long i = 0; i < n; i++) {
		billing_request_t span;
		billing_request_begin(&span, (uint64_t)i, "spans.helper");
		billing_request_end(&span, 0);
	}
	for (long i = 0; i < n; i++) {
		BILLING_REQUEST_START((uint64_t)i, "spans.macro");
		BILLING_REQUEST_DONE((uint64_t)i, "spans.macro", 0, 1000);
	}
	printf("fired helper=%ld macro=%ld\n", n, n);
	return 0;
}
#endif

int main(int argc, char **argv)
{
	int rc = 2;

	printf("waiting pid %d\n", (int)getpid());
	fflush(stdout);
	if (argc < 2)
		goto usage;
	if (strcmp(argv[1], "go") == 0 && argc == 4) {
		char go[8];
		if (fgets(go, sizeof go, stdin) == NULL)
			return 3;
		rc = run_threads(atoi(argv[2]), atol(argv[3]));
	} else if (strcmp(argv[1], "now") == 0 && argc == 4)
		rc = run_threads(atoi(argv[2]), atol(argv[3]));
	else if (wait_attached() != 0)
		return 3;
	else if (strcmp(argv[1], "threads") == 0 && argc == 4)
		rc = run_threads(atoi(argv[2]), atol(argv[3]));
	else if (strcmp(argv[1], "hostile") == 0)
		rc = run_hostile();
#ifndef FIRE_NO_SPANS
	else if (strcmp(argv[1], "spans") == 0 && argc == 3)
		rc = run_spans(atol(argv[2]));
#endif
	else
		goto usage;
	fflush(stdout);
	/* Stay alive until the test has scraped: it writes a line or closes stdin. */
	char line[8];
	if (fgets(line, sizeof line, stdin) == NULL)
		(void)0;
	return rc;
usage:
	fprintf(stderr, "usage: fire_program threads T N | go T N | now T N | hostile | spans N\n");
	return 2;
}
