/*
 * workload.c -- fires a known, deterministic sequence of billing probes so
 * the tests can assert the exact figures the d-scripts print.
 *
 * usage: scripts-workload MODE [--delay-ms N | --wait-stdin] [--linger-ms N] [--hold-stdin] [--keep-cpus-busy]
 *                             [--path FILE]
 *
 *   business  1000 invoices (120 of them credit notes, a negative amount;
 *             100 of 5,000,000,000, above 2^32), 1000 payments (700 approved,
 *             300 of them of 2,200,000,000, above 2^31; 300 declined over
 *             two gateways), 50 refunds, 24 errors: biz_metrics,
 *             amount_dist, errors (and tps totals).
 *   requests  150 requests on two threads at once, each with its whole
 *             trail (transaction, db or gateway call, payment-auth, error),
 *             reporting chosen durations, then 8 more handlers' 1 ms
 *             requests: request_latency, slow_requests.
 *   long      102 requests reporting durations from 1 s to 2^64 - 1000 ns,
 *             across 2^31 and 2^32 us (workload_requests.c):
 *             request_latency's histograms and percentiles of durations no
 *             test can wait for.
 *   bounds    one request with 80 db-query events (more than slow_requests
 *             keeps) and 130 requests in flight at once (more than it
 *             follows), all slow: slow_requests' bounded memory.
 *   burst     100 slow requests (150 ms reported), one every 5 ms, then
 *             the exit (the tests pass --linger-ms 300): slow_requests
 *             prints every trail of a burst within its capacity.
 *   overlap   one slow request on one thread, pinned to one CPU, while 40
 *             fast ones start and finish on that thread inside it, its
 *             db query on another thread: slow_requests keeps the slow
 *             one's state whole.
 *   simultaneous  2 threads, one per CPU, start 8 slow requests each, then
 *             fire their request-dones at the same instant, 6 times:
 *             slow_requests prints every trail of requests finishing on
 *             two CPUs at once.
 *   race      4 threads fire the same payment-auth and error rows 20000
 *             times each, all at once: exact per-row totals.
 *   tps       three bursts of transactions, each inside one whole second
 *             of CLOCK_MONOTONIC (the clock bpftrace's nsecs reads): tps.
 *   system    opens --path 25 times writing 8 KiB each (default: a file
 *             in a fresh private directory under /tmp, never a fixed
 *             name there; a symbolic link is never followed), fails to open
 *             --path.missing 5 times, sleeps 20 x 10 ms, touches 512 fresh
 *             pages, spins in workload_busy_spin() on CPU 0: the system
 *             views (syscalls, file_opens, io_bytes, page_faults, cswitch,
 *             cpu_profile).
 *   begun     one request starts before the wait (--wait-stdin or
 *             --delay-ms), so before a tracer attaches; once told to go it
 *             ends slow (300 ms), and one more slow request runs whole:
 *             slow_requests counts the first untracked, prints the second.
 *   park      two threads block in read() until a second line ("wake")
 *             arrives on stdin; "parked TID TID" tells the harness they
 *             are about to: cswitch's off-CPU times, which the harness
 *             makes longer than any test can wait (workload_system.c).
 *
 * Each mode sleeps --delay-ms (default 1200) first so a tracer started with
 * -p has attached -- or, with --wait-stdin, waits for a line on stdin, which
 * the test harness writes once the script has printed its first line (not a
 * signal: a process DTrace holds with ptrace may never see one) -- fires, then sleeps --linger-ms (default 1500) so interval
 * output appears before the exit makes the scripts print their totals.
 * The expected figures live in tests/scripts/expected.py: change both.
 * Every ID is above 2^32 (workload.h: ID_BASE, BIG_ID_BASE).
 * This file: main, the options, the business, race and tps modes;
 * workload_requests.c: requests, long, bounds, burst, begun, overlap, simultaneous;
 * workload_system.c: system, park and --keep-cpus-busy.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "billing/probe_functions.h"
#include "workload.h"

void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One transaction of a kind, with the probes a service fires around it. */
static void transaction(uint64_t tx_id, const char *kind, int64_t amount, const char *currency,
                        int status)
{
	billing_fire_transaction_start(BIG_ID_BASE + tx_id, kind, amount, currency);
	billing_fire_transaction_done(BIG_ID_BASE + tx_id, kind, status, 2 * MS);
}

