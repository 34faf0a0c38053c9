#!/usr/sbin/dtrace -s
/*
 * amount_dist.d - amounts of the transactions begun, per currency and kind: a power-of-two
 * histogram in minor units, with count, sum and average.  Printed at exit
 * (Ctrl-C or the end of the target).  Twin of bpftrace/amount_dist.bt.
 *
 * USAGE: dtrace -s amount_dist.d -p PID
 *        dtrace -s amount_dist.d -c 'CMD ARGS'
 *
 * Source: transaction-start (kind, amount_minor, currency): every
 * transaction begun, committed or not -- what was attempted.  Not the
 * exporter's billing_transaction_amount_minor, which observes the answers
 * (invoice-create, payment-auth, refund-process).
 * OUTPUT (at exit): one line of figures per currency and kind, then one
 * histogram per currency and kind (keys [CURRENCY, KIND]; "-" when the
 * probe passed "").
 * FIELDS:
 *   @stats_minor   count N (transactions begun), average A (integer average,
 *                  truncated), total S (sum): amounts in minor units
 *                  (count(), avg() and sum() printed on one line)
 *   @amount_minor  power-of-two histogram (quantize) of amounts, minor
 *                  units (cents; JPY has none); negative amounts fall in
 *                  the negative rows; every 64-bit value has its row (the
 *                  bpftrace twin's too, one line per bucket)
 *
 * OVERHEAD: four in-kernel aggregations (per-CPU, exact) per transaction-start.
 * STABILITY: Evolving (probe transaction-start).
 * EXAMPLE: amount_dist.example.txt
 */

#pragma D option quiet

dtrace:::BEGIN
{
	printf("Tracing amounts of transactions begun. Hit Ctrl-C to end.\n");
	seen = 0;
}

billing$target:::transaction-start
{
	this->cur = copyinstr(arg3);
	this->cur = this->cur == "" ? "-" : this->cur;
	this->kind = copyinstr(arg1);
	this->kind = this->kind == "" ? "-" : this->kind;
	this->amount = (long long)arg2;
	@amount_minor[this->cur, this->kind] = quantize(this->amount);
	@count[this->cur, this->kind] = count();
	@sum_minor[this->cur, this->kind] = sum(this->amount);
	@avg_minor[this->cur, this->kind] = avg(this->amount);
	seen = 1;	/* a store, not an increment: concurrent firings cannot lose it */
}

dtrace:::END
{
	printf("\nAmounts of transactions begun (transaction-start) by [currency, kind], minor units%s\n", seen ? ":" : ": none seen");
	/* bpftrace's stats() line, from three aggregations of one key */
	printa("@stats_minor[%s, %s]: count %@d, average %@d, total %@d\n", @count, @avg_minor, @sum_minor);
	printa("\n@amount_minor[%s, %s]:\n%@d", @amount_minor);
	trunc(@count); trunc(@avg_minor); trunc(@sum_minor); trunc(@amount_minor);
}
