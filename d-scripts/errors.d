#!/usr/sbin/dtrace -s
/*
 * errors.d - error codes by component, per interval and in total.
 * Twin of bpftrace/errors.bt.
 *
 * USAGE: dtrace -s errors.d -p PID [INTERVAL_S]
 *        dtrace -s errors.d -c 'CMD ARGS' [INTERVAL_S]
 *   INTERVAL_S  seconds between reports (default 10)
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
 * OVERHEAD: five aggregation updates per error probe.
 * EXACTNESS: every figure and row is a count() aggregation (per-CPU): exact.
 * STABILITY: Evolving (probe error).
 * EXAMPLE: errors.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
/* rows with the most errors first */
#pragma D option aggsortrev

dtrace:::BEGIN
{
	interval = $1 > 0 ? $1 : 10;
	secs = 0;
	seen = 0; seen_total = 0;	/* "none seen" flags (interval, total) */
	/* the summary exists from the start: a quiet interval prints 0 */
	@s_err = count(); @s_err_rate = count(); @t_err = count();
	clear(@s_err); clear(@s_err_rate); clear(@t_err);
	printf("Tracing billing errors every %d s. Hit Ctrl-C to end.\n", interval);
}

billing$target:::error
{
	this->comp = copyinstr(arg1);
	this->comp = this->comp == "" ? "-" : this->comp;
	@s_err = count();
	@s_err_rate = count();
	@t_err = count();
	@errors[this->comp, (int)arg2] = count();
	@errors_total[this->comp, (int)arg2] = count();
	/* a store, not an increment: concurrent firings cannot lose it */
	seen = 1;
	seen_total = 1;
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
	normalize(@s_err_rate, interval);
	printa("errors %@d (%@d/s)\n", @s_err, @s_err_rate);
	/* the 10 largest rows, largest first (aggsortrev) */
	trunc(@errors, 10);
	printf("errors by [component, code]%s\n", seen ? ", top 10:" : ": none seen");
	printa("@errors[%s, %d]: %@d\n", @errors);
	trunc(@errors);
	seen = 0;
	clear(@s_err); clear(@s_err_rate);
	secs = 0;
}

dtrace:::END
{
	this->now = walltimestamp / 1000000000;
	printf("\n%02d:%02d:%02d  TOTAL since start\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60);
	printa("errors %@d\n", @t_err);
	printf("errors by [component, code]%s\n", seen_total ? ":" : ": none seen");
	printa("@errors_total[%s, %d]: %@d\n", @errors_total);
	trunc(@errors);
	trunc(@errors_total);
	trunc(@s_err);
	trunc(@s_err_rate);
	trunc(@t_err);
}
