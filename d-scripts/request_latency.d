#!/usr/sbin/dtrace -Cs
/*
 * request_latency.d - request latency per handler: a power-of-two
 * histogram (us), the share of requests slower than a threshold (SLO), and
 * p50/p95/p99 estimates, per interval and at exit.  Twin of
 * bpftrace/request_latency.bt.
 *
 * USAGE: dtrace -C -s request_latency.d -p PID [THRESHOLD_MS [INTERVAL_S [JSON]]]
 *        dtrace -C -s request_latency.d -c 'CMD ARGS' [THRESHOLD_MS [INTERVAL_S [JSON]]]
 *   -C            the percentile scans are unrolled with the C preprocessor
 *   THRESHOLD_MS  a request is slow when its duration exceeds this (default 100)
 *   INTERVAL_S    seconds between reports (default 10)
 *   JSON          1: one JSON object per interval instead of a table
 *
 * Source: request-done's duration_ns, measured in the service.  0 means
 * "not measured" (the request began before tracing): skipped, and counted
 * at exit as UNMEASURED.
 *
 * FIELDS (table every INTERVAL_S for that interval, and "TOTAL" at exit;
 * rows largest COUNT first):
 *   HANDLER   request-done's handler ("-" if empty); 7 handlers get a row
 *             each, later ones share the row "(other)"
 *   COUNT     requests completed (count)
 *   SLOW      of which slower than THRESHOLD_MS (count)
 *   SLOW%     SLOW / COUNT, percent with 2 decimals (the SLO miss rate)
 *   P50_US, P95_US, P99_US  percentile estimates, microseconds
 *   TIME      HH:MM:SS of walltimestamp, UTC (bpftrace: local time)
 *   at exit: @usecs[HANDLER], a power-of-two histogram (quantize) of
 *   latency, us.
 * How exact the percentiles are: D has no percentile function and
 * printa cannot be read back, so durations are also counted in global
 * arrays of log-linear buckets, 8 per power of two (exact below 8 us; the
 * llquantize idea with factor 2 and 8 steps).  A percentile is reported
 * as the upper edge of the bucket holding the request of that rank
 * (nearest-rank method): never below the true value, at most 12.5% above.
 *
 * JSON schema (a "start" line, one line per interval, "total" at exit):
 *   {"type":"start","threshold_ms":N,"interval_s":N}
 *   {"type":"interval"|"total","time":"HH:MM:SS","threshold_ms":N,
 *    ["unmeasured":N, (total only)]
 *    "handlers":[{"handler":S,"count":N,"slow":N,"slow_pct":F,
 *      "p50_us":N,"p95_us":N,"p99_us":N}, ..., null]}
 *
 * OVERHEAD: per request-done, a few aggregation and global-array updates;
 * per interval an unrolled scan (8 handlers x 3 x (28 groups + 8 buckets))
 * and a sweep that resets the interval's buckets.  Under heavy load dtrace
 * may report "dynamic variable drops" (raise dynvarsize).
 * EXACTNESS: COUNT, SLOW, UNMEASURED and @usecs are aggregations (per-CPU):
 * exact.  A row prints them beside the estimates with printa(), keyed by
 * the handler's name.  SLOW% and the percentiles are computed in the
 * script from global arrays, which D can read (it cannot read an
 * aggregation, nor divide one by another in printa); those are not
 * per-CPU, so two CPUs updating one bucket at the same instant can lose an
 * update, and then SLOW% can differ from SLOW / COUNT in its decimals.
 * Measured under Oracle's DTrace for Linux, 4 threads finishing 80000
 * requests of one handler at full speed on 2 CPUs (tests/scripts, case
 * request_latency_race): COUNT 80000, SLOW 20000 (exact), SLOW% 24.83 to
 * 24.96 for 25.00, the percentiles right.  The interval buckets are reset
 * to 1 (a count of 0), never to 0: zeroing frees a D dynamic variable,
 * and freeing while other CPUs add elements garbled the handler names in
 * that run (an earlier version of this script).
 * STABILITY: Evolving (probe request-done).
 * EXAMPLE: request_latency.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option dynvarsize=8m
#pragma D option aggsortrev

/* --- the unrolled percentile scan (cpp) ------------------------------- */

/* Zeroing a D array element frees it, and freeing while other CPUs add
 * elements garbled the handler names (seen under Oracle's DTrace).  So an
 * interval's counters hold count + 1 and are reset to 1: every element of
 * a row is set when the row is taken (ONES) and never freed.  The
 * totals (t*) are never reset.  A, N and S below are these readers. */
