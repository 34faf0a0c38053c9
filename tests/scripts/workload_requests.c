/*
 * workload_requests.c -- scripts-workload's per-request modes: requests,
 * long, bounds, burst, overlap and simultaneous (workload.c describes them;
 * expected.py holds their figures).  Request IDs are ID_BASE + n, transaction IDs
 * BIG_ID_BASE + request ID, invoice IDs BIG_ID_BASE + 2^32 + request ID.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <unistd.h>

#include "billing/probe_functions.h"
#include "workload.h"

/* --- requests ------------------------------------------------------------ */

/* Two handlers on two threads at once.  Durations are reported, not
 * measured, so the histograms and SLO shares are exact:
 *   invoice.create    100: 85 x 3 ms, 10 x 20 ms, 5 x 150 ms (slow)
 *   payment.authorize  50: 40 x 40 ms, 6 x 90 ms, 4 x 250 ms (slow, 2 of
 *                      them declined with status 402 and a gateway error)
 * plus 3 "report.export" requests with duration 0 (not measured).
 * Invoices are credit notes of -3,000,000,000 EUR (signed, beyond 32 bits),
 * payments 4,300,000,000 USD (above 2^32). */
#define INVOICE_AMOUNT (-3000000000LL)
#define PAYMENT_AMOUNT 4300000000LL

struct request_plan {
	const char *handler;
	uint64_t first_id;
	int count;
};

static uint64_t invoice_duration(int i)
{
	return i < 85 ? 3 * MS : i < 95 ? 20 * MS
	                                : 150 * MS;
}

static uint64_t payment_duration(int i)
{
	return i < 40 ? 40 * MS : i < 46 ? 90 * MS
	                                 : 250 * MS;
}

/* A pause between probes so the two threads' trails interleave.  2 ms:
 * the requests then start at about 250 a second, a pace Oracle's DTrace for
 * Linux follows even when dtrace is short of CPU (it keeps 16 speculations,
 * and a request's stays taken until dtrace has read its discard; at 100 us
 * a dtrace beside two busy loops left some requests untracked). */
static void step(void)
{
	sleep_ns(2 * MS);
}

static void invoice_request(uint64_t id, int i)
{
	billing_fire_request_start(id, "invoice.create");
	step();
	billing_fire_transaction_start(BIG_ID_BASE + id, "invoice", INVOICE_AMOUNT, "EUR");
	billing_fire_db_query_start(id, "invoice.insert");
	step();
	billing_fire_db_query_done(id, "invoice.insert", 0, 1 * MS);
	billing_fire_invoice_create(BIG_ID_BASE + 0x100000000ULL + id, ID_BASE + 77, INVOICE_AMOUNT, "EUR");
	billing_fire_transaction_done(BIG_ID_BASE + id, "invoice", 0, 2 * MS);
	step();
	billing_fire_request_done(id, "invoice.create", 0, invoice_duration(i));
}

static void payment_request(uint64_t id, int i)
{
	int declined = i >= 48; /* the last two slow ones */
	int result = declined ? 51 : 0;
	billing_fire_request_start(id, "payment.authorize");
	step();
	billing_fire_transaction_start(BIG_ID_BASE + id, "payment", PAYMENT_AMOUNT, "USD");
	billing_fire_gateway_call_start(id, "stripe-sim", "authorize");
	step();
	billing_fire_gateway_call_done(id, "stripe-sim", "authorize", result, 20 * MS);
	billing_fire_payment_auth(id, PAYMENT_AMOUNT, "USD", "stripe-sim", result, 20 * MS);
	if (declined)
		billing_fire_error(id, "gateway", 402);
	billing_fire_transaction_done(BIG_ID_BASE + id, "payment", result, 21 * MS);
	step();
	billing_fire_request_done(id, "payment.authorize", declined ? 402 : 0, payment_duration(i));
}

/* The payment thread starts once the first invoice request is done: a
 * script meets each handler for the first time one after the other (two
 * handlers first met on two CPUs at the same instant may share a row for
 * one event in request_latency.bt, which would make exact figures flaky). */
static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t first_done_cond = PTHREAD_COND_INITIALIZER;
static int first_done;

static void *invoice_thread(void *unused)
{
	int i;
	(void)unused;
	for (i = 0; i < 100; i++) {
		invoice_request(ID_BASE + 1000 + (uint64_t)i, i);
		if (i == 0) {
			pthread_mutex_lock(&first_lock);
			first_done = 1;
			pthread_cond_signal(&first_done_cond);
			pthread_mutex_unlock(&first_lock);
		}
	}
	return NULL;
}

static void *payment_thread(void *unused)
{
	int i;
	(void)unused;
	pthread_mutex_lock(&first_lock);
	while (!first_done)
		pthread_cond_wait(&first_done_cond, &first_lock);
	pthread_mutex_unlock(&first_lock);
	for (i = 0; i < 50; i++) {
		payment_request(ID_BASE + 2000 + (uint64_t)i, i);
		step(); /* half as many requests over about the same time */
	}
	for (i = 0; i < 3; i++) {
		billing_fire_request_start(ID_BASE + 3000 + (uint64_t)i, "report.export");
		billing_fire_request_done(ID_BASE + 3000 + (uint64_t)i, "report.export", 0, 0);
	}
	return NULL;
}

