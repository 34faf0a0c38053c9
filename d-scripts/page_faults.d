#!/usr/sbin/dtrace -Cs
/*
 * page_faults.d - page faults of the target process per interval, and at
 * exit the user functions that caused most of them.  vminfo provider
 * (as_fault).  Twin of bpftrace/page_faults.bt.
 *
 * USAGE: dtrace -Cs page_faults.d -p PID [INTERVAL_S]
 *        dtrace -Cs page_faults.d -c 'CMD ARGS' [INTERVAL_S]
 *   INTERVAL_S  seconds between reports (default 10)
 *   (-C: the C preprocessor; the #! line passes it when run as ./page_faults.d)
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
 * malloc'd buffers, stacks, mapped files); a 1 Hz tick that sums MAX_CPU
 * counters once per interval.
 * EXACTNESS: an interval's FAULTS is computed in the kernel by the tick:
 * each CPU counts into its own cumulative counter (a CPU runs one probe
 * at a time: no increment is lost), and the tick prints their sum over CPU
 * ids 0..MAX_CPU-1 less what the last interval printed, so every fault is
 * in exactly one interval, whenever dtrace reads its buffers.  (An
 * aggregation printed and cleared each interval would lose faults on
 * Oracle's DTrace for Linux: clear() deletes those its last copy missed.)
 * TOTAL and the functions are aggregations, printed once, at exit.  A fault
 * on a CPU id of MAX_CPU or more ends the trace with one "refused" line.
 * STABILITY: vminfo is Evolving; layout Evolving.
 * EXAMPLE: page_faults.example.txt
 */

#pragma D option quiet
#pragma D option defaultargs
/* Solaris-family systems have vminfo:::as_fault, Oracle's DTrace for Linux
 * the exceptions:page_fault_user raw tracepoint: either may be absent. */
#pragma D option zdefs

#define MAX_CPU 512

/* every global, declared: Oracle's DTrace for Linux has 32 KB of them */
int64_t interval, secs, past_max_cpu;
uint64_t printed;		/* the counters' sum the last interval printed */
uint64_t faults[MAX_CPU];	/* per CPU, cumulative */

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
	printed = 0;
	past_max_cpu = 0;
	@total = sum(0);
}

dtrace:::BEGIN
{
	printf("Tracing page faults of PID %d every %d s. Hit Ctrl-C to end.\n", $target, interval);
	printf("%-8s %12s\n", "TIME", "FAULTS");
}

vminfo:::as_fault,
rawtp:exceptions::page_fault_user
/pid == $target && cpu < MAX_CPU/
{
	faults[cpu]++;
	@total = sum(1);
	@faults_by_func[ufunc(uregs[R_PC])] = count();
}

vminfo:::as_fault,
rawtp:exceptions::page_fault_user
/pid == $target && cpu >= MAX_CPU/
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
	this->sum = SUM_CPUS(faults);
	printf("%02d:%02d:%02d %12d\n", (this->now % 86400) / 3600, (this->now % 3600) / 60,
	    this->now % 60, this->sum - printed);
	printed = this->sum;
	secs = 0;
}

dtrace:::END
/past_max_cpu == 0/
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
/past_max_cpu != 0/
{
	printf("refused: an event on CPU %d; this script sums CPU ids 0..%d only, so its figures would be short\n",
	    past_max_cpu, MAX_CPU - 1);
}

dtrace:::END
{
	trunc(@total); trunc(@faults_by_func);
}
