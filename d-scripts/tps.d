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
 * printed then (Oracle's DTrace for Linux: the tick does not fire while
 * its CPU idles).
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
 * tick or at exit, from D variables: nothing depends on when dtrace reads
 * its buffers.  (Aggregations would not do: printa() prints dtrace's last
 * copy of them, which on Oracle's DTrace for Linux can be older or newer
 * than the tick that prints it, and trunc() or clear() after it deletes
 * the fires that copy missed.)  Each CPU adds each event to its own
 * counter in the row of the second (second % 8): nK[cpu] (a CPU runs one
 * probe at a time, so no increment is lost), TXNS in the low 32 bits,
 * FAILED in the high 32.  The counters are cumulative: a second is its
 * row's growth, summed over the MAX_CPU counters, since the row was last
 * printed.  It is printed only if the row held nothing of another second
 * then -- the row's last print took its previous second (8 s earlier)
 * whole and came before this second began, and this one comes before its
 * next second began -- else its line says "not printed": a tick over 7 s
 * late costs lines, never a wrong one; so does an exit with more than the
 * last 8 seconds still unprinted.  An event on
 * a CPU id of MAX_CPU or more ends the trace with one "refused" line
 * instead of figures that would be short.  (Eight rows, each summed by a
 * clause of its own with constant indices: a row chosen at run time costs
 * Oracle's BPF verifier seconds.)
 * OVERHEAD: one variable update per transaction-done; a 10 Hz tick that
 * sums MAX_CPU counters once per second printed; 32 KB of variables.
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
uint64_t base[8];	/* each row's sum when it was last printed */
uint64_t base_ns[8];	/* ... and when that was */
uint64_t base_sec[8];	/* ... and the second it printed (0: none yet) */
/* [cpu]: FAILED << 32 | TXNS, the row of seconds 0, 1, ... 7 modulo 8 */
uint64_t n0[MAX_CPU], n1[MAX_CPU], n2[MAX_CPU], n3[MAX_CPU];
uint64_t n4[MAX_CPU], n5[MAX_CPU], n6[MAX_CPU], n7[MAX_CPU];

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
 * up to UNTIL_NS (the exit, for the last), SUM being its row's sum -- and
 * move on to the next.  Predicates, not if/else: D as every DTrace has it.
 */
#define SECOND(PROBE, PRED, UNTIL_NS, SUM)					\
PROBE /PRED/									\
{										\
	this->row = cur % 8;							\
	this->sum = SUM;							\
	this->d = this->sum - base[this->row];					\
	/* exact: the row's last print took second cur - 8 whole (or none	\
	 * was due) and nothing of cur, and this one nothing of cur + 8 */	\
	this->ok = (base_sec[this->row] == cur - 8 ||				\
	    (base_sec[this->row] == 0 && cur - 8 < start_ns / NS)) &&		\
	    base_ns[this->row] < cur * NS &&					\
	    timestamp + SETTLE_NS < (cur + 8) * NS;				\
	base[this->row] = this->sum;						\
	base_ns[this->row] = timestamp;						\
	base_sec[this->row] = cur;						\
	this->tx = this->d & 0xffffffff;					\
	this->failed = this->d >> 32;						\
	this->from = cur * NS < start_ns ? start_ns : cur * NS;			\
	this->ms = ((UNTIL_NS) - this->from) / 1000000;				\
	this->wall = (cur * NS + wall_off) / NS;				\
	this->go = 1;								\
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

/* this->sK = row K's sum, at PROBE when PRED holds: a clause per row */
#define ROW_SUMS(PROBE, PRED)							\
PROBE /PRED/ { this->s0 = ROW_SUM(n0); }					\
PROBE /PRED/ { this->s1 = ROW_SUM(n1); }					\
PROBE /PRED/ { this->s2 = ROW_SUM(n2); }					\
PROBE /PRED/ { this->s3 = ROW_SUM(n3); }					\
PROBE /PRED/ { this->s4 = ROW_SUM(n4); }					\
PROBE /PRED/ { this->s5 = ROW_SUM(n5); }					\
PROBE /PRED/ { this->s6 = ROW_SUM(n6); }					\
PROBE /PRED/ { this->s7 = ROW_SUM(n7); }
#define ROW(k) ((k) == 0 ? this->s0 : (k) == 1 ? this->s1 : (k) == 2 ? this->s2 :	\
    (k) == 3 ? this->s3 : (k) == 4 ? this->s4 : (k) == 5 ? this->s5 :		\
    (k) == 6 ? this->s6 : this->s7)

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
	this->row = timestamp / NS % 8;
	this->one = (int)arg2 != 0 ? FAILED_ONE : 1;
}
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 0/ { n0[cpu] += this->one; }
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 1/ { n1[cpu] += this->one; }
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 2/ { n2[cpu] += this->one; }
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 3/ { n3[cpu] += this->one; }
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 4/ { n4[cpu] += this->one; }
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 5/ { n5[cpu] += this->one; }
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 6/ { n6[cpu] += this->one; }
billing$target:::transaction-done /cpu < MAX_CPU && this->row == 7/ { n7[cpu] += this->one; }

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
	this->due = past_max_cpu == 0 && timestamp >= (cur + 1) * NS + SETTLE_NS;
	this->row = cur % 8;
}
profile:::tick-100ms /this->due && this->row == 0/ { this->s = ROW_SUM(n0); }
profile:::tick-100ms /this->due && this->row == 1/ { this->s = ROW_SUM(n1); }
profile:::tick-100ms /this->due && this->row == 2/ { this->s = ROW_SUM(n2); }
profile:::tick-100ms /this->due && this->row == 3/ { this->s = ROW_SUM(n3); }
profile:::tick-100ms /this->due && this->row == 4/ { this->s = ROW_SUM(n4); }
profile:::tick-100ms /this->due && this->row == 5/ { this->s = ROW_SUM(n5); }
profile:::tick-100ms /this->due && this->row == 6/ { this->s = ROW_SUM(n6); }
profile:::tick-100ms /this->due && this->row == 7/ { this->s = ROW_SUM(n7); }
SECOND(profile:::tick-100ms, this->due, (cur + 1) * NS, this->s)

/*
 * At exit: the seconds not printed yet, the last one partial -- up to 8,
 * every row summed once; an older one waiting could not be exact.
 */
dtrace:::END
{
	this->go = 0;
	this->now = timestamp;
	this->any = past_max_cpu == 0 && cur <= this->now / NS;
}
ROW_SUMS(dtrace:::END, this->any)

dtrace:::END
/this->any && cur + 8 <= this->now / NS/
{
	this->wall = (cur * NS + wall_off) / NS;
	printf("(%d s from %02d:%02d:%02d not printed: the tick stalled)\n",
	    this->now / NS - 7 - cur, HMS(this->wall));
	cur = this->now / NS - 7;
}

#define END_SECOND SECOND(dtrace:::END, this->any && cur <= this->now / NS,	\
    cur == this->now / NS ? this->now : (cur + 1) * NS, ROW(cur % 8))
END_SECOND END_SECOND END_SECOND END_SECOND
END_SECOND END_SECOND END_SECOND END_SECOND

dtrace:::END
/past_max_cpu != 0/
{
	printf("refused: an event on CPU %d; this script sums CPU ids 0..%d only, so its figures would be short\n",
	    past_max_cpu, MAX_CPU - 1);
}
