#!/usr/sbin/dtrace -Cs
/*
 * io_bytes.d - bytes the target process reads and writes through system
 * calls, per interval and in total.  Twin of bpftrace/io_bytes.bt.
 *
 * USAGE: dtrace -Cs io_bytes.d -p PID [INTERVAL_S]
 *        dtrace -Cs io_bytes.d -c 'CMD ARGS' [INTERVAL_S]
 *   INTERVAL_S  seconds between reports (default 10)
 *   (-C: the C preprocessor; the #! line passes it when run as ./io_bytes.d)
 *   (the bpftrace twin takes the PID as its first argument instead of -p)
 *
 * FIELDS (one line per interval, "TOTAL" at exit):
 *   READ_B    bytes returned by read, readv, pread, preadv, recv* (files,
 *             sockets and pipes alike), in bytes
 *   WRITE_B   bytes accepted by write, writev, pwrite, pwritev, send*, in bytes
 *   READS, WRITES  calls that moved at least one byte (count)
 *   TIME      HH:MM:SS of walltimestamp, UTC (bpftrace: local time)
 *
 * OVERHEAD: read/write family return probes filtered by pid; a 1 Hz
 * tick that sums 4 x MAX_CPU counters once per interval.  sendfile, splice
 * and mmap I/O are not seen.
 * EXACTNESS: an interval's line is computed in the kernel by the tick: each
 * CPU counts into its own cumulative counters (a CPU runs one probe at a
 * time: no increment is lost), and the tick prints their sums over CPU
 * ids 0..MAX_CPU-1 less what the last interval printed, so every call is
 * in exactly one interval, whenever dtrace reads its buffers.  (An
 * aggregation printed and cleared each interval would lose calls on
 * Oracle's DTrace for Linux: clear() deletes those its last copy missed.)
 * TOTAL is aggregations, printed once, at exit.  A call on a CPU id of
 * MAX_CPU or more ends the trace with one "refused" line.
 * STABILITY: Evolving.
 * EXAMPLE: io_bytes.example.txt
 */

#pragma D option quiet
/* probes of other systems' names (open_nocancel, read_nocancel) may not exist */
#pragma D option zdefs
#pragma D option defaultargs

#define MAX_CPU 512

/* every global, declared: Oracle's DTrace for Linux has 32 KB of them */
int64_t interval, secs, past_max_cpu;
uint64_t p_rb, p_wb, p_rn, p_wn;	/* the sums the last interval printed */
/* per CPU, cumulative: bytes read and written, calls that read and wrote */
uint64_t rb[MAX_CPU], wb[MAX_CPU], rn[MAX_CPU], wn[MAX_CPU];

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
	p_rb = 0; p_wb = 0; p_rn = 0; p_wn = 0;
	/* present from the start, so printa prints 0 when nothing moved */
	@trb = sum(0); @twb = sum(0); @trn = sum(0); @twn = sum(0);
}

dtrace:::BEGIN
{
	printf("Tracing read/write bytes of PID %d every %d s. Hit Ctrl-C to end.\n", $target, interval);
	printf("%-8s %14s %14s %10s %10s\n", "TIME", "READ_B", "WRITE_B", "READS", "WRITES");
}

syscall::read:return, syscall::readv:return, syscall::pread*:return,
syscall::preadv:return, syscall::recv*:return, syscall::read_nocancel:return
/pid == $target && (ssize_t)arg1 > 0 && cpu < MAX_CPU/
{
	rb[cpu] += arg1;
	rn[cpu]++;
	@trb = sum(arg1); @trn = sum(1);
}

syscall::write:return, syscall::writev:return, syscall::pwrite*:return,
syscall::pwritev:return, syscall::send*:return, syscall::write_nocancel:return
/pid == $target && (ssize_t)arg1 > 0 && cpu < MAX_CPU/
{
	wb[cpu] += arg1;
	wn[cpu]++;
	@twb = sum(arg1); @twn = sum(1);
}

syscall::read:return, syscall::readv:return, syscall::pread*:return,
syscall::preadv:return, syscall::recv*:return, syscall::read_nocancel:return,
syscall::write:return, syscall::writev:return, syscall::pwrite*:return,
syscall::pwritev:return, syscall::send*:return, syscall::write_nocancel:return
/pid == $target && (ssize_t)arg1 > 0 && cpu >= MAX_CPU/
{
	past_max_cpu = cpu;
	exit(0);
}

profile:::tick-1sec
{
	secs++;
	this->go = secs >= interval && past_max_cpu == 0;
}

/* a sum per clause: Oracle's DTrace for Linux jumps over a clause with
 * 16-bit offsets, and four sums make a clause longer than that */
profile:::tick-1sec /this->go/ { this->rb = SUM_CPUS(rb); }
profile:::tick-1sec /this->go/ { this->wb = SUM_CPUS(wb); }
profile:::tick-1sec /this->go/ { this->rn = SUM_CPUS(rn); }
profile:::tick-1sec /this->go/ { this->wn = SUM_CPUS(wn); }

profile:::tick-1sec
/this->go/
{
	this->now = walltimestamp / 1000000000;
	printf("%02d:%02d:%02d %14d %14d %10d %10d\n", (this->now % 86400) / 3600,
	    (this->now % 3600) / 60, this->now % 60, this->rb - p_rb, this->wb - p_wb,
	    this->rn - p_rn, this->wn - p_wn);
	p_rb = this->rb; p_wb = this->wb; p_rn = this->rn; p_wn = this->wn;
	secs = 0;
}

dtrace:::END
/past_max_cpu == 0/
{
	printf("%-8s", "TOTAL");
	printa(" %@14d", @trb); printa(" %@14d", @twb); printa(" %@10d", @trn); printa(" %@10d\n", @twn);
}

dtrace:::END
/past_max_cpu != 0/
{
	printf("refused: an event on CPU %d; this script sums CPU ids 0..%d only, so its figures would be short\n",
	    past_max_cpu, MAX_CPU - 1);
}

dtrace:::END
{
	trunc(@trb); trunc(@twb); trunc(@trn); trunc(@twn);
}
