#!/usr/sbin/dtrace -s
/*
 * biz_metrics.d - business figures of a billing service, per interval:
 * payments approved and declined (by gateway and result code), invoices
 * created, refunds (count and amount by reason), each per currency.
 * Twin of bpftrace/biz_metrics.bt (same rows, same columns, same units).
 *
 * USAGE: dtrace -s biz_metrics.d -p PID [INTERVAL_S [JSON]]
 *        dtrace -s biz_metrics.d -c 'CMD ARGS' [INTERVAL_S [JSON]]
 *   INTERVAL_S  seconds between reports (default 10)
 *   JSON        1: print one JSON object per interval instead of a table
 *
 * FIELDS (one row per METRIC, CURRENCY, LABEL, CODE seen; rows of the
 * interval only, then all rows at exit under "TOTAL"):
 *   METRIC      approved | declined (payment-auth), invoices
 *               (invoice-create), refunds (refund-process)
 *   CURRENCY    ISO 4217 code; "-" when the probe passed ""
 *   LABEL       gateway (approved, declined), reason (refunds), "-" (invoices)
 *   CODE        payment-auth result code (0 for the other metrics)
 *   COUNT       events in the interval (TOTAL: since start)
 *   AMOUNT      sum of amounts, minor units of CURRENCY (cents)
 *   TIME        HH:MM:SS of walltimestamp, UTC (bpftrace: local time)
 * SUMMARY (table only, before the rows of each interval and of TOTAL):
 *   invoices N (R/s); payments approved N declined N (R/s, approval P%);
 *   refunds N (R/s).  R: events per second of the interval, rounded down
 *   (not on the TOTAL summary); P: approved / (approved + declined),
 *   whole percent rounded down.  Amounts stay in the rows, per currency.
 *
 * JSON schema (a "start" line, one line per interval, "total" at exit):
 *   {"type":"start","interval_s":N}
 *   {"type":"interval"|"total","time":"HH:MM:SS","interval_s":N,
 *    "rows":[{"metric":S,"currency":S,"label":S,"code":N,"count":N,
 *             "amount_minor":N}, ..., null]}
 *   rows ends with a null sentinel (printa cannot omit a last comma).
 *
 * OVERHEAD: one aggregation update per payment-auth, invoice-create and
 * refund-process; everything is aggregated in the kernel.
 * STABILITY: fields and JSON keys are Evolving (billing.d's probe names
 * and arguments); the table layout may change, the JSON schema only by
 * adding keys.  Row order: by count, most first (printa with aggsortrev),
 * not first-seen as in the bpftrace twin.
 * EXAMPLE: biz_metrics.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
/* rows with the most events first */
#pragma D option aggsortrev

dtrace:::BEGIN
{
	interval = $1 > 0 ? $1 : 10;
	json = $2;
	secs = 0;
	/* every summary figure exists from the start, so a quiet interval
	 * prints 0 rather than dropping the line */
	@s_inv = count(); @s_inv_rate = count(); @t_inv = count();
	@s_appr = sum(0); @s_decl = sum(0); @s_pay_rate = count(); @s_pct = avg(0);
	@t_appr = sum(0); @t_decl = sum(0); @t_pct = avg(0);
	@s_ref = count(); @s_ref_rate = count(); @t_ref = count();
	clear(@s_inv); clear(@s_inv_rate); clear(@t_inv); clear(@s_appr); clear(@s_decl);
	clear(@s_pay_rate); clear(@s_pct); clear(@t_appr); clear(@t_decl); clear(@t_pct);
	clear(@s_ref); clear(@s_ref_rate); clear(@t_ref);
}

dtrace:::BEGIN
/json/
{
	printf("{\"type\":\"start\",\"interval_s\":%d}\n", interval);
}

dtrace:::BEGIN
/!json/
{
	printf("Tracing billing business figures every %d s. Hit Ctrl-C to end.\n", interval);
}

billing$target:::payment-auth
{
	this->cur = copyinstr(arg2);
	this->cur = this->cur == "" ? "-" : this->cur;
	this->label = copyinstr(arg3);
	this->label = this->label == "" ? "-" : this->label;
	this->metric = (int)arg4 == 0 ? "approved" : "declined";
	this->code = (int)arg4;
	this->amount = (long long)arg1;
}

