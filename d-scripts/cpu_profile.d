#!/usr/sbin/dtrace -s
/*
 * cpu_profile.d - on-CPU kernel and user stacks of the target process
 * sampled at 99 Hz, for a flame graph.  Printed at exit.
 * Twin of bpftrace/cpu_profile.bt.
 *
 * USAGE: dtrace -s cpu_profile.d -p PID -o out.stacks
 *        dtrace -s cpu_profile.d -c 'CMD ARGS' -o out.stacks
 *   (the bpftrace twin takes the PID as its argument instead of -p)
 *   Fold and draw (Brendan Gregg's FlameGraph scripts):
 *     stackcollapse.pl out.stacks | flamegraph.pl > cpu.svg
 *   D cannot print one folded line per stack itself (no per-frame access
 *   to a stack() value), so the fold is the one step done outside.
 *
 * FIELDS (@samples[kernel stack, user stack, execname]: COUNT at exit):
 *   kernel stack  frames inside the kernel (empty when sampled in user mode)
 *   user stack    frames of the process, innermost first (needs frame
 *                 pointers or is cut short)
 *   execname      the process name (bpftrace: the thread's name)
 *   COUNT         samples (each ~10.1 ms of CPU at 99 Hz)
 *
 * OVERHEAD: profile-99 fires 99 times a second per CPU (99 Hz avoids
 * lock-step with 100 Hz timers); a stack walk per sample of the process.
 * Stop it with Ctrl-C while the process still runs: its user symbols are
 * resolved from the live process when the stacks are printed.
 * STABILITY: Evolving.
 * EXAMPLE: cpu_profile.example.txt
 */

#pragma D option quiet
#pragma D option ustackframes=100

dtrace:::BEGIN
{
	printf("Sampling stacks of PID %d at 99 Hz. Hit Ctrl-C to end.\n", $target);
}

profile-99
/pid == $target/
{
	@samples[stack(), ustack(), execname] = count();
}

dtrace:::END
{
	printa("@samples[%k, %k, %s]: %@d\n", @samples);
}