#define LAST_G(H, G) (groups[H, G] - 1)
#define LAST_B(H, B) (bins[H, B] - 1)
#define LAST_N(H) (n[H] - 1)
#define LAST_S(H) (slow[H] - 1)
#define TOTAL_G(H, G) tgroups[H, G]
#define TOTAL_B(H, B) tbins[H, B]
#define TOTAL_N(H) tn[H]
#define TOTAL_S(H) tslow[H]

/* Q: 50, 95 or 99.  Find the group (power of two) holding rank r##Q ... */
#define GSTEP(A, H, Q, G) \
	this->c = A(H, G); \
	this->hit = !this->f##Q && this->cum##Q + this->c >= this->r##Q; \
	this->g##Q = this->hit ? (G) : this->g##Q; \
	this->f##Q = this->hit ? 1 : this->f##Q; \
	this->cum##Q = this->f##Q ? this->cum##Q : this->cum##Q + this->c;
#define G4(A, H, Q, B) \
	GSTEP(A, H, Q, (B)) GSTEP(A, H, Q, (B) + 1) GSTEP(A, H, Q, (B) + 2) GSTEP(A, H, Q, (B) + 3)
#define GSCAN(A, H, Q) \
	G4(A, H, Q, 0) G4(A, H, Q, 4) G4(A, H, Q, 8) G4(A, H, Q, 12) \
	G4(A, H, Q, 16) G4(A, H, Q, 20) G4(A, H, Q, 24)
