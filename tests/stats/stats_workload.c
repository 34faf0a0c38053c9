/*
 * stats_workload.c -- known numbers of stats-fed probe fires, for
 * tests/stats (test_stats.py computes what each mode must leave in the
 * segment).  Built with BILLING_STATS_FORCE: the probes count into the
 * stats segment whatever -Dstats says.
 *
 *   threads T N       T threads, each N payment-auth and N request-done fires
 *   short TOTAL C K   TOTAL short-lived threads, at most C alive at once, K
 *                     request-done fires each; prints VmRSS before and after
 *   labels N          N distinct handlers and N distinct payment results
 *   fair CODES JUNK   known currencies among JUNK junk ones, in the steps
 *                     of tests/lib/fair_labels.h, without pauses
 *   fork W N P        P fires in the parent, then W forked workers of N fires
 *                     each; worker 0 is SIGKILLed once it has fired and a
 *                     replacement forked; prints every pid and segment path
 *   busy              fire until killed (a writer killed mid-update)
 *   hold N            N payment-auth fires, then stay alive until stdin
 *                     closes (a writer that is still running when read)
 *   full R [hold|trickle|step]
 *                     full label sets: every stats-fed probe, each of its
 *                     label sets (about 300 rows) fired R times with values
 *                     spread over its buckets; then exit, or stay alive until
 *                     stdin closes (hold: idle; trickle: a fire every ms;
 *                     step: at each line of stdin every label set fired
 *                     once more, then "fired")
 *   go N              wait for a line on stdin, then N payment-auth fires,
 *                     print "fired", and stay alive until stdin closes (a
 *                     writer whose fires a tracer attached first sees too)
 *
 * Every mode prints "segment PATH" for the process's segment, one line per
 * process, on stdout.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "billing/probes.h"
#include "fair_labels.h"
#include "thread_fleet.h"

static long per_thread;

/* LeakSanitizer stops the threads with ptrace, which a set-id process
 * (not dumpable) refuses, and cannot read ASAN_OPTIONS there: off in such
 * a run (tests/security runs this program set-uid); read by LSan only. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return getauxval(AT_SECURE) != 0;
}

/* The arguments of fire i: test_stats.py computes the same. */
static void fire_payment(int t, long i)
{
	static const char *const gateways[] = { "gw-a", "gw-b" };
	int result = i % 4 == 0 ? 51 : 0;
	long long amount = (i % 1000) * 37 - 2000;
	unsigned long long duration = (unsigned long long)(i % 7) * 1000000ULL; /* 0: not measured */
	BILLING_PAYMENT_AUTH((unsigned long long)i, amount, "EUR", gateways[t % 2], result, duration);
}

static void *thread_main(void *arg)
{
	int t = (int)(long)arg;
	for (long i = 0; i < per_thread; i++) {
		fire_payment(t, i);
		BILLING_REQUEST_DONE((unsigned long long)i, "payment.authorize", 0, 1000ULL * (unsigned long long)(i % 100));
	}
	return NULL;
}

static void print_segment(void)
{
	printf("segment %d %s\n", (int)getpid(), billing_stats_path());
	fflush(stdout);
}

static int run_threads(int n, long each)
{
	int rc;
	per_thread = each;
	rc = run_fleet(n, thread_main);
	if (rc == 0)
		print_segment();
	return rc;
}

static long vm_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static void *short_main(void *arg)
{
	(void)arg;
	for (long i = 0; i < per_thread; i++)
		BILLING_REQUEST_DONE((unsigned long long)i, "short", 0, 1500000ULL);
	return NULL;
}

static int run_short(long total, int conc, long each)
{
	long rss0 = -1;
	per_thread = each;
	if (conc < 1 || conc > 64)
		return 2;
	BILLING_REQUEST_DONE(0ULL, "short", 0, 1500000ULL); /* the segment exists before RSS is read */
	for (long started = 0; started < total;) {
		int batch = (int)(total - started < conc ? total - started : conc);
		if (run_fleet(batch, short_main) != 0)
			return 1;
		started += batch;
		if (rss0 < 0 && started >= 1000)
			rss0 = vm_rss_kb(); /* after the first 1,000: allocator and slots warm */
	}
	printf("rss_kb %ld %ld\n", rss0, vm_rss_kb());
	print_segment();
	return 0;
}