/* --- business ------------------------------------------------------------ */

static void run_business(void)
{
	/* -500: a credit note; 5,000,000,000 is above 2^32 */
	static const int64_t eur_invoice[5] = { -500, 1500, 2500, 10000, 25000 };
	static const int64_t usd_invoice[4] = { 700, 3000, 50000, 5000000000 };
	uint64_t tx = BIG_ID_BASE + 1;
	int i;

	/* 1000 invoices: 600 EUR (5 amounts x 120), 400 USD (4 amounts x 100). */
	for (i = 0; i < 1000; i++, tx++) {
		const char *cur = i < 600 ? "EUR" : "USD";
		int64_t amount = i < 600 ? eur_invoice[i % 5] : usd_invoice[i % 4];
		billing_fire_transaction_start(tx, "invoice", amount, cur);
		billing_fire_invoice_create(BIG_ID_BASE + 100000 + (uint64_t)i,
		                            ID_BASE + 500 + (uint64_t)(i % 37), amount, cur);
		billing_fire_transaction_done(tx, "invoice", 0, 2 * MS);
	}
	/* 1000 payments: approved 400 stripe-sim EUR 2000 + 300 adyen-sim USD
	 * 2,200,000,000 (above 2^31); declined 200 stripe-sim EUR 9900 code 51
	 * + 100 adyen-sim USD 15000 code 5. */
	for (i = 0; i < 1000; i++, tx++) {
		const char *cur, *gw;
		int64_t amount;
		int result;
		if (i < 400) {
			cur = "EUR", gw = "stripe-sim", amount = 2000, result = 0;
		} else if (i < 700) {
			cur = "USD", gw = "adyen-sim", amount = 2200000000, result = 0;
		} else if (i < 900) {
			cur = "EUR", gw = "stripe-sim", amount = 9900, result = 51;
		} else {
			cur = "USD", gw = "adyen-sim", amount = 15000, result = 5;
		}
		billing_fire_transaction_start(tx, "payment", amount, cur);
		billing_fire_payment_auth(ID_BASE + 200000 + (uint64_t)i, amount, cur, gw, result, 30 * MS);
		billing_fire_transaction_done(tx, "payment", result, 31 * MS);
	}
	/* 50 refunds: 30 EUR 1000 "duplicate", 19 USD 2500 "fraud", 1 USD 777
	 * with an empty reason (the scripts print it as "-"). */
	for (i = 0; i < 50; i++, tx++) {
		const char *cur = i < 30 ? "EUR" : "USD";
		const char *reason = i < 30 ? "duplicate" : i < 49 ? "fraud"
		                                                   : "";
		int64_t amount = i < 30 ? 1000 : i < 49 ? 2500
		                                        : 777;
		billing_fire_transaction_start(tx, "refund", amount, cur);
		billing_fire_refund_process(ID_BASE + 300000 + (uint64_t)i, ID_BASE + 200000 + (uint64_t)i,
		                            amount, cur, reason);
		billing_fire_transaction_done(tx, "refund", 0, 2 * MS);
	}
	/* 24 errors: db 1205 x7, gateway 504 x3, validation 400 x12, "" 1 x2. */
	for (i = 0; i < 7; i++)
		billing_fire_error(0, "db", 1205);
	for (i = 0; i < 3; i++)
		billing_fire_error(0, "gateway", 504);
	for (i = 0; i < 12; i++)
		billing_fire_error(0, "validation", 400);
	for (i = 0; i < 2; i++)
		billing_fire_error(0, "", 1);
}