billing$target:::invoice-create
{
	this->cur = copyinstr(arg3);
	this->cur = this->cur == "" ? "-" : this->cur;
	this->label = "-";
	this->metric = "invoices";
	this->code = 0;
	this->amount = (long long)arg2;
}

billing$target:::refund-process
{
	this->cur = copyinstr(arg3);
	this->cur = this->cur == "" ? "-" : this->cur;
	this->label = copyinstr(arg4);
	this->label = this->label == "" ? "-" : this->label;
	this->metric = "refunds";
	this->code = 0;
	this->amount = (long long)arg2;
}

billing$target:::invoice-create
{
	@s_inv = count();
	@s_inv_rate = count();
	@t_inv = count();
}

billing$target:::payment-auth
{
	@s_appr = sum((int)arg4 == 0 ? 1 : 0);
	@s_decl = sum((int)arg4 != 0 ? 1 : 0);
	@s_pay_rate = count();
	@s_pct = avg((int)arg4 == 0 ? 100 : 0);
	@t_appr = sum((int)arg4 == 0 ? 1 : 0);
	@t_decl = sum((int)arg4 != 0 ? 1 : 0);
	@t_pct = avg((int)arg4 == 0 ? 100 : 0);
}

billing$target:::refund-process
{
	@s_ref = count();
	@s_ref_rate = count();
	@t_ref = count();
}

billing$target:::payment-auth,
billing$target:::invoice-create,
billing$target:::refund-process
{
	@count[this->metric, this->cur, this->label, this->code] = count();
	@amount[this->metric, this->cur, this->label, this->code] = sum(this->amount);
	@tcount[this->metric, this->cur, this->label, this->code] = count();
	@tamount[this->metric, this->cur, this->label, this->code] = sum(this->amount);
}

profile:::tick-1sec
{
	secs++;
	this->now = walltimestamp / 1000000000;
}

profile:::tick-1sec
/secs >= interval && !json/
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
	printf("%-9s %-8s %-22s %6s %9s %16s\n",
	    "METRIC", "CURRENCY", "LABEL", "CODE", "COUNT", "AMOUNT(minor)");
	printa("%-9s %-8s %-22s %6d %@9d %@16d\n", @count, @amount);
}

profile:::tick-1sec
/secs >= interval && json/
{
	printf("{\"type\":\"interval\",\"time\":\"%02d:%02d:%02d\",\"interval_s\":%d,\"rows\":[",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval);
	printa("{\"metric\":\"%s\",\"currency\":\"%s\",\"label\":\"%s\",\"code\":%d,\"count\":%@d,\"amount_minor\":%@d},",
	    @count, @amount);
	printf("null]}\n");
}

profile:::tick-1sec
/secs >= interval/
{
	trunc(@count);
	trunc(@amount);
	/* clear, not trunc: the summary keeps printing 0 for a quiet interval */
	clear(@s_inv); clear(@s_inv_rate); clear(@s_appr); clear(@s_decl);
	clear(@s_pay_rate); clear(@s_pct); clear(@s_ref); clear(@s_ref_rate);
	secs = 0;
}

dtrace:::END
{
	this->now = walltimestamp / 1000000000;
}

dtrace:::END
/!json/
{
	printf("\n%02d:%02d:%02d  TOTAL since start\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60);
	printa("invoices %@d\n", @t_inv);
	printa("payments approved %@d declined %@d (approval %@d%%)\n", @t_appr, @t_decl, @t_pct);
	printa("refunds %@d\n", @t_ref);
	printf("%-9s %-8s %-22s %6s %9s %16s\n",
	    "METRIC", "CURRENCY", "LABEL", "CODE", "COUNT", "AMOUNT(minor)");
	printa("%-9s %-8s %-22s %6d %@9d %@16d\n", @tcount, @tamount);
}

dtrace:::END
/json/
{
	printf("{\"type\":\"total\",\"time\":\"%02d:%02d:%02d\",\"interval_s\":%d,\"rows\":[",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval);
	printa("{\"metric\":\"%s\",\"currency\":\"%s\",\"label\":\"%s\",\"code\":%d,\"count\":%@d,\"amount_minor\":%@d},",
	    @tcount, @tamount);
	printf("null]}\n");
}

dtrace:::END
{
	trunc(@count);
	trunc(@amount);
	trunc(@tcount);
	trunc(@tamount);
}
