#!/usr/sbin/dtrace -s
/*
 * errors.d - error codes by component, per interval and in total.
 * Twin of bpftrace/errors.bt.
 *
 * USAGE: dtrace -s errors.d -p PID [INTERVAL_S [JSON]]
 *        dtrace -s errors.d -c 'CMD ARGS' [INTERVAL_S [JSON]]
 *   INTERVAL_S  seconds between reports (default 10)
 *   JSON        1: one JSON object per interval instead of a table
 *
 * FIELDS (rows of the interval, then all rows under "TOTAL" at exit):
 *   COMPONENT  the error probe's component ("-" when it passed "")
 *   CODE       the service's error code
 *   COUNT      error probes fired (count)
 * SUMMARY (table only, before the rows): "errors N (R/s)": every error
 *   probe of the interval, R per second rounded down (TOTAL: "errors N")
 *   TIME       HH:MM:SS of walltimestamp, UTC (bpftrace: local time)
 * JSON schema (a "start" line, one line per interval, "total" at exit):
 *   {"type":"start","interval_s":N}
 *   {"type":"interval"|"total","time":"HH:MM:SS","interval_s":N,
 *    "errors":[{"component":S,"code":N,"count":N}, ..., null]}
 *   the list ends with a null sentinel (printa cannot omit a last comma).
 *
 * Row order: by count, most first (aggsortrev); the bpftrace twin's rows
 * come in first-seen order (bpftrace 0.17 cannot sort a plain map).
 * OVERHEAD: one aggregation update per error probe.
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
	json = $2;
	secs = 0;
	/* the summary exists from the start: a quiet interval prints 0 */
	@s_err = count(); @s_err_rate = count(); @t_err = count();
	clear(@s_err); clear(@s_err_rate); clear(@t_err);
}

dtrace:::BEGIN
/json/
{
	printf("{\"type\":\"start\",\"interval_s\":%d}\n", interval);
}

dtrace:::BEGIN
/!json/
{
	printf("Tracing billing errors every %d s. Hit Ctrl-C to end.\n", interval);
}

billing$target:::error
{
	this->comp = copyinstr(arg1);
	this->comp = this->comp == "" ? "-" : this->comp;
	@count[this->comp, (int)arg2] = count();
	@tcount[this->comp, (int)arg2] = count();
	@s_err = count();
	@s_err_rate = count();
	@t_err = count();
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
	normalize(@s_err_rate, interval);
	printa("errors %@d (%@d/s)\n", @s_err, @s_err_rate);
	printf("%-24s %8s %10s\n", "COMPONENT", "CODE", "COUNT");
	printa("%-24s %8d %@10d\n", @count);
}

profile:::tick-1sec
/secs >= interval && json/
{
	printf("{\"type\":\"interval\",\"time\":\"%02d:%02d:%02d\",\"interval_s\":%d,\"errors\":[",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval);
	printa("{\"component\":\"%s\",\"code\":%d,\"count\":%@d},", @count);
	printf("null]}\n");
}

profile:::tick-1sec
/secs >= interval/
{
	trunc(@count);
	clear(@s_err); clear(@s_err_rate);
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
	printa("errors %@d\n", @t_err);
	printf("%-24s %8s %10s\n", "COMPONENT", "CODE", "COUNT");
	printa("%-24s %8d %@10d\n", @tcount);
}

dtrace:::END
/json/
{
	printf("{\"type\":\"total\",\"time\":\"%02d:%02d:%02d\",\"interval_s\":%d,\"errors\":[",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval);
	printa("{\"component\":\"%s\",\"code\":%d,\"count\":%@d},", @tcount);
	printf("null]}\n");
}

dtrace:::END
{
	trunc(@count);
	trunc(@tcount);
	trunc(@s_err);
	trunc(@s_err_rate);
	trunc(@t_err);
}
