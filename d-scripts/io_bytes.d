#!/usr/sbin/dtrace -s
/*
 * io_bytes.d - bytes the target process reads and writes through system
 * calls, per interval and in total.  Twin of bpftrace/io_bytes.bt.
 *
 * USAGE: dtrace -s io_bytes.d -p PID [INTERVAL_S]
 *        dtrace -s io_bytes.d -c 'CMD ARGS' [INTERVAL_S]
 *   INTERVAL_S  seconds between reports (default 10)
 *   (the bpftrace twin takes the PID as its first argument instead of -p)
 *
 * FIELDS (one line per interval, "TOTAL" at exit):
 *   READ_B    bytes returned by read, readv, pread, preadv, recv* (files,
 *             sockets and pipes alike), in bytes
 *   WRITE_B   bytes accepted by write, writev, pwrite, pwritev, send*, in bytes
 *   READS, WRITES  calls that moved at least one byte (count)
 *   TIME      HH:MM:SS of walltimestamp, UTC (bpftrace: local time)
 *
 * OVERHEAD: read/write family return probes filtered by pid; sums in the
 * kernel.  sendfile, splice and mmap I/O are not seen.
 * STABILITY: Evolving.
 * EXAMPLE: io_bytes.example.txt
 */

#pragma D option quiet
/* probes of other systems' names (open_nocancel, read_nocancel) may not exist */
#pragma D option zdefs
#pragma D option defaultargs

dtrace:::BEGIN
{
	interval = $1 > 0 ? $1 : 10;
	secs = 0;
	/* present from the start, so printa prints 0 for an idle interval */
	@rb = sum(0); @wb = sum(0); @rn = sum(0); @wn = sum(0);
	@trb = sum(0); @twb = sum(0); @trn = sum(0); @twn = sum(0);
}

dtrace:::BEGIN
{
	printf("Tracing read/write bytes of PID %d every %d s. Hit Ctrl-C to end.\n", $target, interval);
	printf("%-8s %14s %14s %10s %10s\n", "TIME", "READ_B", "WRITE_B", "READS", "WRITES");
}

syscall::read:return, syscall::readv:return, syscall::pread*:return,
syscall::preadv:return, syscall::recv*:return, syscall::read_nocancel:return
/pid == $target && (ssize_t)arg1 > 0/
{
	@rb = sum(arg1); @rn = sum(1);
	@trb = sum(arg1); @trn = sum(1);
}

syscall::write:return, syscall::writev:return, syscall::pwrite*:return,
syscall::pwritev:return, syscall::send*:return, syscall::write_nocancel:return
/pid == $target && (ssize_t)arg1 > 0/
{
	@wb = sum(arg1); @wn = sum(1);
	@twb = sum(arg1); @twn = sum(1);
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
	printa(" %@14d", @rb); printa(" %@14d", @wb); printa(" %@10d", @rn); printa(" %@10d\n", @wn);
}

profile:::tick-1sec
/secs >= interval/
{
	clear(@rb); clear(@wb); clear(@rn); clear(@wn);
	secs = 0;
}

dtrace:::END
{
	this->now = walltimestamp / 1000000000;
}

dtrace:::END
{
	printf("%-8s", "TOTAL");
	printa(" %@14d", @trb); printa(" %@14d", @twb); printa(" %@10d", @trn); printa(" %@10d\n", @twn);
}

dtrace:::END
{
	trunc(@rb); trunc(@wb); trunc(@rn); trunc(@wn);
	trunc(@trb); trunc(@twb); trunc(@trn); trunc(@twn);
}