/* --- race --------------------------------------------------------------- */

/* RACE_THREADS threads fire the same rows at full speed, all released at
 * once: per-row counters that two CPUs update at the same instant must
 * not lose an increment (expected.py: RACE_*). */
#define RACE_THREADS 4
#define RACE_EVENTS 20000

static pthread_barrier_t race_start;

static void *race_thread(void *unused)
{
	int i;
	(void)unused;
	pthread_barrier_wait(&race_start);
	for (i = 0; i < RACE_EVENTS; i++) {
		billing_fire_payment_auth(ID_BASE + (uint64_t)i, 1000, "EUR", "stripe-sim", 0, 1 * MS);
		billing_fire_error(0, "db", 1205);
		/* every 4th slow: 150 ms, over request_latency's 100 ms */
		billing_fire_request_done(ID_BASE + (uint64_t)i, "race", 0, (i % 4 == 0 ? 150 : 2) * MS);
	}
	return NULL;
}

static int run_race(void)
{
	pthread_t t[RACE_THREADS];
	int i, rc = 0;
	pthread_barrier_init(&race_start, NULL, RACE_THREADS);
	for (i = 0; i < RACE_THREADS; i++) {
		if (pthread_create(&t[i], NULL, race_thread, NULL) != 0) {
			fprintf(stderr, "scripts-workload: cannot start threads\n");
			return 1; /* the started ones wait at the barrier until exit */
		}
	}
	for (i = 0; i < RACE_THREADS; i++)
		rc |= pthread_join(t[i], NULL);
	pthread_barrier_destroy(&race_start);
	return rc != 0;
}

/* --- tps ----------------------------------------------------------------- */

/* Sleep until 300 ms into whole second sec of CLOCK_MONOTONIC (not at
 * all when that is past). */
static void sleep_to_second(uint64_t sec)
{
	uint64_t now = monotonic_ns(), target = sec * 1000000000ULL + 300 * MS;
	if (now < target)
		sleep_ns(target - now);
}

/* Bursts of 100 (10 failed), 200 (20 failed), 50 (0 failed) transactions
 * in three consecutive whole seconds, fixed in advance: a burst that a
 * loaded machine slows into the next second's first 300 ms no longer
 * pushes the next burst a second further (seen once in eight runs beside
 * two hogs: 100, 200, 0, 50). */
static void run_tps(void)
{
	static const int burst[3] = { 100, 200, 50 };
	static const int failed[3] = { 10, 20, 0 };
	uint64_t tx = 1, first = monotonic_ns() / 1000000000ULL + 1;
	int b, i;
	for (b = 0; b < 3; b++) {
		sleep_to_second(first + (uint64_t)b);
		for (i = 0; i < burst[b]; i++, tx++)
			transaction(tx, "payment", 1000, "EUR", i < failed[b] ? 51 : 0);
	}
}

/* --- main ---------------------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr, "usage: scripts-workload business|requests|long|bounds|burst|overlap|simultaneous|"
	                "race|tps|system|park|begun\n"
	                "       [--delay-ms N | --wait-stdin] [--linger-ms N] [--hold-stdin] [--path FILE] [--keep-cpus-busy]\n");
	return 2;
}

/* Waits up to 60 s for a line on stdin: the harness's "go" (park: and its
 * "wake"). */
int wait_for_go(void)
{
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
	char line[16];
	int n;
	do
		n = poll(&pfd, 1, 60000);
	while (n < 0 && errno == EINTR);
	if (n <= 0 || read(STDIN_FILENO, line, sizeof line) <= 0) {
		fprintf(stderr, "scripts-workload: no line on stdin within 60 s\n");
		return 1;
	}
	return 0;
}

/* --hold-stdin: after the linger, waits up to 60 s for stdin's end, which
 * the harness gives once the tracers it stopped early have printed: a
 * stack's symbols are read while the process lives, and a tracer slow to
 * see its Ctrl-C on a loaded machine read none when the process had gone. */
