#!/usr/sbin/dtrace -s
/*
 * biz_metrics.d - business figures of a billing service, one screen per
 * interval: invoices, payments approved and declined (approval %),
 * refunds, with rates; payments by gateway and result code; amounts per
 * currency.  Twin of bpftrace/biz_metrics.bt (same rows, same units).
 *
 * USAGE: dtrace -s biz_metrics.d -p PID [INTERVAL_S]
 *        dtrace -s biz_metrics.d -c 'CMD ARGS' [INTERVAL_S]
 *   INTERVAL_S  seconds between reports (default 10)
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
 * and refund-process; everything is aggregated in the kernel.
 * EXACTNESS: every figure and row is a count(), sum() or avg() aggregation
 * (per-CPU): exact.
 * STABILITY: fields are Evolving (billing.d's probe names and arguments);
 * the layout may change.
 * EXAMPLE: biz_metrics.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
/* rows with the most events first */
#pragma D option aggsortrev

dtrace:::BEGIN
{
	interval = $1 > 0 ? $1 : 10;
	secs = 0;
	/* "none seen" flags of the breakdowns (interval, total) */
	seen_pay = 0; seen_any = 0; seen_pay_total = 0; seen_any_total = 0; seen_ref = 0;
	/* every summary figure exists from the start, so a quiet interval
	 * prints 0 rather than dropping the line */
	@s_inv = count(); @s_inv_rate = count(); @t_inv = count();
	@s_appr = sum(0); @s_decl = sum(0); @s_pay_rate = count(); @s_pct = avg(0);
	@t_appr = sum(0); @t_decl = sum(0); @t_pct = avg(0);
	@s_ref = count(); @s_ref_rate = count(); @t_ref = count();
	clear(@s_inv); clear(@s_inv_rate); clear(@t_inv); clear(@s_appr); clear(@s_decl);
	clear(@s_pay_rate); clear(@s_pct); clear(@t_appr); clear(@t_decl); clear(@t_pct);
	clear(@s_ref); clear(@s_ref_rate); clear(@t_ref);
	printf("Tracing billing business figures every %d s. Hit Ctrl-C to end.\n", interval);
}

billing$target:::payment-auth
{
	this->cur = copyinstr(arg2);
	this->cur = this->cur == "" ? "-" : this->cur;
	this->label = copyinstr(arg3);
	this->label = this->label == "" ? "-" : this->label;
	this->metric = (int)arg4 == 0 ? "approved" : "declined";
	this->amount = (long long)arg1;
	@s_appr = sum((int)arg4 == 0 ? 1 : 0);
	@s_decl = sum((int)arg4 != 0 ? 1 : 0);
	@s_pay_rate = count();
	@s_pct = avg((int)arg4 == 0 ? 100 : 0);
	@t_appr = sum((int)arg4 == 0 ? 1 : 0);
	@t_decl = sum((int)arg4 != 0 ? 1 : 0);
	@t_pct = avg((int)arg4 == 0 ? 100 : 0);
	@payments[this->label, (int)arg4] = count();
	@payments_total[this->label, (int)arg4] = count();
	seen_pay = 1;
	seen_pay_total = 1;
}

billing$target:::invoice-create
{
	this->cur = copyinstr(arg3);
	this->cur = this->cur == "" ? "-" : this->cur;
	this->metric = "invoices";
	this->amount = (long long)arg2;
	@s_inv = count();
	@s_inv_rate = count();
	@t_inv = count();
}

billing$target:::refund-process
{
	this->cur = copyinstr(arg3);
	this->cur = this->cur == "" ? "-" : this->cur;
	this->label = copyinstr(arg4);
	this->label = this->label == "" ? "-" : this->label;
	this->metric = "refunds";
	this->amount = (long long)arg2;
	@s_ref = count();
	@s_ref_rate = count();
	@t_ref = count();
	@refunds_total[this->label] = count();
	seen_ref = 1;
}

/* amounts by currency and metric, of the three */
billing$target:::payment-auth,
billing$target:::invoice-create,
billing$target:::refund-process
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
	this->now = walltimestamp / 1000000000;
}

profile:::tick-1sec
/secs >= interval/
{
	printf("\n%02d:%02d:%02d  last %d s\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval);
	normalize(@s_inv_rate, interval);
	normalize(@s_pay_rate, interval);
	normalize(@s_ref_rate, interval);
	printa("invoices %@d (%@d/s)\n", @s_inv, @s_inv_rate);
	printa("payments approved %@d declined %@d (%@d/s, approval %@d%%)\n",
	    @s_appr, @s_decl, @s_pay_rate, @s_pct);
	printa("refunds %@d (%@d/s)\n", @s_ref, @s_ref_rate);
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
	/* clear, not trunc: the summary keeps printing 0 for a quiet interval */
	clear(@s_inv); clear(@s_inv_rate); clear(@s_appr); clear(@s_decl);
	clear(@s_pay_rate); clear(@s_pct); clear(@s_ref); clear(@s_ref_rate);
	secs = 0;
}

dtrace:::END
{
	this->now = walltimestamp / 1000000000;
	printf("\n%02d:%02d:%02d  TOTAL since start\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60);
	printa("invoices %@d\n", @t_inv);
	printa("payments approved %@d declined %@d (approval %@d%%)\n", @t_appr, @t_decl, @t_pct);
	printa("refunds %@d\n", @t_ref);
	printf("payments by [gateway, code] (0 = approved)%s\n", seen_pay_total ? ":" : ": none seen");
	printa("@payments_total[%s, %d]: %@d\n", @payments_total);
	printf("amounts by [currency, metric], minor units%s\n", seen_any_total ? ":" : ": none seen");
	printa("@amount_minor_total[%s, %s]: %@d\n", @amount_minor_total);
	printf("refunds by [reason]%s\n", seen_ref ? ":" : ": none seen");
	printa("@refunds_total[%s]: %@d\n", @refunds_total);
	trunc(@payments);
	trunc(@payments_total);
	trunc(@amount_minor);
	trunc(@amount_minor_total);
	trunc(@refunds_total);
	/* the summary aggregations too: nothing left to print at exit */
	trunc(@s_inv); trunc(@s_inv_rate); trunc(@t_inv); trunc(@s_appr); trunc(@s_decl);
	trunc(@s_pay_rate); trunc(@s_pct); trunc(@t_appr); trunc(@t_decl); trunc(@t_pct);
	trunc(@s_ref); trunc(@s_ref_rate); trunc(@t_ref);
}
