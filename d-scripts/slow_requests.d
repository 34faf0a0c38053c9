#!/usr/sbin/dtrace -Cs
/*
 * slow_requests.d - the whole trail of probes of each request slower than a
 * threshold, in order, with offsets from its start; nothing for fast requests.
 * Speculative tracing: a request's probes go to a speculation, committed at
 * request-done when it was slow, else discarded.  Twin of bpftrace/slow_requests.bt.
 *
 * USAGE: dtrace -Cs slow_requests.d -p PID [THRESHOLD_MS]
 *        dtrace -Cs slow_requests.d -c 'CMD ARGS' [THRESHOLD_MS]
 *   THRESHOLD_MS  slow: duration_ns over this (default 250; 0 is never slow)
 * Probes with a request_id (error, db-query-*, gateway-call-*) join that
 * request, on any thread; the others join the request their thread last started.
 *
 * FIELDS (printed for each slow request, when its request-done fires):
 *   SLOW REQUEST <request_id> <handler>
 *     +OFFSET us  PROBE               DETAIL
 *   OFFSET   microseconds since this request's request-start
 *   PROBE    the billing probe (request-start, transaction-start, ...)
 *   DETAIL   its arguments: ids (unsigned 64-bit), kind, amount in minor
 *            units (signed 64-bit) and currency, gateway/operation, status
 *            or result code, duration_us (of the *-done probes, microseconds,
 *            from the service); "" prints as "-"
 * Speculations are per CPU, committed CPU by CPU: a request whose thread moved
 * may print out of order (offsets give the order).  At exit: untracked requests
 * (done without being followed: begun before tracing, or past 128 in flight),
 * and requests whose probes on other threads were not followed.
 *
 * BOUNDED MEMORY: nspec=128 speculations: 128 requests in flight (more are
 * untracked), as in the bpftrace twin, but no cap on events per request: a
 * trail overflowing specsize is lost ("speculative drops").  A thread keeps
 * its requests in flight in SLOTS slots (request_id % SLOTS): a request whose
 * slot holds another of its thread's requests still in flight is untracked.
 * Nothing is ever deleted from an associative array, and each element is
 * created by one thread only: Oracle's DTrace for Linux lets an element
 * created after a delete share its storage with a live one (a request's
 * start time read back as 0 or as another's), and so may two threads
 * creating one element at once.  Requests are found by slot and checked
 * against their request_id, never mixed up.
 * OVERHEAD: a few data records per probe of every request; prints slow ones only.
 * STABILITY: Evolving (all billing probes); DETAIL's wording may change.
 * EXAMPLE: slow_requests.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
#pragma D option nspec=128
#pragma D option specsize=1m
#pragma D option cleanrate=101hz
#pragma D option dynvarsize=4m

/*
 * State.  Thread-local: self->rid, the request this thread last started.
 * Per thread and slot k = request_id % SLOTS, written by the thread that
 * started the request (request-done may mark it done from another):
 *   rq_id[tid, k]     its request_id
 *   rq_spec[tid, k]   its speculation
 *   rq_t0[tid, k]     its request-start timestamp
 *   rq_live[tid, k]   1 while in flight, 2 once done (never 0: a delete)
 * Per slot: home[k], the thread whose request in flight holds slot k, for
 * probes fired on another thread (created for every k in BEGIN, so that no
 * two threads ever create one).  D has no compare-and-swap: two threads
 * starting requests of one slot at the same instant may both take home[k];
 * the one whose thread it does not name is then followed on its own thread
 * only, without being counted (its probes found through home[] are checked
 * against its request_id, so they are left out, never put in another trail).
 */
#define SLOTS 128
uint64_t rq_id[int, uint64_t];
int rq_spec[int, uint64_t];
uint64_t rq_t0[int, uint64_t];
int rq_live[int, uint64_t];
int home[uint64_t];
self uint64_t rid;
#define HOME4(k) home[k] = 1; home[k + 1] = 1; home[k + 2] = 1; home[k + 3] = 1;
#define HOME16(k) HOME4(k) HOME4(k + 4) HOME4(k + 8) HOME4(k + 12)
#define HOME64(k) HOME16(k) HOME16(k + 16) HOME16(k + 32) HOME16(k + 48)