static void hold_until_stdin_ends(void)
{
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
	char buf[64];
	for (;;) {
		int n = poll(&pfd, 1, 60000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || read(STDIN_FILENO, buf, sizeof buf) <= 0)
			return;
	}
}

int main(int argc, char **argv)
{
	long delay_ms = 1200, linger_ms = 1500;
	const char *path = NULL; /* run_system makes a private one */
	const char *mode;
	int i, rc = 0, wait_stdin = 0, hold_stdin = 0;

	/* Every page resident, now and later: the pid provider raises no
	 * semaphore, so nothing touches a string literal before a D script's
	 * copyinstr() reads it, and BPF cannot fault a page in. */
	if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
		perror("scripts-workload: mlockall (strings may read as empty)");

	if (argc < 2)
		return usage();
	mode = argv[1];
	for (i = 2; i < argc; i++) {
		char *end = NULL;
		if (strcmp(argv[i], "--wait-stdin") == 0) {
			wait_stdin = 1;
			continue;
		}
		if (strcmp(argv[i], "--hold-stdin") == 0) {
			hold_stdin = 1;
			continue;
		}
		if (strcmp(argv[i], "--keep-cpus-busy") == 0) {
			if (keep_cpus_busy() != 0) {
				fprintf(stderr, "scripts-workload: cannot start the spinner\n");
				return 1;
			}
			continue;
		}
		if (i + 1 >= argc)
			return usage();
		if (strcmp(argv[i], "--path") == 0) {
			path = argv[++i];
			continue;
		}
		if (strcmp(argv[i], "--delay-ms") == 0)
			delay_ms = strtol(argv[++i], &end, 10);
		else if (strcmp(argv[i], "--linger-ms") == 0)
			linger_ms = strtol(argv[++i], &end, 10);
		else
			return usage();
		if (end == NULL || *end != '\0' || end == argv[i] || delay_ms < 0 || linger_ms < 0) {
			fprintf(stderr, "scripts-workload: %s is not a number of milliseconds\n", argv[i]);
			return 2;
		}
	}
	if (strcmp(mode, "business") && strcmp(mode, "requests") && strcmp(mode, "long") &&
	    strcmp(mode, "bounds") && strcmp(mode, "burst") && strcmp(mode, "overlap") &&
	    strcmp(mode, "simultaneous") && strcmp(mode, "race") && strcmp(mode, "tps") &&
	    strcmp(mode, "system") && strcmp(mode, "park") && strcmp(mode, "begun"))
		return usage();
	if (strcmp(mode, "begun") == 0)
		begin_before_tracing();

	if (wait_stdin) {
		if (wait_for_go() != 0)
			return 1;
	} else {
		sleep_ns((uint64_t)delay_ms * MS);
	}
	if (strcmp(mode, "business") == 0)
		run_business();
	else if (strcmp(mode, "requests") == 0)
		rc = run_requests();
	else if (strcmp(mode, "long") == 0)
		run_long();
	else if (strcmp(mode, "bounds") == 0)
		run_bounds();
	else if (strcmp(mode, "burst") == 0)
		run_burst();
	else if (strcmp(mode, "overlap") == 0)
		run_overlap();
	else if (strcmp(mode, "simultaneous") == 0)
		rc = run_simultaneous();
	else if (strcmp(mode, "race") == 0)
		rc = run_race();
	else if (strcmp(mode, "tps") == 0)
		run_tps();
	else if (strcmp(mode, "park") == 0)
		rc = run_park();
	else if (strcmp(mode, "begun") == 0)
		run_begun();
	else
		rc = run_system(path);
	/* Tells the harness the probes have fired: it may stop a tracer now,
	 * while the process lives and its symbols can still be read. */
	printf("fired\n");
	fflush(stdout);
	sleep_ns((uint64_t)linger_ms * MS);
	if (hold_stdin)
		hold_until_stdin_ends();
	return rc;
}
