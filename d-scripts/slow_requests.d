#!/usr/sbin/dtrace -s
/*
 * slow_requests.d - the whole trail of probes of each request slower than
 * a threshold, in order, with offsets from its start; nothing for fast
 * requests.  Speculative tracing: every probe of a request is recorded
 * into a speculation, committed at request-done when the request was
 * slow, discarded otherwise.  Twin of bpftrace/slow_requests.bt.
 *
 * USAGE: dtrace -s slow_requests.d -p PID [THRESHOLD_MS]
 *        dtrace -s slow_requests.d -c 'CMD ARGS' [THRESHOLD_MS]
 *   THRESHOLD_MS  a request is slow when request-done's duration_ns
 *                 exceeds this (default 100); duration 0 (not measured)
 *                 is never slow
 *
 * How events find their request: probes with a request_id argument
 * (error, db-query-*, gateway-call-*) use it; the others (transaction-*,
 * invoice-create, payment-auth, refund-process) carry none and are given
 * the request the same thread last started (request-start maps tid ->
 * request_id; request-done clears it).  Work handed to another thread is
 * therefore missing from the trail unless its probe carries request_id.
 *
 * FIELDS (printed for each slow request, when its request-done fires):
 *   SLOW REQUEST <request_id> <handler>
 *     +OFFSET us  PROBE               DETAIL
 *   OFFSET   microseconds since this request's request-start (timestamp)
 *   PROBE    the billing probe (request-start, transaction-start, ...)
 *   DETAIL   its arguments: ids, kind, amount in minor units with the
 *            currency, gateway/operation, status or result code, and for
 *            the *-done probes duration_us (microseconds, from the service)
 *   strings passed as "" print as "-".
 * Speculation buffers are per CPU and committed CPU by CPU: a request
 * whose thread moved between CPUs can print its lines out of order; the
 * offsets give the order.
 * At exit: "untracked" requests (see bounded memory).
 *
 * BOUNDED MEMORY: nspec=128 speculations, so at most 128 requests are
 * followed at once (as in the bpftrace twin): speculation() returns 0 for
 * a request starting while 128 are in flight, and that request is not
 * traced (counted as untracked).  There is no per-request event cap (the
 * bpftrace twin keeps 31 + request-done): a trail that overflows the
 * speculation buffer (specsize) is lost and dtrace reports "speculative
 * drops".
 * OVERHEAD: a few data records per probe of every request; only slow
 * requests are printed.
 * STABILITY: Evolving (all billing probes); DETAIL's wording may change.
 * EXAMPLE: slow_requests.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option nspec=128
#pragma D option specsize=1m
#pragma D option cleanrate=101hz

dtrace:::BEGIN
{
	threshold_ns = ($1 > 0 ? $1 : 100) * 1000000;
	untracked = 0;
	printf("Tracing requests slower than %d ms. Hit Ctrl-C to end.\n", threshold_ns / 1000000);
}

billing$target:::request-start
{
	this->spec = speculation();
	spec[arg0] = this->spec;
	t0[arg0] = this->spec ? timestamp : 0;
	cur[tid] = this->spec ? arg0 : 0;
	this->s1 = copyinstr(arg1);
	this->s1 = this->s1 == "" ? "-" : this->s1;
}

billing$target:::request-start
/!this->spec/
{
	untracked++;
}

billing$target:::request-start
/this->spec/
{
	speculate(this->spec);
	printf("SLOW REQUEST %d %s\n", arg0, this->s1);
	printf("  +%8d us  %-19s handler=%s\n", 0, "request-start", this->s1);
}

/* The request an event belongs to: its request_id, else the thread's. */
billing$target:::transaction-start,
billing$target:::transaction-done,
billing$target:::invoice-create,
billing$target:::payment-auth,
billing$target:::refund-process
{
	this->rid = cur[tid];
}

billing$target:::error,
billing$target:::db-query-start,
billing$target:::db-query-done,
billing$target:::gateway-call-start,
billing$target:::gateway-call-done
{
	this->rid = arg0 != 0 ? arg0 : cur[tid];
}

billing$target:::transaction-start,
billing$target:::transaction-done,
billing$target:::invoice-create,
billing$target:::payment-auth,
billing$target:::refund-process,
billing$target:::error,
billing$target:::db-query-start,
billing$target:::db-query-done,
billing$target:::gateway-call-start,
billing$target:::gateway-call-done
{
	this->spec = this->rid ? spec[this->rid] : 0;
	this->off = this->spec ? (timestamp - t0[this->rid]) / 1000 : 0;
}

