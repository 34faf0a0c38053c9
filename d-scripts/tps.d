#!/usr/sbin/dtrace -Cs
/*
 * tps.d - transactions completed per second, and how many of them failed,
 * one line per whole second.  Twin of bpftrace/tps.bt.
 *
 * USAGE: dtrace -Cs tps.d -p PID
 *        dtrace -Cs tps.d -c 'CMD ARGS'
 *   (-C: the C preprocessor; the #! line passes it when run as ./tps.d)
 *
 * Seconds are whole seconds of the monotonic clock (timestamp; bpftrace:
 * nsecs, the same clock on Linux), so every line counts exactly one second
 * of events.  The second in which tracing started and the one cut short by
 * Ctrl-C or the target's exit are partial: printed, marked "partial" with
 * the milliseconds they cover, never as if whole.  A line is printed once
 * its second has ended, from the next 10 Hz tick at least 10 ms after the
 * end (about 10 to 110 ms late); seconds still unprinted at exit are
 * printed then.
 *
 * FIELDS:
 *   TIME      HH:MM:SS at which the second began, UTC (walltimestamp;
 *             bpftrace: local time)
 *   TXNS      transaction-done events in that second (count)
 *   FAILED    of which with status != 0 (count)
 *   FAIL%     FAILED / TXNS, whole percent rounded down (0 in an idle second)
 *   NOTE      "partial NNN ms" for a second not traced whole
 *
 * EXACTNESS: every line is computed and printed in the kernel, by the
 * tick, from D variables: nothing depends on when dtrace reads its buffers.
 * (Aggregations would not do: printa() prints dtrace's last copy of them,
 * which on Oracle's DTrace for Linux can be older or newer than the tick
 * that prints it, and trunc() or clear() after it deletes the fires that
 * copy missed.)  Each CPU adds each event to its own counter in the row of the
 * second (second % 4): nK[cpu] (a CPU runs one probe at a time, so no
 * increment is lost), TXNS in the low 32 bits, FAILED in the high 32.  The
 * counters are cumulative: a second is its row's growth, summed over the
 * MAX_CPU counters, since the row was last printed.  It is printed only if
 * the row held nothing of another second then -- printed before the row's
 * next second (4 s later) began, and the row last printed before this
 * second began -- else its line says "not printed": a tick over 3 s late
 * costs lines, never a wrong one.  An event on a CPU id of MAX_CPU or more
 * ends the trace with one "refused" line instead of figures that would be
 * short.  (Four rows, each summed by a clause of its own with constant
 * indices: a row chosen at run time costs Oracle's BPF verifier seconds.)
 * OVERHEAD: one variable update per transaction-done; a 10 Hz tick that
 * sums MAX_CPU counters once per second printed; 16 KB of variables.
 * STABILITY: Evolving (probe transaction-done).
 * EXAMPLE: tps.example.txt
 */

#pragma D option quiet

#define NS 1000000000
#define MAX_CPU 512
#define SETTLE_NS 10000000		/* a second's fires are all counted by then */
#define FAILED_ONE 0x100000001ULL	/* one transaction, failed */

/*
 * Every global is declared here, and none after: Oracle's DTrace for Linux
 * addresses globals with 16-bit offsets (32 KB).
 */
uint64_t start_ns, wall_off, cur, past_max_cpu;
uint64_t base[4];	/* each row's sum when it was last printed */
uint64_t base_ns[4];	/* ... and when that was */
uint64_t n0[MAX_CPU], n1[MAX_CPU], n2[MAX_CPU], n3[MAX_CPU];	/* FAILED << 32 | TXNS */

/* the sum of row N over CPU ids 0..MAX_CPU-1 (512) */
#define R4(N, c) (N[c] + N[c + 1] + N[c + 2] + N[c + 3])
#define R16(N, c) (R4(N, c) + R4(N, c + 4) + R4(N, c + 8) + R4(N, c + 12))
#define R64(N, c) (R16(N, c) + R16(N, c + 16) + R16(N, c + 32) + R16(N, c + 48))
#define R256(N, c) (R64(N, c) + R64(N, c + 64) + R64(N, c + 128) + R64(N, c + 192))
#define ROW_SUM(N) (R256(N, 0) + R256(N, 256))

/* hours, minutes, seconds of a wall-clock time in seconds (UTC) */
#define HMS(t) ((t) % 86400) / 3600, ((t) % 3600) / 60, (t) % 60

