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
 *   go N              wait for a line on stdin, then N payment-auth fires,
 *                     print "fired", and stay alive until stdin closes (a
 *                     writer whose fires a tracer attached first sees too)
 *
 * Every mode prints "segment PATH" for the process's segment, one line per
 * process, on stdout.
 */
#include <errno.h>
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
	fprintf(stderr, "usage: stats_workload threads T N | short TOTAL C K | labels N | fork W N P | busy"
	                " | fair CODES JUNK | hold N | go N\n");
	return 2;
}