billing$target:::transaction-start
/this->spec/
{
	this->s1 = copyinstr(arg1);
	this->s2 = copyinstr(arg3);
	speculate(this->spec);
	printf("  +%8d us  %-19s tx=%d kind=%s amount=%d %s\n", this->off, "transaction-start",
	    arg0, this->s1 == "" ? "-" : this->s1, (long long)arg2, this->s2 == "" ? "-" : this->s2);
}

billing$target:::transaction-done
/this->spec/
{
	this->s1 = copyinstr(arg1);
	speculate(this->spec);
	printf("  +%8d us  %-19s tx=%d kind=%s status=%d\n", this->off, "transaction-done",
	    arg0, this->s1 == "" ? "-" : this->s1, (int)arg2);
}

billing$target:::invoice-create
/this->spec/
{
	this->s1 = copyinstr(arg3);
	speculate(this->spec);
	printf("  +%8d us  %-19s invoice=%d amount=%d %s\n", this->off, "invoice-create",
	    arg0, (long long)arg2, this->s1 == "" ? "-" : this->s1);
}

billing$target:::payment-auth
/this->spec/
{
	this->s1 = copyinstr(arg2);
	this->s2 = copyinstr(arg3);
	speculate(this->spec);
	printf("  +%8d us  %-19s amount=%d %s gateway=%s result=%d\n", this->off, "payment-auth",
	    (long long)arg1, this->s1 == "" ? "-" : this->s1, this->s2 == "" ? "-" : this->s2,
	    (int)arg4);
}

billing$target:::refund-process
/this->spec/
{
	this->s1 = copyinstr(arg3);
	this->s2 = copyinstr(arg4);
	speculate(this->spec);
	printf("  +%8d us  %-19s amount=%d %s reason=%s\n", this->off, "refund-process",
	    (long long)arg2, this->s1 == "" ? "-" : this->s1, this->s2 == "" ? "-" : this->s2);
}

billing$target:::error
/this->spec/
{
	this->s1 = copyinstr(arg1);
	speculate(this->spec);
	printf("  +%8d us  %-19s component=%s code=%d\n", this->off, "error",
	    this->s1 == "" ? "-" : this->s1, (int)arg2);
}

billing$target:::db-query-start
/this->spec/
{
	this->s1 = copyinstr(arg1);
	speculate(this->spec);
	printf("  +%8d us  %-19s op=%s\n", this->off, "db-query-start", this->s1 == "" ? "-" : this->s1);
}

billing$target:::db-query-done
/this->spec/
{
	this->s1 = copyinstr(arg1);
	speculate(this->spec);
	printf("  +%8d us  %-19s op=%s status=%d duration_us=%d\n", this->off, "db-query-done",
	    this->s1 == "" ? "-" : this->s1, (int)arg2, arg3 / 1000);
}

billing$target:::gateway-call-start
/this->spec/
{
	this->s1 = copyinstr(arg1);
	this->s2 = copyinstr(arg2);
	speculate(this->spec);
	printf("  +%8d us  %-19s gateway=%s op=%s\n", this->off, "gateway-call-start",
	    this->s1 == "" ? "-" : this->s1, this->s2 == "" ? "-" : this->s2);
}

billing$target:::gateway-call-done
/this->spec/
{
	this->s1 = copyinstr(arg1);
	this->s2 = copyinstr(arg2);
	speculate(this->spec);
	printf("  +%8d us  %-19s gateway=%s op=%s status=%d duration_us=%d\n", this->off,
	    "gateway-call-done", this->s1 == "" ? "-" : this->s1, this->s2 == "" ? "-" : this->s2,
	    (int)arg3, arg4 / 1000);
}

billing$target:::request-done
{
	this->spec = spec[arg0];
	this->s1 = copyinstr(arg1);
	this->s1 = this->s1 == "" ? "-" : this->s1;
}

billing$target:::request-done
/this->spec/
{
	speculate(this->spec);
	printf("  +%8d us  %-19s handler=%s status=%d duration_us=%d\n\n",
	    (timestamp - t0[arg0]) / 1000, "request-done", this->s1, (int)arg2, arg3 / 1000);
}

billing$target:::request-done
/this->spec && arg3 > threshold_ns/
{
	commit(this->spec);
}

billing$target:::request-done
/this->spec && arg3 <= threshold_ns/
{
	discard(this->spec);
}

billing$target:::request-done
/this->spec/
{
	spec[arg0] = 0;
	t0[arg0] = 0;
	cur[tid] = cur[tid] == arg0 ? 0 : cur[tid];
}

dtrace:::END
{
	printf("untracked requests (128 in flight): %d\n", untracked);
}