dtrace:::BEGIN
{
	threshold_ns = ($1 > 0 ? $1 : 250) * 1000000;
	HOME64(0)
	HOME64(64)
	/* counts, so that 0 is printed: aggregations, exact under concurrency */
	@untracked = sum(0);
	@own_thread_only = sum(0);
	printf("Tracing requests slower than %d ms. Hit Ctrl-C to end.\n", threshold_ns / 1000000);
}

billing$target:::request-start
{
	self->rid = arg0;
	this->k = arg0 % SLOTS;
	this->spec = 0;
}

billing$target:::request-start
/arg0 != 0 && rq_live[tid, this->k] != 1/
{
	this->spec = speculation();
}

billing$target:::request-start
/this->spec/
{
	rq_id[tid, this->k] = arg0;
	rq_spec[tid, this->k] = this->spec;
	rq_t0[tid, this->k] = timestamp;
	rq_live[tid, this->k] = 1;
	/* slot k's home stays with another thread's request still in flight */
	this->h = home[this->k];
	this->taken = this->h != tid && rq_live[this->h, this->k] == 1 && rq_id[this->h, this->k] != arg0;
	home[this->k] = this->taken ? this->h : tid;
	this->s1 = copyinstr(arg1);
	this->s1 = this->s1 == "" ? "-" : this->s1;
	speculate(this->spec);
	printf("SLOW REQUEST %u %s\n  +%8u us  request-start       handler=%s\n", arg0, this->s1, 0,
	    this->s1);
}

billing$target:::request-start
/this->spec && this->taken/
{
	@own_thread_only = sum(1);
}

/* The request an event joins: the one its thread last started ... */
billing$target:::transaction-start, billing$target:::transaction-done, billing$target:::invoice-create,
billing$target:::payment-auth, billing$target:::refund-process
{
	this->rid = self->rid;
}

/* ... or the one its request_id names */
billing$target:::error, billing$target:::db-query-start, billing$target:::db-query-done,
billing$target:::gateway-call-start, billing$target:::gateway-call-done, billing$target:::request-done
{
	this->rid = arg0 != 0 ? arg0 : self->rid;
}

/* Its slot: this thread's if it started the request, else the home thread's. */
billing$target:::transaction-start, billing$target:::transaction-done, billing$target:::invoice-create,
billing$target:::payment-auth, billing$target:::refund-process, billing$target:::error,
billing$target:::db-query-start, billing$target:::db-query-done, billing$target:::gateway-call-start,
billing$target:::gateway-call-done, billing$target:::request-done
{
	this->k = this->rid % SLOTS;
	this->t = rq_live[tid, this->k] == 1 && rq_id[tid, this->k] == this->rid ? tid : home[this->k];
	this->ok = this->rid != 0 && rq_live[this->t, this->k] == 1 && rq_id[this->t, this->k] == this->rid;
	this->spec = this->ok ? rq_spec[this->t, this->k] : 0;
	this->off = this->ok ? (timestamp - rq_t0[this->t, this->k]) / 1000 : 0;
}

billing$target:::transaction-start
/this->spec/
{
	this->s1 = copyinstr(arg1); this->s2 = copyinstr(arg3);
	speculate(this->spec);
	printf("  +%8u us  transaction-start   tx=%u kind=%s amount=%d %s\n", this->off, arg0,
	    this->s1 == "" ? "-" : this->s1, (long long)arg2, this->s2 == "" ? "-" : this->s2);
}

billing$target:::transaction-done
/this->spec/
{
	this->s1 = copyinstr(arg1);
	speculate(this->spec);
	printf("  +%8u us  transaction-done    tx=%u kind=%s status=%d\n", this->off, arg0,
	    this->s1 == "" ? "-" : this->s1, (int)arg2);
}