static int run_labels(int n)
{
	char handler[32];
	for (int i = 0; i < n; i++) {
		snprintf(handler, sizeof handler, "h%03d", i);
		BILLING_REQUEST_DONE((unsigned long long)i, handler, 0, 0ULL);
		BILLING_PAYMENT_AUTH((unsigned long long)i, 100LL, "EUR", "gw", i, 0ULL);
	}
	/* A label longer than its field, a NULL one: cut, and "". */
	BILLING_REQUEST_DONE(1ULL, "h000-and-a-very-long-tail-that-is-cut-off", 0, 0ULL);
	BILLING_ERROR(1ULL, NULL, 7);
	print_segment();
	return 0;
}

/* A worker: N fires, report, wait for the word to exit (or SIGKILL). */
static int pipe_ends[2]; /* the ends a worker closes: the parent's release writer, report reader */

static void worker(long n, int report, int release)
{
	char c;
	close(pipe_ends[0]);
	close(pipe_ends[1]);
	for (long i = 0; i < n; i++)
		fire_payment(0, i);
	print_segment();
	if (write(report, "x", 1) != 1)
		_exit(3);
	while (read(release, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

static pid_t spawn(long n, int report, int release)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		worker(n, report, release);
	return pid;
}

static int run_fork(int w, long n, long p)
{
	int rep[2], rel[2];
	pid_t pids[65];
	char c;
	if (w < 1 || w > 64 || pipe(rep) != 0 || pipe(rel) != 0)
		return 2;
	pipe_ends[0] = rel[1];
	pipe_ends[1] = rep[0];
	for (long i = 0; i < p; i++)
		fire_payment(1, i);
	print_segment();
	for (int i = 0; i < w; i++)
		pids[i] = spawn(n, rep[1], rel[0]);
	for (int i = 0; i < w; i++)
		if (read(rep[0], &c, 1) != 1)
			return 1;
	/* Worker 0 has fired all of its N: kill it and fork a replacement. */
	kill(pids[0], SIGKILL);
	waitpid(pids[0], NULL, 0);
	printf("killed %d\n", (int)pids[0]);
	pids[0] = spawn(n, rep[1], rel[0]);
	if (read(rep[0], &c, 1) != 1)
		return 1;
	close(rel[1]); /* every worker's read returns 0: exit */
	for (int i = 0; i < w; i++)
		waitpid(pids[i], NULL, 0);
	return 0;
}

static int run_busy(void)
{
	for (long i = 0; i < 0x7fffffffffffffffL; i++) {
		fire_payment((int)(i & 1), i);
		if (i == 0)
			print_segment();
	}
	return 1;
}

static int run_hold(long n)
{
	char c;
	for (long i = 0; i < n; i++)
		fire_payment(0, i);
	print_segment();
	for (;;) {
		ssize_t r = read(0, &c, 1);
		if (r == 0 || (r < 0 && errno != EINTR))
			return 0;
	}
}

/* The label values of run_full: a service's worth of each. */
static const char *const full_currencies[8] = { "EUR", "USD", "GBP", "JPY", "CHF", "SEK", "NOK", "DKK" };
static const char *const full_gateways[4] = { "stripe-sim", "adyen-sim", "paypal-sim", "braintree-sim" };
static const char *const full_kinds[3] = { "invoice", "payment", "refund" };
static const char *const full_reasons[4] = { "duplicate", "fraud", "requested_by_customer", "other" };
static const char *const full_components[8] = { "db", "gateway", "http", "json", "auth", "queue", "cache", "ledger" };
static const char *const full_ops[3] = { "authorize", "refund", "capture" };
static char full_handlers[32][16], full_queries[16][24];

/* A value of fire `round`, spread over powers of two from `low`: 1.7x
 * apart, 20 of them. */
static unsigned long long spread(unsigned long long low, long round)
{
	unsigned long long v = low;
	for (long i = 0; i < round % 20; i++)
		v = v * 17 / 10;
	return v + (unsigned long long)round % 7;
}

/* Round `round` of run_full: every label set once, or (one >= 0) the
 * label sets of step `one` of them alone. */
static void full_round(long round, long one)
{
	static const int statuses[3] = { 0, 404, 500 }, results[3] = { 0, 51, 5 }, codes[4] = { 400, 409, 500, 503 };
	unsigned long long id = (unsigned long long)round;
	long step = 0;
#define FULL_STEP (one < 0 || step++ % 64 == one % 64)
	for (int h = 0; h < 32; h++)
		for (int s = 0; s < 3; s++)
			if (FULL_STEP)
				BILLING_REQUEST_DONE(id, full_handlers[h], statuses[s], spread(40000, round + h));
	for (int k = 0; k < 3; k++)
		for (int s = 0; s < 2; s++)
			if (FULL_STEP)
				BILLING_TRANSACTION_DONE(id, full_kinds[k], s, spread(200000, round + k));
	for (int c = 0; c < 8; c++) {
		if (FULL_STEP)
			BILLING_INVOICE_CREATE(id, 7ULL, (long long)spread(90, round + c), full_currencies[c]);
		for (int g = 0; g < 4; g++)
			for (int r = 0; r < 3; r++)
				if (FULL_STEP)
					BILLING_PAYMENT_AUTH(id, (long long)spread(90, round + g), full_currencies[c], full_gateways[g],
					                     results[r], spread(1000000, round + r));
		for (int r = 0; r < 4; r++)
			if (FULL_STEP)
				BILLING_REFUND_PROCESS(id, 9ULL, (long long)spread(90, round + r), full_currencies[c], full_reasons[r]);
		for (int e = 0; e < 4; e++)
			if (FULL_STEP)
				BILLING_ERROR(id, full_components[c], codes[e]);
	}
	for (int q = 0; q < 16; q++)
		if (FULL_STEP)
			BILLING_DB_QUERY_DONE(id, full_queries[q], 0, spread(20000, round + q));
	for (int g = 0; g < 4; g++)
		for (int o = 0; o < 3; o++)
			if (FULL_STEP)
				BILLING_GATEWAY_CALL_DONE(id, full_gateways[g], full_ops[o], 0, spread(1000000, round + o));
#undef FULL_STEP
}

static int run_full(long rounds, const char *then)
{
	char c;
	for (int h = 0; h < 32; h++)
		snprintf(full_handlers[h], sizeof full_handlers[h], "handler.%02d", h);
	for (int q = 0; q < 16; q++)
		snprintf(full_queries[q], sizeof full_queries[q], "query.%02d", q);
	for (long r = 0; r < rounds; r++)
		full_round(r, -1);
	print_segment();
	if (!then)
		return 0;
	int trickle = strcmp(then, "trickle") == 0;
	if (strcmp(then, "step") == 0) {
		char line[64];
		for (long i = 0; fgets(line, sizeof line, stdin); i++) {
			full_round(rounds + i, -1);
			printf("fired\n");
		}
		return 0;
	}
	if (!trickle && strcmp(then, "hold") != 0)
		return 2;
	for (long i = 0;; i++) {
		struct pollfd in = { 0, POLLIN, 0 };
		int ready = poll(&in, 1, trickle ? 1 : -1);
		if (ready > 0 && read(0, &c, 1) <= 0)
			return 0;
		if (trickle)
			full_round(rounds + i, i);
	}
}

static int run_go(long n)
{
	char line[64];
	print_segment();
	if (!fgets(line, sizeof line, stdin))
		return 1;
	for (long i = 0; i < n; i++)
		fire_payment(0, i);
	printf("fired\n");
	while (fgets(line, sizeof line, stdin))
		;
	return 0;
}

static int run_fair(const char *codes, long junk)
{
	if (fire_codes(codes) < 0)
		return 2;
	fire_late_known();
	fire_junk(junk);
	fire_real();
	print_segment();
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "threads") == 0 && argc == 4)
		return run_threads(atoi(argv[2]), atol(argv[3]));
	if (strcmp(mode, "short") == 0 && argc == 5)
		return run_short(atol(argv[2]), atoi(argv[3]), atol(argv[4]));
	if (strcmp(mode, "labels") == 0 && argc == 3)
		return run_labels(atoi(argv[2]));
	if (strcmp(mode, "fork") == 0 && argc == 5)
		return run_fork(atoi(argv[2]), atol(argv[3]), atol(argv[4]));
	if (strcmp(mode, "busy") == 0)
		return run_busy();
	if (strcmp(mode, "hold") == 0 && argc == 3)
		return run_hold(atol(argv[2]));
	if (strcmp(mode, "go") == 0 && argc == 3)
		return run_go(atol(argv[2]));
	if (strcmp(mode, "fair") == 0 && argc == 4)
		return run_fair(argv[2], atol(argv[3]));
	if (strcmp(mode, "full") == 0 && (argc == 3 || argc == 4))
		return run_full(atol(argv[2]), argc == 4 ? argv[3] : NULL);
	fprintf(stderr, "usage: stats_workload threads T N | short TOTAL C K | labels N | fork W N P | busy"
	                " | fair CODES JUNK | hold N | go N | full R [hold|trickle|step]\n");
	return 2;
}
