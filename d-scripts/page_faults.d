#!/usr/sbin/dtrace -s
/*
 * page_faults.d - page faults of the target process per interval, and at
 * exit the user functions that caused most of them.  vminfo provider
 * (as_fault).  Twin of bpftrace/page_faults.bt.
 *
 * USAGE: dtrace -s page_faults.d -p PID [INTERVAL_S]
 *        dtrace -s page_faults.d -c 'CMD ARGS' [INTERVAL_S]
 *   INTERVAL_S  seconds between reports (default 10)
 *   (the bpftrace twin takes the PID as its first argument instead of -p)
 *
 * FIELDS:
 *   FAULTS    address-space faults (vminfo:::as_fault; Linux:
 *             rawtp:exceptions::page_fault_user, as the bpftrace twin:
 *             faults taken in user mode, not those the kernel takes
 *             copying to or from the process in a system call) in the
 *             interval (count); "TOTAL" line at exit
 *   TIME      HH:MM:SS of walltimestamp, UTC (bpftrace: local time)
 *   @faults_by_func[FUNCTION]: COUNT at exit, the 10 rows with most
 *             faults: the user function of the faulting instruction
 *             (ufunc of the user PC; bpftrace: one row per address)
 *
 * OVERHEAD: one probe per fault of the process (first touches of memory:
 * malloc'd buffers, stacks, mapped files).
 * STABILITY: vminfo is Evolving; layout Evolving.
 * EXAMPLE: page_faults.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
/* Solaris-family systems have vminfo:::as_fault, Oracle's DTrace for Linux
 * the exceptions:page_fault_user raw tracepoint: either may be absent. */
#pragma D option zdefs

dtrace:::BEGIN
{
	interval = $1 > 0 ? $1 : 10;
	secs = 0;
	@n = sum(0);
	@total = sum(0);
}

dtrace:::BEGIN
{
	printf("Tracing page faults of PID %d every %d s. Hit Ctrl-C to end.\n", $target, interval);
	printf("%-8s %12s\n", "TIME", "FAULTS");
}

vminfo:::as_fault,
rawtp:exceptions::page_fault_user
/pid == $target/
{
	@n = sum(1);
	@total = sum(1);
	@faults_by_func[ufunc(uregs[R_PC])] = count();
}

profile:::tick-1sec
{
	secs++;
	this->now = walltimestamp / 1000000000;
}

profile:::tick-1sec
/secs >= interval/
{
	printf("%02d:%02d:%02d", (this->now % 86400) / 3600, (this->now % 3600) / 60, this->now % 60);
	printa(" %@12d\n", @n);
}

profile:::tick-1sec
/secs >= interval/
{
	clear(@n);
	secs = 0;
}

dtrace:::END
{
	this->now = walltimestamp / 1000000000;
}

dtrace:::END
{
	printf("%-8s", "TOTAL");
	printa(" %@12d\n", @total);
	printf("\nTop 10 faulting user functions:\n");
	trunc(@faults_by_func, 10);
	/* printa's default layout: Oracle's DTrace for Linux aborts on a
	 * "%A" format for a ufunc() key ("Data record list does not match") */
	printa(@faults_by_func);
}

dtrace:::END
{
	trunc(@n); trunc(@total); trunc(@faults_by_func);
}
