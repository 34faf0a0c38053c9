#!/usr/sbin/dtrace -s
/*
 * tps.d - transactions completed per second, and how many of them failed,
 * one line per whole second.  Twin of bpftrace/tps.bt.
 *
 * USAGE: python3 tps_d.py -p PID
 *        python3 tps_d.py -c 'CMD ARGS'
 *   tps_d.py (beside this file) runs dtrace -s tps.d and prints the table
 *   below from what tps.d prints.  Run alone, tps.d prints only its counts.
 *
 * Seconds are whole seconds of the monotonic clock (timestamp; bpftrace:
 * nsecs, the same clock on Linux), so every line counts exactly one second
 * of events.  The second in which tracing started and the one cut short by
 * Ctrl-C or the target's exit are partial: printed, marked "partial" with
 * the milliseconds they cover, never as if whole.  A line is printed once
 * dtrace has read its second whole, about 100 ms after it ends.
 *
 * FIELDS (tps_d.py's table):
 *   TIME      HH:MM:SS at which the second began, local time
 *   TXNS      transaction-done events in that second (count)
 *   FAILED    of which with status != 0 (count)
 *   FAIL%     FAILED / TXNS, whole percent rounded down (0 in an idle second)
 *   NOTE      "partial NNN ms" for a second not traced whole
 *
 * EXACTNESS: the counts are cumulative and never deleted.  Each
 * event adds to slot (second % 16) of @tx and @fail; every 100 ms (and at
 * END) tps.d prints the slots and @clock, the latest tick's timestamp, as
 * dtrace read them in one snapshot (printa prints dtrace's copy, taken
 * before it reads the tick's record).  tps_d.py prints second S from the
 * first snapshot whose @clock is past S's end, as that slot's growth since
 * it printed S - 16, if it read that snapshot before second S + 16 began:
 * otherwise the slot may hold part of S + 16, and the line says the second
 * is not printed.  (trunc() or clear() after printing a second would
 * delete fires dtrace had not read yet: Oracle's DTrace for Linux snapshots
 * its aggregations before it drains the buffers.)
 * tps.d's lines:  "tps start START_NS WALL_OFFSET_NS" at BEGIN; per
 *   snapshot "tps clock NS", "tps slot K TXNS FAILED" per slot used,
 *   "tps snapshot-end"; "tps exit NS" at END, before its snapshot.
 *
 * OVERHEAD: two aggregation updates per transaction-done; a 10 Hz tick
 * printing at most 16 lines.
 * STABILITY: Evolving (probe transaction-done); tps.d's own lines are
 * tps_d.py's input, not an interface.
 * EXAMPLE: tps.example.txt
 */

#pragma D option quiet

dtrace:::BEGIN
{
	printf("tps start %d %d\n", timestamp, walltimestamp - timestamp);
	printf("Tracing transactions per second. Hit Ctrl-C to end.\n");
}

billing$target:::transaction-done
{
	this->slot = (timestamp / 1000000000) % 16;
	@tx[this->slot] = count();
	@fail[this->slot] = sum((int)arg2 != 0 ? 1 : 0);
}

profile:::tick-100ms
{
	@clock = max(timestamp);
	printa("tps clock %@d\n", @clock);
	printa("tps slot %d %@d %@d\n", @tx, @fail);
	printf("tps snapshot-end\n");
}

dtrace:::END
{
	@clock = max(timestamp);
	printf("tps exit %d\n", timestamp);
	printa("tps clock %@d\n", @clock);
	printa("tps slot %d %@d %@d\n", @tx, @fail);
	printf("tps snapshot-end\n");
	/* printed: nothing left for dtrace to print at exit */
	trunc(@tx);
	trunc(@fail);
	trunc(@clock);
}
