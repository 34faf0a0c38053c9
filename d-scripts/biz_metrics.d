#!/usr/sbin/dtrace -Cs
/*
 * biz_metrics.d - business figures of a billing service, one screen per
 * interval: invoices, payments approved and declined (approval %),
 * refunds, with rates; payments by gateway and result code; amounts per
 * currency.  Twin of bpftrace/biz_metrics.bt (same rows, same units).
 *
 * USAGE: dtrace -Cs biz_metrics.d -p PID [INTERVAL_S]
 *        dtrace -Cs biz_metrics.d -c 'CMD ARGS' [INTERVAL_S]
 *   INTERVAL_S  seconds between reports (default 10)
 *   (-C: the C preprocessor; the #! line passes it when run as ./biz_metrics.d)
 *
 * OUTPUT (each interval, then "TOTAL since start" at exit; times HH:MM:SS
 *   of walltimestamp, UTC (bpftrace: local time)): a summary, invoices N
 *   (R/s); payments approved N declined N (R/s, approval P%); refunds N
 *   (R/s), R the events per second of the interval (not in the TOTAL), P
 *   approved / (approved + declined), both rounded down.  Then each
 *   breakdown: a heading and "@name[key, key]: value" rows, or ": none seen";
 *   an interval shows its 8 largest rows ("top 8"), TOTAL all.  Rows are
 *   sorted largest first (aggsortrev; trunc() keeps the largest).
 * FIELDS:
 *   @payments[GATEWAY, CODE]      payment-auth events (count); CODE is the
 *                                 result code, 0 = approved
 *   @amount_minor[CURRENCY, METRIC]  sum of amounts, minor units of
 *                                 CURRENCY (cents; JPY has none); METRIC:
 *                                 invoices (invoice-create), approved and
 *                                 declined (payment-auth), refunds
 *                                 (refund-process)
 *   @payments_total, @amount_minor_total  the same since start (TOTAL)
 *   @refunds_total[REASON]        refund-process events by reason (count;
 *                                 TOTAL only)
 *   GATEWAY, CURRENCY, REASON are "-" when the probe passed "".
 *
 * OVERHEAD: a few aggregation updates per payment-auth, invoice-create
 * and refund-process, and a variable update; a 1 Hz tick that sums
 * 4 x MAX_CPU counters once per interval.
 * EXACTNESS: the summaries are computed in the kernel, by the tick and at
 * exit: each CPU counts into its own cumulative counters (a CPU runs one
 * probe at a time: no increment is lost), summed over CPU ids
 * 0..MAX_CPU-1; an interval prints the sums less what the last interval
 * printed, so every event is in exactly one interval, whenever dtrace
 * reads its buffers.  The TOTAL's breakdowns are count() and sum()
 * aggregations (per-CPU), printed once, at exit: exact.  An interval's breakdowns are aggregations printed, then
 * truncated: on Oracle's DTrace for Linux trunc() also deletes the events
 * that fired while dtrace copied them, which then show in no interval's
 * rows (the summary above them and the TOTAL count them).  An event on a
 * CPU id of MAX_CPU or more ends the trace with one "refused" line instead
 * of figures that would be short.
 * STABILITY: fields are Evolving (billing.d's probe names and arguments);
 * the layout may change.
 * EXAMPLE: biz_metrics.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
/* rows with the most events first */
#pragma D option aggsortrev

#define MAX_CPU 512

/* every global, declared: Oracle's DTrace for Linux has 32 KB of them */
int64_t interval, secs, past_max_cpu;
int seen_pay, seen_any, seen_pay_total, seen_any_total, seen_ref;
uint64_t p_inv, p_appr, p_decl, p_ref;	/* the sums the last interval printed */
/* per CPU, cumulative: invoices, payments approved and declined, refunds */
uint64_t inv[MAX_CPU], appr[MAX_CPU], decl[MAX_CPU], ref[MAX_CPU];

/* the sum of N[0..MAX_CPU-1] (512) */
#define R4(N, c) (N[c] + N[c + 1] + N[c + 2] + N[c + 3])
#define R16(N, c) (R4(N, c) + R4(N, c + 4) + R4(N, c + 8) + R4(N, c + 12))
#define R64(N, c) (R16(N, c) + R16(N, c + 16) + R16(N, c + 32) + R16(N, c + 48))
#define R256(N, c) (R64(N, c) + R64(N, c + 64) + R64(N, c + 128) + R64(N, c + 192))
#define SUM_CPUS(N) (R256(N, 0) + R256(N, 256))

dtrace:::BEGIN
{
	interval = $1 > 0 ? $1 : 10;
	secs = 0;
	past_max_cpu = 0;
	p_inv = 0; p_appr = 0; p_decl = 0; p_ref = 0;
	/* "none seen" flags of the breakdowns (interval, total) */
	seen_pay = 0; seen_any = 0; seen_pay_total = 0; seen_any_total = 0; seen_ref = 0;
	printf("Tracing billing business figures every %d s. Hit Ctrl-C to end.\n", interval);
}

/* MAX_CPU: refused (see END) */
billing$target:::payment-auth,
billing$target:::invoice-create,
billing$target:::refund-process
/cpu >= MAX_CPU/
{
	past_max_cpu = cpu;
	exit(0);
}

