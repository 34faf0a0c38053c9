#!/usr/sbin/dtrace -s
/*
 * cswitch.d - context switches of the target process per thread, voluntary
 * (it blocked: sleep, lock, I/O) versus involuntary (preempted while
 * runnable: CPU contention), and how long its threads stayed off CPU.
 * sched provider off-cpu / on-cpu.  Twin of bpftrace/cswitch.bt.
 *
 * USAGE: dtrace -s cswitch.d -p PID [INTERVAL_S]
 *        dtrace -s cswitch.d -c 'CMD ARGS' [INTERVAL_S]
 *   INTERVAL_S  seconds between reports (default 10)
 *   (the bpftrace twin takes the PID as its first argument instead of -p)
 *
 * FIELDS (per interval, threads that switched; all threads at exit):
 *   TID          thread ID
 *   COMM         execname (bpftrace: the thread's own name)
 *   VOLUNTARY    switches out in a sleeping state (count)
 *   INVOLUNTARY  switches out while still runnable (SRUN): preempted (count)
 *   TIME         HH:MM:SS of walltimestamp, UTC (bpftrace: local time)
 *   at exit: @offcpu_us[sleep|preempted], a power-of-two histogram of the
 *   time (microseconds) from off-cpu to on-cpu.  Long "sleep" times are
 *   waits (locks, I/O, timers); many "preempted" ones mean CPU contention.
 *   Every time has its row (quantize() places every 64-bit value; the
 *   bpftrace twin too, one line per bucket).
 *
 * OVERHEAD: sched:::off-cpu and on-cpu fire on every context switch of
 * the machine; the predicate on pid keeps the work to the target's.
 * EXACTNESS: the TOTAL table and the histograms, aggregations (per-CPU)
 * printed once at exit, are exact.  An interval's table is printed, then
 * truncated: on Oracle's DTrace for Linux trunc() also deletes the
 * switches that happened while dtrace copied it, which then show in no
 * interval (the TOTAL counts them).
 * STABILITY: sched provider Evolving; the pr_state test is illumos' and
 * macOS' (SRUN); Evolving.
 * EXAMPLE: cswitch.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs

dtrace:::BEGIN
{
	interval = $1 > 0 ? $1 : 10;
	secs = 0;
}

dtrace:::BEGIN
{
	printf("Tracing context switches of PID %d every %d s. Hit Ctrl-C to end.\n",
	    $target, interval);
}

sched:::off-cpu
/pid == $target/
{
	self->kind = curlwpsinfo->pr_state == SRUN ? 2 : 1;	/* 2 preempted, 1 sleep */
	self->ts = timestamp;
}

sched:::off-cpu
/pid == $target && self->kind == 1/
{
	@vol[tid, execname] = sum(1);
	@invol[tid, execname] = sum(0);
	@tvol[tid, execname] = sum(1);
	@tinvol[tid, execname] = sum(0);
}

sched:::off-cpu
/pid == $target && self->kind == 2/
{
	@vol[tid, execname] = sum(0);
	@invol[tid, execname] = sum(1);
	@tvol[tid, execname] = sum(0);
	@tinvol[tid, execname] = sum(1);
}

sched:::on-cpu
/self->ts/
{
	@offcpu_us[self->kind == 1 ? "sleep" : "preempted"] = quantize((timestamp - self->ts) / 1000);
	self->ts = 0;
	self->kind = 0;
}

profile:::tick-1sec
{
	secs++;
	this->now = walltimestamp / 1000000000;
}

profile:::tick-1sec
/secs >= interval/
{
	printf("\n%02d:%02d:%02d  last %d s\n%-8s %-16s %10s %12s\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60, interval,
	    "TID", "COMM", "VOLUNTARY", "INVOLUNTARY");
	printa("%-8d %-16s %@10d %@12d\n", @vol, @invol);
}

profile:::tick-1sec
/secs >= interval/
{
	trunc(@vol);
	trunc(@invol);
	secs = 0;
}

dtrace:::END
{
	this->now = walltimestamp / 1000000000;
}

dtrace:::END
{
	printf("\n%02d:%02d:%02d  TOTAL since start\n%-8s %-16s %10s %12s\n",
	    (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60,
	    "TID", "COMM", "VOLUNTARY", "INVOLUNTARY");
	printa("%-8d %-16s %@10d %@12d\n", @tvol, @tinvol);
	printf("\nOff-CPU time, us, by why the thread left the CPU:\n");
	printa("@offcpu_us[%s]:\n%@d\n", @offcpu_us);
}

dtrace:::END
{
	trunc(@vol); trunc(@invol); trunc(@tvol); trunc(@tinvol); trunc(@offcpu_us);
}