billing$target:::invoice-create
/this->spec/
{
	this->s1 = copyinstr(arg3);
	speculate(this->spec);
	printf("  +%8u us  invoice-create      invoice=%u amount=%d %s\n", this->off, arg0,
	    (long long)arg2, this->s1 == "" ? "-" : this->s1);
}

billing$target:::payment-auth
/this->spec/
{
	this->s1 = copyinstr(arg2); this->s2 = copyinstr(arg3);
	speculate(this->spec);
	printf("  +%8u us  payment-auth        amount=%d %s gateway=%s result=%d\n", this->off,
	    (long long)arg1, this->s1 == "" ? "-" : this->s1, this->s2 == "" ? "-" : this->s2, (int)arg4);
}

billing$target:::refund-process
/this->spec/
{
	this->s1 = copyinstr(arg3); this->s2 = copyinstr(arg4);
	speculate(this->spec);
	printf("  +%8u us  refund-process      amount=%d %s reason=%s\n", this->off, (long long)arg2,
	    this->s1 == "" ? "-" : this->s1, this->s2 == "" ? "-" : this->s2);
}

/* error, db-query-* and gateway-call-* each have a string in arg1 */
billing$target:::error, billing$target:::db-query-start, billing$target:::db-query-done,
billing$target:::gateway-call-start, billing$target:::gateway-call-done
/this->spec/
{
	this->s1 = copyinstr(arg1);
	this->s1 = this->s1 == "" ? "-" : this->s1;
}

billing$target:::error
/this->spec/
{
	speculate(this->spec);
	printf("  +%8u us  error               component=%s code=%d\n", this->off, this->s1, (int)arg2);
}

billing$target:::db-query-start
/this->spec/
{
	speculate(this->spec);
	printf("  +%8u us  db-query-start      op=%s\n", this->off, this->s1);
}

billing$target:::db-query-done
/this->spec/
{
	speculate(this->spec);
	printf("  +%8u us  db-query-done       op=%s status=%d duration_us=%u\n", this->off, this->s1,
	    (int)arg2, (unsigned long long)arg3 / 1000);
}

billing$target:::gateway-call-start
/this->spec/
{
	this->s2 = copyinstr(arg2);
	speculate(this->spec);
	printf("  +%8u us  gateway-call-start  gateway=%s op=%s\n", this->off, this->s1,
	    this->s2 == "" ? "-" : this->s2);
}

billing$target:::gateway-call-done
/this->spec/
{
	this->s2 = copyinstr(arg2);
	speculate(this->spec);
	printf("  +%8u us  gateway-call-done   gateway=%s op=%s status=%d duration_us=%u\n", this->off,
	    this->s1, this->s2 == "" ? "-" : this->s2, (int)arg3, (unsigned long long)arg4 / 1000);
}

/* request-done: the slot is done (a store, not a delete), then the trail
 * is committed (slow) or discarded */
billing$target:::request-done
/self->rid == arg0/
{
	self->rid = 0;	/* thread-local: a delete of this thread's own variable */
}

billing$target:::request-done
/this->spec/
{
	rq_live[this->t, this->k] = 2;
	this->s1 = copyinstr(arg1);
	this->s1 = this->s1 == "" ? "-" : this->s1;
	speculate(this->spec);
	printf("  +%8u us  request-done        handler=%s status=%d duration_us=%u\n\n", this->off,
	    this->s1, (int)arg2, (unsigned long long)arg3 / 1000);
}

billing$target:::request-done
/this->spec && (unsigned long long)arg3 > threshold_ns/
{
	commit(this->spec);
}

billing$target:::request-done
/this->spec && (unsigned long long)arg3 <= threshold_ns/
{
	discard(this->spec);
}

/* Done without being followed: begun before tracing started, or while 128
 * were in flight. */
billing$target:::request-done
/!this->spec/
{
	@untracked = sum(1);
}

dtrace:::END
{
	printa("untracked requests (128 in flight): %@d\n", @untracked);
	printa("requests followed on their own thread only (another thread's request held their slot): %@d\n",
	    @own_thread_only);
	trunc(@untracked);
	trunc(@own_thread_only);
}
