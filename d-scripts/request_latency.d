#!/usr/sbin/dtrace -s
/*
 * request_latency.d - requests per handler, how many were slower than a
 * threshold (SLO), and a power-of-two latency histogram per handler, per
 * interval and at exit.  Twin of bpftrace/request_latency.bt.
 *
 * USAGE: dtrace -s request_latency.d -p PID [THRESHOLD_MS [INTERVAL_S]]
 *        dtrace -s request_latency.d -c 'CMD ARGS' [THRESHOLD_MS [INTERVAL_S]]
 *   THRESHOLD_MS  a request is slow when its duration exceeds this (default 250)
 *   INTERVAL_S    seconds between reports (default 10)
 *
 * Source: request-done's duration_ns, measured in the service, read as
 * the unsigned 64-bit value it is (D's argN are signed: a duration from
 * 2^63 ns up, such as a clock read backwards, would be negative).  0 means
 * "not measured" (the request began before tracing): skipped, and counted
 * at exit as UNMEASURED.
 *
 * FIELDS (table every INTERVAL_S for that interval, and "TOTAL" at exit;
 * one row per handler, largest COUNT first):
 *   HANDLER   request-done's handler ("-" if empty)
 *   COUNT     requests completed (count)
 *   SLOW      of which slower than THRESHOLD_MS (count)
 *   (SLOW%, the SLO miss rate, and P50_US, P95_US, P99_US: the bpftrace
 *   twin prints them; this one cannot, see below)
 *   at exit: @usecs[HANDLER], a power-of-two histogram (quantize) of
 *   latency, us: a percentile lies in the bucket where the running count
 *   passes that share of COUNT.  Every duration has its row (quantize()
 *   places every 64-bit value; the bpftrace twin too, one line per
 *   bucket).
 *
 * EXACTNESS: every figure is an aggregation (per-CPU, summed by dtrace
 * when printed): the TOTAL and the histograms, printed once at exit, are
 * exact under any contention.  An interval's table is printed, then
 * truncated: on Oracle's DTrace for Linux trunc() also deletes the
 * requests that completed while dtrace copied it, which then show in no
 * interval (the TOTAL counts them; D cannot enumerate handlers to count
 * them in variables, as tps.d counts seconds).  This twin prints no SLOW%
 * and no percentile estimates: D cannot read an aggregation back nor
 * divide one by another, and figures from global arrays lose updates
 * when CPUs race.  SLOW / COUNT is the SLO miss rate; the bpftrace twin
 * and billing-exporter compute it (d-scripts/README.md).
 *
 * OVERHEAD: per request-done, a string copy and five aggregation updates.
 * STABILITY: Evolving (probe request-done).
 * EXAMPLE: request_latency.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option aggsortrev

dtrace:::BEGIN
{
	threshold_ns = ($1 > 0 ? $1 : 250) * 1000000;
	interval = $2 > 0 ? $2 : 10;
	secs = 0;
	@unmeasured = sum(0);	/* so that 0 is printed */
	printf("Tracing request latency, slow > %d ms, every %d s. Hit Ctrl-C to end.\n",
	    threshold_ns / 1000000, interval);
}

billing$target:::request-done
/arg3 == 0/
{
	@unmeasured = sum(1);
}

billing$target:::request-done
/arg3 != 0/
{
	this->ns = (uint64_t)arg3;
	this->handler = copyinstr(arg1);
	this->handler = this->handler == "" ? "-" : this->handler;
	this->slow = this->ns > threshold_ns ? 1 : 0;
	@count[this->handler] = count();
	@slow[this->handler] = sum(this->slow);
	@tcount[this->handler] = count();
	@tslow[this->handler] = sum(this->slow);
	@usecs[this->handler] = quantize(this->ns / 1000);
}

profile:::tick-1sec
{
	secs++;
	this->now = walltimestamp / 1000000000;
}

profile:::tick-1sec
/secs >= interval/
{
	printf("\n%02d:%02d:%02d  last %d s, slow: > %d ms\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval,
	    threshold_ns / 1000000);
	printf("%-24s %8s %8s\n", "HANDLER", "COUNT", "SLOW");
	printa("%-24s %@8d %@8d\n", @count, @slow);
	trunc(@count);
	trunc(@slow);
	secs = 0;
}

dtrace:::END
{
	this->now = walltimestamp / 1000000000;
	printf("\n%02d:%02d:%02d  TOTAL since start, slow: > %d ms\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60,
	    threshold_ns / 1000000);
	printf("%-24s %8s %8s\n", "HANDLER", "COUNT", "SLOW");
	printa("%-24s %@8d %@8d\n", @tcount, @tslow);
	printa("\nUNMEASURED (duration 0, skipped): %@d\n", @unmeasured);
	printf("\nLatency per handler, us (power-of-two buckets):\n");
	printa("@usecs[%s]:\n%@d\n", @usecs);
}

/* dtrace prints at exit every aggregation left with data */
dtrace:::END
{
	trunc(@count); trunc(@slow); trunc(@tcount); trunc(@tslow);
	trunc(@unmeasured); trunc(@usecs);
}