int run_requests(void)
{
	pthread_t a, b;
	if (pthread_create(&a, NULL, invoice_thread, NULL) != 0 ||
	    pthread_create(&b, NULL, payment_thread, NULL) != 0) {
		fprintf(stderr, "scripts-workload: cannot start threads\n");
		return 1;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	/* then one 1 ms request on each of 8 more handlers, one after
	 * another: 10 handlers, more than request_latency has rows for */
	for (int k = 1; k <= 8; k++) {
		char handler[32];
		snprintf(handler, sizeof handler, "extra.%d", k);
		billing_fire_request_start(ID_BASE + 7000 + (uint64_t)k, handler);
		billing_fire_request_done(ID_BASE + 7000 + (uint64_t)k, handler, 0, 1 * MS);
	}
	return 0;
}

/* --- long --------------------------------------------------------------- */

#define SECOND (1000 * MS)

/* Requests that report durations no test can wait for, around the limits
 * of bpftrace 0.17's hist() (2^31 and 2^32 us) and up to the largest
 * duration_ns (expected.py: LONG_REQUESTS):
 *   batch.settle  100: 40 x 1 s, 20 x 25 min (2^30 to 2^31 us), 35 x 50 min
 *                 (2^31 to 2^32 us), 5 x 2 h (2^32 us or more)
 *   ledger.close    2: 10 days, and 2^64 - 1000 ns (a duration computed
 *                 from a clock read backwards: above 2^63, negative if
 *                 read signed) */
struct long_plan {
	int count;
	uint64_t duration_ns;
};

static void long_requests(const char *handler, const struct long_plan *plan, int steps,
                          uint64_t *id)
{
	for (int s = 0; s < steps; s++) {
		for (int i = 0; i < plan[s].count; i++, (*id)++) {
			billing_fire_request_start(*id, handler);
			billing_fire_request_done(*id, handler, 0, plan[s].duration_ns);
		}
	}
}

void run_long(void)
{
	static const struct long_plan settle[4] = {
		{ 40, 1 * SECOND }, { 20, 1500 * SECOND }, { 35, 3000 * SECOND }, { 5, 7200 * SECOND }
	};
	static const struct long_plan close[2] = {
		{ 1, 864000 * SECOND }, { 1, UINT64_MAX - 999 }
	};
	uint64_t id = ID_BASE + 10000;
	long_requests("batch.settle", settle, 4, &id);
	long_requests("ledger.close", close, 2, &id);
}

/* --- bounds -------------------------------------------------------------- */

/* Request ID_BASE + 5000 fires 40 db-query pairs (82 events in all); then,
 * once its trail is printed (slow_requests.bt holds a done trail until then:
 * 50 ms is fifty of its 1 ms ticks), requests ID_BASE + 6000..6129 all
 * start before any finishes.  Every one is slow (500 ms, 200 ms reported). */
void run_bounds(void)
{
	const uint64_t long_one = ID_BASE + 5000;
	int i;
	billing_fire_request_start(long_one, "report.export");
	for (i = 0; i < 40; i++) {
		billing_fire_db_query_start(long_one, "report.page");
		billing_fire_db_query_done(long_one, "report.page", 0, 1 * MS);
	}
	billing_fire_request_done(long_one, "report.export", 0, 500 * MS);
	sleep_ns(50 * MS);
	for (i = 0; i < 130; i++)
		billing_fire_request_start(ID_BASE + 6000 + (uint64_t)i, "invoice.create");
	for (i = 0; i < 130; i++)
		billing_fire_request_done(ID_BASE + 6000 + (uint64_t)i, "invoice.create", 0, 200 * MS);
}

/* --- burst -------------------------------------------------------------- */

/* Requests ID_BASE + 8000..8099, each slow, 5 ms apart (expected.py:
 * BURST_IDS). */
void run_burst(void)
{
	for (int i = 0; i < 100; i++) {
		billing_fire_request_start(ID_BASE + 8000 + (uint64_t)i, "report.burst");
		billing_fire_request_done(ID_BASE + 8000 + (uint64_t)i, "report.burst", 0, 150 * MS);
		sleep_ns(5 * MS);
	}
}

/* --- begun ------------------------------------------------------------- */

#define BEGUN_EARLY (ID_BASE + 12000)

/* Fired before the tracer attaches (expected.py: BEGUN_*). */
void begin_before_tracing(void)
{
	billing_fire_request_start(BEGUN_EARLY, "report.begun");
}

/* The early request ends slow; one more slow request runs whole. */
void run_begun(void)
{
	billing_fire_db_query_start(BEGUN_EARLY, "report.page");
	billing_fire_db_query_done(BEGUN_EARLY, "report.page", 0, 2 * MS);
	billing_fire_request_done(BEGUN_EARLY, "report.begun", 0, 300 * MS);
	billing_fire_request_start(BEGUN_EARLY + 1, "report.whole");
	billing_fire_request_done(BEGUN_EARLY + 1, "report.whole", 0, 300 * MS);
}

/* --- overlap ------------------------------------------------------------ */

#define OVERLAP_SLOW (ID_BASE + 9000)

/* The slow request's db query, handed to another thread: it carries the
 * request_id, so it joins the slow request's trail. */
static void *overlap_db_query(void *unused)
{
	(void)unused;
	billing_fire_db_query_start(OVERLAP_SLOW, "report.page");
	billing_fire_db_query_done(OVERLAP_SLOW, "report.page", 0, 2 * MS);
	return NULL;
}

/* Request ID_BASE + 9000 (slow: 300 ms reported, at least 60 ms real)
 * starts, then 40 fast requests (1 ms reported) start and finish one after
 * another on the same thread, each with a db query, while the slow one's
 * db-query pair fires half-way on another thread, and its request-done
 * last (expected.py: OVERLAP_*).  One thread on one CPU: a tracer whose
 * state for the slow request is overwritten by the fast ones' (storage
 * freed by one request and reused by the next) shows it here on every
 * run. */
void run_overlap(void)
{
	cpu_set_t cpu0;
	pthread_t helper;
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	sched_setaffinity(0, sizeof cpu0, &cpu0); /* best effort */
	billing_fire_request_start(OVERLAP_SLOW, "report.export");
	for (int i = 0; i < 40; i++) {
		uint64_t fast = ID_BASE + 9100 + (uint64_t)i;
		billing_fire_request_start(fast, "invoice.get");
		billing_fire_db_query_start(fast, "invoice.select");
		billing_fire_db_query_done(fast, "invoice.select", 0, 1 * MS);
		billing_fire_request_done(fast, "invoice.get", 0, 1 * MS);
		if (i == 19 && pthread_create(&helper, NULL, overlap_db_query, NULL) == 0)
			pthread_join(helper, NULL);
		sleep_ns(1500000); /* 1.5 ms: 60 ms in all */
	}
	billing_fire_request_done(OVERLAP_SLOW, "report.export", 0, 300 * MS);
}

/* --- simultaneous -------------------------------------------------------- */

/* SIM_THREADS threads, each pinned to a CPU of its own where there are
 * enough (best effort), in SIM_ROUNDS rounds: each starts SIM_BATCH slow
 * requests (a db-query pair each), all wait at a spinning barrier, then
 * each fires its SIM_BATCH request-dones back to back, so that request-done
 * runs on every CPU at the same instant.  A pause after each round lets a
 * script print the round's trails.  Request IDs: ID_BASE + 10000 +
 * 1000 x thread + SIM_BATCH x round + n (expected.py: SIMULTANEOUS_*). */
#define SIM_THREADS 2
#define SIM_ROUNDS 6
#define SIM_BATCH 8

static struct {
	int arrived; /* threads at the barrier this round */
	int round;   /* rounds released so far */
} sim_barrier;

/* Spins rather than sleeps: a futex wake-up staggers the threads by tens
 * of microseconds, longer than the probes it is meant to overlap. */
static void sim_wait(int round)
{
	if (__atomic_add_fetch(&sim_barrier.arrived, 1, __ATOMIC_ACQ_REL) == SIM_THREADS) {
		__atomic_store_n(&sim_barrier.arrived, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sim_barrier.round, round + 1, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&sim_barrier.round, __ATOMIC_ACQUIRE) == round)
		sched_yield(); /* a CPU hog may hold the CPU the other thread needs */
}

static void *simultaneous_thread(void *arg)
{
	int k = (int)(intptr_t)arg;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t one;
	if (ncpu >= SIM_THREADS) {
		CPU_ZERO(&one);
		CPU_SET(k, &one);
		pthread_setaffinity_np(pthread_self(), sizeof one, &one); /* best effort */
	}
	for (int round = 0; round < SIM_ROUNDS; round++) {
		uint64_t first = ID_BASE + 10000 + 1000 * (uint64_t)k + SIM_BATCH * (uint64_t)round;
		for (uint64_t id = first; id < first + SIM_BATCH; id++) {
			billing_fire_request_start(id, "report.simultaneous");
			billing_fire_db_query_start(id, "report.page");
			billing_fire_db_query_done(id, "report.page", 0, 1 * MS);
		}
		sim_wait(round);
		for (uint64_t id = first; id < first + SIM_BATCH; id++)
			billing_fire_request_done(id, "report.simultaneous", 0, 150 * MS);
		sleep_ns(30 * MS); /* the round's trails: one a millisecond */
	}
	return NULL;
}

int run_simultaneous(void)
{
	pthread_t t[SIM_THREADS];
	int k, started = 0, rc = 0;
	for (k = 0; k < SIM_THREADS; k++) {
		if (pthread_create(&t[k], NULL, simultaneous_thread, (void *)(intptr_t)k) != 0)
			break;
		started++;
	}
	if (started < SIM_THREADS) {
		fprintf(stderr, "scripts-workload: cannot start threads\n");
		return 1; /* the started ones wait at the barrier until exit */
	}
	for (k = 0; k < started; k++)
		rc |= pthread_join(t[k], NULL);
	return rc != 0;
}
