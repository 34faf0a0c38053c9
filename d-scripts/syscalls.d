#!/usr/sbin/dtrace -s
/*
 * syscalls.d - system calls of the target process, counted by name,
 * printed at exit.  The classic "syscall:::entry { @[probefunc] = count(); }".
 * Twin of bpftrace/syscalls.bt.
 *
 * USAGE: dtrace -s syscalls.d -p PID
 *        dtrace -s syscalls.d -c 'CMD ARGS'
 *   (the bpftrace twin takes the PID as its argument instead of -p)
 *
 * FIELDS (@syscalls[NR, NAME]: COUNT, at exit):
 *   NR      "-": the syscall provider names calls, it does not number them
 *           (the bpftrace twin prints the x86-64 number)
 *   NAME    the system call (probefunc)
 *   COUNT   entries into that system call (count)
 *
 * OVERHEAD: every syscall entry probe is enabled machine-wide; the
 * predicate keeps counting to the target.  Expect a few hundred ns per
 * system call of any process while tracing.
 * STABILITY: names are the OS's (syscall provider: Evolving); layout Evolving.
 * EXAMPLE: syscalls.example.txt
 */

#pragma D option quiet

dtrace:::BEGIN
{
	printf("Tracing system calls of PID %d. Hit Ctrl-C to end.\n", $target);
}

syscall:::entry
/pid == $target/
{
	@syscalls[probefunc] = count();
}

dtrace:::END
{
	printf("\nSystem calls of PID %d, [NR, NAME]: COUNT\n", $target);
	printa("@syscalls[-, %s]: %@d\n", @syscalls);
}
