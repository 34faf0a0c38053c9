#!/usr/sbin/dtrace -Cs
/*
 * errors.d - error codes by component, per interval and in total.
 * Twin of bpftrace/errors.bt.
 *
 * USAGE: dtrace -Cs errors.d -p PID [INTERVAL_S]
 *        dtrace -Cs errors.d -c 'CMD ARGS' [INTERVAL_S]
 *   INTERVAL_S  seconds between reports (default 10)
 *   (-C: the C preprocessor; the #! line passes it when run as ./errors.d)
 *
 * OUTPUT (each interval, then "TOTAL since start" at exit; times HH:MM:SS,
 *   of walltimestamp, UTC (bpftrace: local time)): "errors N (R/s)", R per
 *   second rounded down (TOTAL: "errors N"); then "errors by [component,
 *   code]" and its rows, or ": none seen".  An interval shows the 10
 *   largest rows, TOTAL all; rows descending by count (aggsortrev).
 * FIELDS:
 *   @errors[COMPONENT, CODE]  error probes fired in the interval (count);
 *                             COMPONENT is "-" when the probe passed ""
 *   @errors_total[COMPONENT, CODE]  the same since start (TOTAL)
 *
 * OVERHEAD: two aggregation updates and a variable update per error
 * probe; a 1 Hz tick that sums MAX_CPU counters once per interval.
 * EXACTNESS: the summary ("errors N") is computed in the kernel, by the
 * tick and at exit: each CPU counts into its own cumulative counter (a CPU
 * runs one probe at a time: no increment is lost), summed over CPU ids
 * 0..MAX_CPU-1; an interval prints the sum less what the last interval
 * printed, so every error is in exactly one interval, whenever dtrace
 * reads its buffers.  The TOTAL's rows are a count() aggregation
 * (per-CPU), printed once, at exit: exact.  An interval's rows are an
 * aggregation printed, then truncated: on Oracle's DTrace for Linux
 * trunc() also deletes the errors that fired while dtrace copied it,
 * which then show in no interval's rows (the summary above them and the
 * TOTAL count them).  An error on a CPU id of MAX_CPU or more ends the
 * trace with one "refused" line instead of figures that would be short.
 * STABILITY: Evolving (probe error).
 * EXAMPLE: errors.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
/* rows with the most errors first */
#pragma D option aggsortrev

#define MAX_CPU 512

/* every global, declared: Oracle's DTrace for Linux has 32 KB of them */
int64_t interval, secs, past_max_cpu;
int seen, seen_total;		/* "none seen" flags (interval, total) */
uint64_t printed;		/* the sum the last interval printed */
uint64_t errs[MAX_CPU];		/* per CPU, cumulative */

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
	printed = 0;
	seen = 0; seen_total = 0;
	printf("Tracing billing errors every %d s. Hit Ctrl-C to end.\n", interval);
}

billing$target:::error
/cpu < MAX_CPU/
{
	this->comp = copyinstr(arg1);
	this->comp = this->comp == "" ? "-" : this->comp;
	errs[cpu]++;
	@errors[this->comp, (int)arg2] = count();
	@errors_total[this->comp, (int)arg2] = count();
	/* a store, not an increment: concurrent firings cannot lose it */
	seen = 1;
	seen_total = 1;
}

billing$target:::error
/cpu >= MAX_CPU/
{
	past_max_cpu = cpu;
	exit(0);
}

profile:::tick-1sec
{
	secs++;
}

profile:::tick-1sec
/secs >= interval && past_max_cpu == 0/
{
	this->now = walltimestamp / 1000000000;
	this->n = SUM_CPUS(errs) - printed;
	printed += this->n;
	printf("\n%02d:%02d:%02d  last %d s\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval);
	printf("errors %d (%d/s)\n", this->n, this->n / interval);
	/* the 10 largest rows, largest first (aggsortrev) */
	trunc(@errors, 10);
	printf("errors by [component, code]%s\n", seen ? ", top 10:" : ": none seen");
	printa("@errors[%s, %d]: %@d\n", @errors);
	trunc(@errors);
	seen = 0;
	secs = 0;
}

dtrace:::END
/past_max_cpu == 0/
{
	this->now = walltimestamp / 1000000000;
	printf("\n%02d:%02d:%02d  TOTAL since start\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60);
	printf("errors %d\n", SUM_CPUS(errs));
	printf("errors by [component, code]%s\n", seen_total ? ":" : ": none seen");
	printa("@errors_total[%s, %d]: %@d\n", @errors_total);
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
	trunc(@errors);
	trunc(@errors_total);
}
