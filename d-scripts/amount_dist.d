#!/usr/sbin/dtrace -s
/*
 * amount_dist.d - transaction amounts per currency and kind: a power-of-two
 * histogram in minor units, with count, sum and average.  Printed at exit
 * (Ctrl-C or the end of the target).  Twin of bpftrace/amount_dist.bt.
 *
 * USAGE: dtrace -s amount_dist.d -p PID
 *        dtrace -s amount_dist.d -c 'CMD ARGS'
 *
 * Source: transaction-start (kind, amount_minor, currency), so a failed
 * transaction counts too: this is the distribution of what was attempted.
 * FIELDS (keys [CURRENCY, KIND]; "-" when the probe passed ""):
 *   @amount_minor  power-of-two histogram (quantize) of amounts, minor
 *                  units (cents; JPY has none); negative amounts fall in
 *                  the negative rows
 *   @count         transactions (count)
 *   @sum_minor     sum of amounts, minor units
 *   @avg_minor     integer average, minor units (truncated)
 *
 * OVERHEAD: four in-kernel aggregations per transaction-start.
 * STABILITY: Evolving (probe transaction-start).
 * EXAMPLE: amount_dist.example.txt
 */

#pragma D option quiet

dtrace:::BEGIN
{
	printf("Tracing transaction amounts. Hit Ctrl-C to end.\n");
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
}

dtrace:::END
{
	printf("\nTransaction amounts by [currency, kind], minor units:\n");
	printa("@amount_minor[%s, %s]:\n%@d\n", @amount_minor);
	printa("@avg_minor[%s, %s]: %@d\n", @avg_minor);
	printa("@count[%s, %s]: %@d\n", @count);
	printa("@sum_minor[%s, %s]: %@d\n", @sum_minor);
}
