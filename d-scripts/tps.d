#!/usr/sbin/dtrace -s
/*
 * tps.d - transactions completed per second, and how many of them failed,
 * one line per whole second.  Twin of bpftrace/tps.bt.
 *
 * USAGE: dtrace -s tps.d -p PID
 *        dtrace -s tps.d -c 'CMD ARGS'
 *
 * Seconds are whole seconds of the monotonic clock (timestamp; bpftrace:
 * nsecs, the same clock on Linux), so every line counts exactly one second
 * of events.  The second in which tracing started and the one cut short by
 * Ctrl-C or the target's exit are partial: printed, marked "partial" with
 * the milliseconds they cover, never as if whole.  Events go to one of two
 * aggregations by the parity of their second, so the second being printed
 * is never mixed with the one under way; a line is printed up to 100 ms
 * after its second ends.
 *
 * FIELDS:
 *   TIME      HH:MM:SS at which the second began, UTC (bpftrace: local time)
 *   TXNS      transaction-done events in that second (count)
 *   FAILED    of which with status != 0 (count)
 *   FAIL%     FAILED / TXNS, whole percent rounded down (0 in an idle second)
 *   NOTE      "partial NNN ms" for a second not traced whole
 *
 * OVERHEAD: one aggregation update per transaction-done; a 10 Hz tick.
 * EXACTNESS: exact while the consumer prints each second within the next
 *   one (d-scripts/README.md: where a starved consumer is not).
 * STABILITY: Evolving (probe transaction-done).
 * EXAMPLE: tps.example.txt
 */

#pragma D option quiet

dtrace:::BEGIN
{
	start_ns = timestamp;
	last = timestamp / 1000000000;	/* the second under way */
	wall_off = walltimestamp - timestamp;	/* for printing TIME */
	had0 = 0;	/* has the even / odd second seen a transaction */
	had1 = 0;
	printf("Tracing transactions per second. Hit Ctrl-C to end.\n");
	printf("%-8s %8s %8s %6s  %s\n", "TIME", "TXNS", "FAILED", "FAIL%", "NOTE");
}

/* The second is read once per event: each clause reads the clock anew,
 * and an event at a second's edge would match both parities, or neither. */
billing$target:::transaction-done
{
	this->odd = (timestamp / 1000000000) % 2;
}

billing$target:::transaction-done
/this->odd == 0/
{
	@tx0 = sum(1);
	@fail0 = sum((int)arg2 != 0 ? 1 : 0);
	@pct0 = avg((int)arg2 != 0 ? 100 : 0);	/* floor(100 * failed / txns) */
	had0 = 1;	/* a flag, not a count: a lost update cannot matter */
}

billing$target:::transaction-done
/this->odd == 1/
{
	@tx1 = sum(1);
	@fail1 = sum((int)arg2 != 0 ? 1 : 0);
	@pct1 = avg((int)arg2 != 0 ? 100 : 0);
	had1 = 1;
}

/*
 * Printing one second: "end" is set by the tick (the second "last" is
 * over) or by END (it is cut short).  The clauses below run in order.
 */
profile:::tick-100ms
{
	this->end = (timestamp / 1000000000) > last;
	this->until = (last + 1) * 1000000000;
}

dtrace:::END
{
	this->end = 1;
	this->until = timestamp;
}

profile:::tick-100ms,
dtrace:::END
/this->end/
{
	this->from = last * 1000000000 < start_ns ? start_ns : last * 1000000000;
	this->covered = (this->until - this->from) / 1000000;
	this->t = ((last * 1000000000 + wall_off) / 1000000000) % 86400;
	this->had = last % 2 == 0 ? had0 : had1;
	/* make sure both exist, so printa prints 0 for an idle second */
	@tx0 = sum(0); @fail0 = sum(0); @tx1 = sum(0); @fail1 = sum(0);
	printf("%02d:%02d:%02d", this->t / 3600, (this->t % 3600) / 60, this->t % 60);
}

profile:::tick-100ms,
dtrace:::END
/this->end && last % 2 == 0/
{
	printa(" %@8d", @tx0);
	printa(" %@8d", @fail0);
}

profile:::tick-100ms,
dtrace:::END
/this->end && last % 2 == 1/
{
	printa(" %@8d", @tx1);
	printa(" %@8d", @fail1);
}

/* FAIL%: an idle second has no average to print */
profile:::tick-100ms,
dtrace:::END
/this->end && this->had && last % 2 == 0/
{
	printa(" %@6d", @pct0);
}

profile:::tick-100ms,
dtrace:::END
/this->end && this->had && last % 2 == 1/
{
	printa(" %@6d", @pct1);
}

profile:::tick-100ms,
dtrace:::END
/this->end && !this->had/
{
	printf(" %6d", 0);
}

profile:::tick-100ms,
dtrace:::END
/this->end && this->covered < 1000/
{
	printf("  partial %d ms", this->covered);
}

profile:::tick-100ms,
dtrace:::END
/this->end && last % 2 == 0/
{
	printf("\n");
	trunc(@tx0);
	trunc(@fail0);
	trunc(@pct0);
	had0 = 0;
}

profile:::tick-100ms,
dtrace:::END
/this->end && last % 2 == 1/
{
	printf("\n");
	trunc(@tx1);
	trunc(@fail1);
	trunc(@pct1);
	had1 = 0;
}

profile:::tick-100ms
/this->end/
{
	last++;
}

dtrace:::END
{
	trunc(@tx0);
	trunc(@fail0);
	trunc(@tx1);
	trunc(@fail1);
	trunc(@pct0);
	trunc(@pct1);
}