billing$target:::payment-auth
/cpu < MAX_CPU/
{
	this->cur = copyinstr(arg2);
	this->cur = this->cur == "" ? "-" : this->cur;
	this->label = copyinstr(arg3);
	this->label = this->label == "" ? "-" : this->label;
	this->metric = (int)arg4 == 0 ? "approved" : "declined";
	this->amount = (long long)arg1;
	appr[cpu] += (int)arg4 == 0 ? 1 : 0;
	decl[cpu] += (int)arg4 != 0 ? 1 : 0;
	@payments[this->label, (int)arg4] = count();
	@payments_total[this->label, (int)arg4] = count();
	seen_pay = 1;
	seen_pay_total = 1;
}

billing$target:::invoice-create
/cpu < MAX_CPU/
{
	this->cur = copyinstr(arg3);
	this->cur = this->cur == "" ? "-" : this->cur;
	this->metric = "invoices";
	this->amount = (long long)arg2;
	inv[cpu]++;
}

billing$target:::refund-process
/cpu < MAX_CPU/
{
	this->cur = copyinstr(arg3);
	this->cur = this->cur == "" ? "-" : this->cur;
	this->label = copyinstr(arg4);
	this->label = this->label == "" ? "-" : this->label;
	this->metric = "refunds";
	this->amount = (long long)arg2;
	ref[cpu]++;
	@refunds_total[this->label] = count();
	seen_ref = 1;
}

/* amounts by currency and metric, of the three */
billing$target:::payment-auth,
billing$target:::invoice-create,
billing$target:::refund-process
/cpu < MAX_CPU/
{
	@amount_minor[this->cur, this->metric] = sum(this->amount);
	@amount_minor_total[this->cur, this->metric] = sum(this->amount);
	/* a store, not an increment: concurrent firings cannot lose it */
	seen_any = 1;
	seen_any_total = 1;
}

profile:::tick-1sec
{
	secs++;
	this->go = secs >= interval && past_max_cpu == 0;
}

/* a sum per clause: Oracle's DTrace for Linux jumps over a clause with
 * 16-bit offsets, and four sums make a clause longer than that */
profile:::tick-1sec /this->go/ { this->inv = SUM_CPUS(inv) - p_inv; p_inv += this->inv; }
profile:::tick-1sec /this->go/ { this->appr = SUM_CPUS(appr) - p_appr; p_appr += this->appr; }
profile:::tick-1sec /this->go/ { this->decl = SUM_CPUS(decl) - p_decl; p_decl += this->decl; }
profile:::tick-1sec /this->go/ { this->ref = SUM_CPUS(ref) - p_ref; p_ref += this->ref; }

profile:::tick-1sec
/this->go/
{
	this->now = walltimestamp / 1000000000;
	this->pay = this->appr + this->decl;
	printf("\n%02d:%02d:%02d  last %d s\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval);
	printf("invoices %d (%d/s)\n", this->inv, this->inv / interval);
	printf("payments approved %d declined %d (%d/s, approval %d%%)\n", this->appr, this->decl,
	    this->pay / interval, this->pay ? this->appr * 100 / this->pay : 0);
	printf("refunds %d (%d/s)\n", this->ref, this->ref / interval);
	/* the 8 largest rows of each breakdown, largest first (aggsortrev) */
	trunc(@payments, 8);
	trunc(@amount_minor, 8);
	printf("payments by [gateway, code] (0 = approved)%s\n", seen_pay ? ", top 8:" : ": none seen");
	printa("@payments[%s, %d]: %@d\n", @payments);
	printf("amounts by [currency, metric], minor units%s\n", seen_any ? ", top 8:" : ": none seen");
	printa("@amount_minor[%s, %s]: %@d\n", @amount_minor);
	trunc(@payments);
	trunc(@amount_minor);
	seen_pay = 0;
	seen_any = 0;
	secs = 0;
}

dtrace:::END { this->inv = SUM_CPUS(inv); }
dtrace:::END { this->appr = SUM_CPUS(appr); }
dtrace:::END { this->decl = SUM_CPUS(decl); }
dtrace:::END { this->ref = SUM_CPUS(ref); }

dtrace:::END
/past_max_cpu == 0/
{
	this->now = walltimestamp / 1000000000;
	this->pay = this->appr + this->decl;
	printf("\n%02d:%02d:%02d  TOTAL since start\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60);
	printf("invoices %d\n", this->inv);
	printf("payments approved %d declined %d (approval %d%%)\n", this->appr, this->decl,
	    this->pay ? this->appr * 100 / this->pay : 0);
	printf("refunds %d\n", this->ref);
	printf("payments by [gateway, code] (0 = approved)%s\n", seen_pay_total ? ":" : ": none seen");
	printa("@payments_total[%s, %d]: %@d\n", @payments_total);
	printf("amounts by [currency, metric], minor units%s\n", seen_any_total ? ":" : ": none seen");
	printa("@amount_minor_total[%s, %s]: %@d\n", @amount_minor_total);
	printf("refunds by [reason]%s\n", seen_ref ? ":" : ": none seen");
	printa("@refunds_total[%s]: %@d\n", @refunds_total);
}

dtrace:::END
/past_max_cpu != 0/
{
	printf("refused: an event on CPU %d; this script sums CPU ids 0..%d only, so its figures would be short\n",
	    past_max_cpu, MAX_CPU - 1);
}

/* printed: nothing left for dtrace to print at exit */
dtrace:::END
{
	trunc(@payments); trunc(@payments_total); trunc(@amount_minor); trunc(@amount_minor_total);
	trunc(@refunds_total);
}
