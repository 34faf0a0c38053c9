#!/usr/sbin/dtrace -s
/*
 * file_opens.d - files the target process opens, with the result: counts
 * by path and errno, printed at exit.  The classic "opensnoop" as a
 * summary.  Twin of bpftrace/file_opens.bt.
 *
 * USAGE: dtrace -s file_opens.d -p PID
 *        dtrace -s file_opens.d -c 'CMD ARGS'
 *   (the bpftrace twin takes the PID as its argument instead of -p)
 *
 * FIELDS (@opens[PATH, ERRNO]: COUNT, at exit):
 *   PATH    the path as passed to open/openat (relative paths are relative
 *           to the process's directory)
 *   ERRNO   0 when the open succeeded, else the errno (2 ENOENT, 13 EACCES)
 *   COUNT   opens with that result (count); "none seen" when there were none
 *
 * OVERHEAD: open* entry and return probes, filtered by pid.
 * STABILITY: Evolving (syscall names differ: open, openat, open_nocancel).
 * EXAMPLE: file_opens.example.txt
 */

#pragma D option quiet
/* probes of other systems' names (open_nocancel, read_nocancel) may not exist */
#pragma D option zdefs

dtrace:::BEGIN
{
	printf("Tracing file opens of PID %d. Hit Ctrl-C to end.\n", $target);
}

syscall::open:entry,
syscall::open_nocancel:entry
/pid == $target/
{
	self->path = arg0;
}

syscall::openat:entry,
syscall::openat_nocancel:entry
/pid == $target/
{
	self->path = arg1;
}

syscall::open*:return
/self->path/
{
	@opens[copyinstr(self->path), (int)arg0 < 0 ? errno : 0] = count();
	seen = 1;	/* a flag, not a count: a lost update cannot matter */
	self->path = 0;
}

dtrace:::END
{
	printf("\nOpens of PID %d, [PATH, ERRNO (0: opened)]: COUNT\n", $target);
}

dtrace:::END
/seen/
{
	printa("@opens[%s, %d]: %@d\n", @opens);
}

dtrace:::END
/!seen/
{
	printf("none seen\n");
}