/*
 * The clauses that print second `cur` at PROBE when PRED holds -- its part
 * up to UNTIL_NS (the exit, for the last) -- and move on to the next.
 * Predicates, not if/else: D as every DTrace has it.
 */
#define SECOND(PROBE, PRED, UNTIL_NS)						\
PROBE /PRED/									\
{										\
	this->go = 1;								\
	this->row = cur % 4;							\
}										\
PROBE /this->go && this->row == 0/ { this->sum = ROW_SUM(n0); }		\
PROBE /this->go && this->row == 1/ { this->sum = ROW_SUM(n1); }		\
PROBE /this->go && this->row == 2/ { this->sum = ROW_SUM(n2); }		\
PROBE /this->go && this->row == 3/ { this->sum = ROW_SUM(n3); }		\
PROBE /this->go/								\
{										\
	this->d = this->sum - base[this->row];					\
	/* exact: the row held nothing of second cur + 4, nor of cur - 4 */	\
	this->ok = timestamp + SETTLE_NS < (cur + 4) * NS &&			\
	    base_ns[this->row] < cur * NS;					\
	base[this->row] = this->sum;						\
	base_ns[this->row] = timestamp;						\
	this->tx = this->d & 0xffffffff;					\
	this->failed = this->d >> 32;						\
	this->from = cur * NS < start_ns ? start_ns : cur * NS;			\
	this->ms = ((UNTIL_NS) - this->from) / 1000000;				\
	this->wall = (cur * NS + wall_off) / NS;				\
}										\
PROBE /this->go && this->ok/							\
{										\
	printf("%02d:%02d:%02d %8d %8d %6d%s\n", HMS(this->wall), this->tx,	\
	    this->failed, this->tx ? this->failed * 100 / this->tx : 0,		\
	    this->ms < 1000 ? strjoin(strjoin("  partial ", lltostr(this->ms)),	\
	    " ms") : "");							\
}										\
PROBE /this->go && !this->ok/							\
{										\
	printf("%02d:%02d:%02d %8s %8s %6s  not printed: the tick came too late\n",	\
	    HMS(this->wall), "-", "-", "-");					\
}										\
PROBE /this->go/								\
{										\
	cur++;									\
	this->go = 0;								\
}

dtrace:::BEGIN
{
	start_ns = timestamp;
	wall_off = walltimestamp - timestamp;
	cur = start_ns / NS;		/* the next second to print */
	past_max_cpu = 0;
	printf("Tracing transactions per second. Hit Ctrl-C to end.\n");
	printf("%-8s %8s %8s %6s  %s\n", "TIME", "TXNS", "FAILED", "FAIL%", "NOTE");
}

billing$target:::transaction-done
/cpu < MAX_CPU/
{
	this->row = timestamp / NS % 4;
	this->one = (int)arg2 != 0 ? FAILED_ONE : 1;
}
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 0/ { n0[cpu] += this->one; }
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 1/ { n1[cpu] += this->one; }
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 2/ { n2[cpu] += this->one; }
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 3/ { n3[cpu] += this->one; }

billing$target:::transaction-done
/cpu >= MAX_CPU/
{
	past_max_cpu = cpu;
	exit(0);
}

/* One finished second per tick (a stalled tick catches up 10 s per s). */
profile:::tick-100ms
{
	this->go = 0;
}
SECOND(profile:::tick-100ms, past_max_cpu == 0 && timestamp >= (cur + 1) * NS + SETTLE_NS,
    (cur + 1) * NS)

/*
 * At exit: the last second, partial, and the one before it if the tick has
 * not printed it yet; any earlier one waiting means the tick stalled.
 */
dtrace:::END
{
	this->go = 0;
	this->now = timestamp;
}

dtrace:::END
/past_max_cpu == 0 && cur + 1 < this->now / NS/
{
	this->wall = (cur * NS + wall_off) / NS;
	printf("(%d s from %02d:%02d:%02d not printed: the tick stalled)\n",
	    this->now / NS - 1 - cur, HMS(this->wall));
	cur = this->now / NS - 1;
}

SECOND(dtrace:::END, past_max_cpu == 0 && cur < this->now / NS, (cur + 1) * NS)
SECOND(dtrace:::END, past_max_cpu == 0 && cur == this->now / NS, this->now)

dtrace:::END
/past_max_cpu != 0/
{
	printf("refused: an event on CPU %d; this script sums CPU ids 0..%d only, so its figures would be short\n",
	    past_max_cpu, MAX_CPU - 1);
}
