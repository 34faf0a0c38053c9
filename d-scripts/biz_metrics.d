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
 * adding keys.  Row order: printa's (by count), not first-seen as in the
 * bpftrace twin.
 * EXAMPLE: biz_metrics.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs

dtrace:::BEGIN
{
	interval = $1 > 0 ? $1 : 10;
	json = $2;
	secs = 0;
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
	printf("\n%02d:%02d:%02d  last %d s\n%-9s %-8s %-22s %6s %9s %16s\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval,
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
	secs = 0;
}

dtrace:::END
{
	this->now = walltimestamp / 1000000000;
}

dtrace:::END
/!json/
{
	printf("\n%02d:%02d:%02d  TOTAL since start\n%-9s %-8s %-22s %6s %9s %16s\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60,
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