/* ... then the bucket within it. */
#define BSTEP(A, H, Q, K) \
	this->c = A(H, this->g##Q * 8 + (K)); \
	this->hit = !this->e##Q && this->cum##Q + this->c >= this->r##Q; \
	this->bk##Q = this->hit ? this->g##Q * 8 + (K) : this->bk##Q; \
	this->e##Q = this->hit ? 1 : this->e##Q; \
	this->cum##Q += this->c;
#define BSCAN(A, H, Q) \
	this->bk##Q = this->g##Q * 8 + 7; \
	BSTEP(A, H, Q, 0) BSTEP(A, H, Q, 1) BSTEP(A, H, Q, 2) BSTEP(A, H, Q, 3) \
	BSTEP(A, H, Q, 4) BSTEP(A, H, Q, 5) BSTEP(A, H, Q, 6) BSTEP(A, H, Q, 7)
#define INIT(Q, N) \
	this->r##Q = ((N) * Q + 99) / 100; \
	this->cum##Q = 0; this->f##Q = 0; this->g##Q = 0; this->e##Q = 0; this->bk##Q = 0;
/* the upper edge of bucket bk##Q */
#define EDGE(Q) \
	this->p##Q = this->bk##Q < 8 ? this->bk##Q + 1 : \
	    (9 + (this->bk##Q & 7)) << (this->bk##Q / 8 - 1);

/* the buckets' own total: ranks from it always end in a bucket */
#define GSUM(A, H) \
	this->nb = A(H, 0) + A(H, 1) + A(H, 2) + A(H, 3) + A(H, 4) + A(H, 5) + A(H, 6) + \
	    A(H, 7) + A(H, 8) + A(H, 9) + A(H, 10) + A(H, 11) + A(H, 12) + A(H, 13) + \
	    A(H, 14) + A(H, 15) + A(H, 16) + A(H, 17) + A(H, 18) + A(H, 19) + A(H, 20) + \
	    A(H, 21) + A(H, 22) + A(H, 23) + A(H, 24) + A(H, 25) + A(H, 26) + A(H, 27);

/* One handler's estimates (SLOW%, percentiles), into aggregations keyed by
 * its row's name: printa() prints them beside the row's exact COUNT and
 * SLOW (see ROWS_PRINT).  Two CPUs meeting a new handler at once can both
 * take a row for it (D has no compare-and-swap); only the row its slot
 * points to gives the estimates, the other holds a request or two. */
#define ROW(PROBE, PRED, H, N, SLOW, BINS, GROUPS) \
PROBE /(PRED) && N(H) > 0 && ((H) == 8 || slot[hname[H]] == (H))/ \
{ \
	GSUM(GROUPS, H) \
	INIT(50, this->nb) INIT(95, this->nb) INIT(99, this->nb) \
	GSCAN(GROUPS, H, 50) GSCAN(GROUPS, H, 95) GSCAN(GROUPS, H, 99) \
	BSCAN(BINS, H, 50) BSCAN(BINS, H, 95) BSCAN(BINS, H, 99) \
	EDGE(50) EDGE(95) EDGE(99) \
	this->pct = SLOW(H) * 10000 / N(H); \
	this->name = (H) == 8 ? "(other)" : hname[H]; \
	@pct_whole[this->name] = max(this->pct / 100); \
	@pct_frac[this->name] = max(this->pct % 100); \
	@p50[this->name] = max(this->p50); \
	@p95[this->name] = max(this->p95); \
	@p99[this->name] = max(this->p99); \
}
#define ROWS(PROBE, PRED, N, SLOW, BINS, GROUPS) \
	ROW(PROBE, PRED, 1, N, SLOW, BINS, GROUPS) ROW(PROBE, PRED, 2, N, SLOW, BINS, GROUPS) \
	ROW(PROBE, PRED, 3, N, SLOW, BINS, GROUPS) ROW(PROBE, PRED, 4, N, SLOW, BINS, GROUPS) \
	ROW(PROBE, PRED, 5, N, SLOW, BINS, GROUPS) ROW(PROBE, PRED, 6, N, SLOW, BINS, GROUPS) \
	ROW(PROBE, PRED, 7, N, SLOW, BINS, GROUPS) ROW(PROBE, PRED, 8, N, SLOW, BINS, GROUPS)

/* The rows: exact COUNT and SLOW (aggregations) with the estimates, as a
 * table or as JSON objects; then every aggregation emptied. */
#define ROWS_PRINT(PROBE, PRED, COUNT, SLOWS) \
PROBE /(PRED) && !json/ \
{ \
	printa("%-24s %@8d %@8d %@4d.%@02d %@10d %@10d %@10d\n", COUNT, SLOWS, @pct_whole, \
	    @pct_frac, @p50, @p95, @p99); \
} \
PROBE /(PRED) && json/ \
{ \
	printa("{\"handler\":\"%s\",\"count\":%@d,\"slow\":%@d,\"slow_pct\":%@d.%@02d,\"p50_us\":%@d,\"p95_us\":%@d,\"p99_us\":%@d},", \
	    COUNT, SLOWS, @pct_whole, @pct_frac, @p50, @p95, @p99); \
} \
PROBE /(PRED)/ \
{ \
	trunc(COUNT); trunc(SLOWS); trunc(@pct_whole); trunc(@pct_frac); \
	trunc(@p50); trunc(@p95); trunc(@p99); \
}

/* Row H's interval counters set to 1 (a count of 0): when the row is
 * taken, and after each report. */
#define ONE8(H, B) \
	bins[H, (B)] = 1; bins[H, (B) + 1] = 1; bins[H, (B) + 2] = 1; bins[H, (B) + 3] = 1; \
	bins[H, (B) + 4] = 1; bins[H, (B) + 5] = 1; bins[H, (B) + 6] = 1; bins[H, (B) + 7] = 1; \
	groups[H, (B) / 8] = 1;
#define ONE64(H, B) \
	ONE8(H, (B)) ONE8(H, (B) + 8) ONE8(H, (B) + 16) ONE8(H, (B) + 24) \
	ONE8(H, (B) + 32) ONE8(H, (B) + 40) ONE8(H, (B) + 48) ONE8(H, (B) + 56)
#define ONES(H) \
	ONE64(H, 0) ONE64(H, 64) ONE64(H, 128) \
	ONE8(H, 192) ONE8(H, 200) ONE8(H, 208) ONE8(H, 216) ONE8(H, 224) \
	n[H] = 1; slow[H] = 1;
#define RESET(H) \
profile:::tick-1sec /secs >= interval && n[H] > 1/ \
{ \
	ONES(H) \
}

/* --- tracing ------------------------------------------------------------ */

/* Declared before use: D rejects a "+=" on an array, or a read in a
 * report clause, before it has seen an assignment to it. */
int tslow[int];
int n[int];
int slow[int];
int bins[int, int];
int groups[int, int];

dtrace:::BEGIN
{
	threshold_ns = ($1 > 0 ? $1 : 100) * 1000000;
	interval = $2 > 0 ? $2 : 10;
	json = $3;
	secs = 0;
	nh = 0;
	@unmeasured = sum(0);	/* so that 0 is printed */
	ONES(8)	/* the row "(other)" */
}

dtrace:::BEGIN
/json/
{
	printf("{\"type\":\"start\",\"threshold_ms\":%d,\"interval_s\":%d}\n",
	    threshold_ns / 1000000, interval);
}

dtrace:::BEGIN
/!json/
{
	printf("Tracing request latency, slow > %d ms, every %d s. Hit Ctrl-C to end.\n",
	    threshold_ns / 1000000, interval);
}

billing$target:::request-done
/arg3 == 0/
{
	@unmeasured = sum(1);
}

billing$target:::request-done
/arg3 > 0/
{
	this->handler = copyinstr(arg1);
	this->handler = this->handler == "" ? "-" : this->handler;
}

billing$target:::request-done
/arg3 > 0 && slot[this->handler] == 0 && nh < 7/
{
	nh++;
	slot[this->handler] = nh;
	hname[nh] = this->handler;
	ONES(nh)
}

billing$target:::request-done
/arg3 > 0/
{
	this->h = slot[this->handler] != 0 ? slot[this->handler] : 8;
	this->us = arg3 / 1000;
	@usecs[this->handler] = quantize(this->us);
	/* exact: aggregations are per-CPU */
	this->row = this->h == 8 ? "(other)" : this->handler;
	this->slow = arg3 > threshold_ns ? 1 : 0;
	@count[this->row] = count();
	@tcount[this->row] = count();
	@slowcount[this->row] = sum(this->slow);
	@tslowcount[this->row] = sum(this->slow);

	/* log-linear bucket: 8 per power of two, exact below 8 us */
	this->us = this->us > 2147483647 ? 2147483647 : this->us;
	this->v = this->us;
	this->o = 0;
	this->o += this->v >= 65536 ? 16 : 0;
	this->v = this->v >= 65536 ? this->v >> 16 : this->v;
	this->o += this->v >= 256 ? 8 : 0;
	this->v = this->v >= 256 ? this->v >> 8 : this->v;
	this->o += this->v >= 16 ? 4 : 0;
	this->v = this->v >= 16 ? this->v >> 4 : this->v;
	this->o += this->v >= 4 ? 2 : 0;
	this->v = this->v >= 4 ? this->v >> 2 : this->v;
	this->o += this->v >= 2 ? 1 : 0;
	this->b = this->us < 8 ? this->us :
	    (this->o - 2) * 8 + ((this->us >> (this->o - 3)) & 7);

	n[this->h]++;
	bins[this->h, this->b]++;
	groups[this->h, this->b / 8]++;
	slow[this->h] += this->slow;
	tn[this->h]++;
	tbins[this->h, this->b]++;
	tgroups[this->h, this->b / 8]++;
	tslow[this->h] += this->slow;
}

/* --- every interval ------------------------------------------------------ */

profile:::tick-1sec
{
	secs++;
	this->now = walltimestamp / 1000000000;
}

profile:::tick-1sec
/secs >= interval && !json/
{
	printf("\n%02d:%02d:%02d  last %d s, slow: > %d ms\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval,
	    threshold_ns / 1000000);
	printf("%-24s %8s %8s %7s %10s %10s %10s\n", "HANDLER", "COUNT", "SLOW", "SLOW%",
	    "P50_US", "P95_US", "P99_US");
}

profile:::tick-1sec
/secs >= interval && json/
{
	printf("{\"type\":\"interval\",\"time\":\"%02d:%02d:%02d\",\"threshold_ms\":%d,\"handlers\":[",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60,
	    threshold_ns / 1000000);
}

ROWS(profile:::tick-1sec, secs >= interval, LAST_N, LAST_S, LAST_B, LAST_G)
ROWS_PRINT(profile:::tick-1sec, secs >= interval, @count, @slowcount)

profile:::tick-1sec
/secs >= interval && json/
{
	printf("null]}\n");
}

RESET(1) RESET(2) RESET(3) RESET(4) RESET(5) RESET(6) RESET(7) RESET(8)

profile:::tick-1sec
/secs >= interval/
{
	secs = 0;
}

/* --- at exit -------------------------------------------------------------- */

dtrace:::END
{
	this->now = walltimestamp / 1000000000;
}

dtrace:::END
/!json/
{
	printf("\n%02d:%02d:%02d  TOTAL since start, slow: > %d ms\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60,
	    threshold_ns / 1000000);
	printf("%-24s %8s %8s %7s %10s %10s %10s\n", "HANDLER", "COUNT", "SLOW", "SLOW%",
	    "P50_US", "P95_US", "P99_US");
}

dtrace:::END
/json/
{
	printf("{\"type\":\"total\",\"time\":\"%02d:%02d:%02d\",\"threshold_ms\":%d,",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60,
	    threshold_ns / 1000000);
	printa("\"unmeasured\":%@d,\"handlers\":[", @unmeasured);
}

ROWS(dtrace:::END, 1, TOTAL_N, TOTAL_S, TOTAL_B, TOTAL_G)
ROWS_PRINT(dtrace:::END, 1, @tcount, @tslowcount)

dtrace:::END
/json/
{
	printf("null]}\n");
	trunc(@usecs);
}

dtrace:::END
/!json/
{
	printa("\nUNMEASURED (duration 0, skipped): %@d\n", @unmeasured);
	printf("\nLatency per handler, us (power-of-two buckets):\n");
	printa("@usecs[%s]:\n%@d\n", @usecs);
}

/* dtrace prints at exit every aggregation left with data */
dtrace:::END
{
	trunc(@count); trunc(@slowcount); trunc(@unmeasured);
}
