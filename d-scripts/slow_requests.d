#!/usr/sbin/dtrace -s
/*
 * slow_requests.d - the whole trail of probes of each request slower than a
 * threshold, in order, with offsets from its start; nothing for fast requests.
 * Speculative tracing: a request's probes go to a speculation, committed at
 * request-done when it was slow, else discarded.  Twin of bpftrace/slow_requests.bt.
 *
 * USAGE: dtrace -s slow_requests.d -p PID [THRESHOLD_MS]
 *        dtrace -s slow_requests.d -c 'CMD ARGS' [THRESHOLD_MS]
 *   THRESHOLD_MS  slow: duration_ns over this (default 100; 0 is never slow)
 * Probes with a request_id (error, db-query-*, gateway-call-*) join that
 * request; the others join the request their thread last started.
 *
 * FIELDS (printed for each slow request, when its request-done fires):
 *   SLOW REQUEST <request_id> <handler>
 *     +OFFSET us  PROBE               DETAIL
 *   OFFSET   microseconds since this request's request-start
 *   PROBE    the billing probe (request-start, transaction-start, ...)
 *   DETAIL   its arguments: ids, kind, amount in minor units and currency,
 *            gateway/operation, status or result code, duration_us (of the
 *            *-done probes, microseconds, from the service); "" prints as "-"
 * Speculations are per CPU, committed CPU by CPU: a request whose thread moved
 * may print out of order (offsets give the order).  At exit: untracked requests.
 *
 * BOUNDED MEMORY: nspec=128 speculations: 128 requests in flight (more are
 * untracked), as in the bpftrace twin, but no cap on events per request: a
 * trail overflowing specsize is lost ("speculative drops").
 * OVERHEAD: a few data records per probe of every request; prints slow ones only.
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
	untracked += this->spec ? 0 : 1;
}

billing$target:::request-start
/this->spec/
{
	speculate(this->spec);
	printf("SLOW REQUEST %d %s\n  +%8d us  request-start       handler=%s\n", arg0, this->s1, 0, this->s1);
}

billing$target:::transaction-start, billing$target:::transaction-done, billing$target:::invoice-create,
billing$target:::payment-auth, billing$target:::refund-process
{
	this->rid = cur[tid];
	this->spec = this->rid ? spec[this->rid] : 0;
	this->off = this->spec ? (timestamp - t0[this->rid]) / 1000 : 0;
}

billing$target:::error, billing$target:::db-query-start, billing$target:::db-query-done,
billing$target:::gateway-call-start, billing$target:::gateway-call-done
{
	this->rid = arg0 != 0 ? arg0 : cur[tid];
	this->spec = this->rid ? spec[this->rid] : 0;
	this->off = this->spec ? (timestamp - t0[this->rid]) / 1000 : 0;
	this->s1 = this->spec ? copyinstr(arg1) : "";	/* each has a string in arg1 */
	this->s1 = this->s1 == "" ? "-" : this->s1;
}

billing$target:::transaction-start
/this->spec/
{
	this->s1 = copyinstr(arg1); this->s2 = copyinstr(arg3);
	speculate(this->spec);
	printf("  +%8d us  transaction-start   tx=%d kind=%s amount=%d %s\n", this->off, arg0,
	    this->s1 == "" ? "-" : this->s1, (long long)arg2, this->s2 == "" ? "-" : this->s2);
}

billing$target:::transaction-done
/this->spec/
{
	this->s1 = copyinstr(arg1);
	speculate(this->spec);
	printf("  +%8d us  transaction-done    tx=%d kind=%s status=%d\n", this->off, arg0,
	    this->s1 == "" ? "-" : this->s1, (int)arg2);
}

billing$target:::invoice-create
/this->spec/
{
	this->s1 = copyinstr(arg3);
	speculate(this->spec);
	printf("  +%8d us  invoice-create      invoice=%d amount=%d %s\n", this->off, arg0,
	    (long long)arg2, this->s1 == "" ? "-" : this->s1);
}

billing$target:::payment-auth
/this->spec/
{
	this->s1 = copyinstr(arg2); this->s2 = copyinstr(arg3);
	speculate(this->spec);
	printf("  +%8d us  payment-auth        amount=%d %s gateway=%s result=%d\n", this->off,
	    (long long)arg1, this->s1 == "" ? "-" : this->s1, this->s2 == "" ? "-" : this->s2, (int)arg4);
}

billing$target:::refund-process
/this->spec/
{
	this->s1 = copyinstr(arg3); this->s2 = copyinstr(arg4);
	speculate(this->spec);
	printf("  +%8d us  refund-process      amount=%d %s reason=%s\n", this->off, (long long)arg2,
	    this->s1 == "" ? "-" : this->s1, this->s2 == "" ? "-" : this->s2);
}

billing$target:::error
/this->spec/
{
	speculate(this->spec);
	printf("  +%8d us  error               component=%s code=%d\n", this->off, this->s1, (int)arg2);
}

billing$target:::db-query-start
/this->spec/
{
	speculate(this->spec);
	printf("  +%8d us  db-query-start      op=%s\n", this->off, this->s1);
}

billing$target:::db-query-done
/this->spec/
{
	speculate(this->spec);
	printf("  +%8d us  db-query-done       op=%s status=%d duration_us=%d\n", this->off, this->s1,
	    (int)arg2, arg3 / 1000);
}

billing$target:::gateway-call-start
/this->spec/
{
	this->s2 = copyinstr(arg2);
	speculate(this->spec);
	printf("  +%8d us  gateway-call-start  gateway=%s op=%s\n", this->off, this->s1,
	    this->s2 == "" ? "-" : this->s2);
}

billing$target:::gateway-call-done
/this->spec/
{
	this->s2 = copyinstr(arg2);
	speculate(this->spec);
	printf("  +%8d us  gateway-call-done   gateway=%s op=%s status=%d duration_us=%d\n", this->off,
	    this->s1, this->s2 == "" ? "-" : this->s2, (int)arg3, arg4 / 1000);
}

billing$target:::request-done
{
	this->spec = spec[arg0];
	this->off = (timestamp - t0[arg0]) / 1000;
	this->s1 = copyinstr(arg1);
	this->s1 = this->s1 == "" ? "-" : this->s1;
	spec[arg0] = 0; t0[arg0] = 0;
	cur[tid] = cur[tid] == arg0 ? 0 : cur[tid];
}

billing$target:::request-done
/this->spec/
{
	speculate(this->spec);
	printf("  +%8d us  request-done        handler=%s status=%d duration_us=%d\n\n", this->off,
	    this->s1, (int)arg2, arg3 / 1000);
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

dtrace:::END
{
	printf("untracked requests (128 in flight): %d\n", untracked);
}
