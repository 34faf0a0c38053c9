/*
 * trace_run.c -- bpftrace running under `trace`: started on the resolved
 * program, its output held until it says what it attached
 * (trace_output.h), a stopped -c command let go once it is attached, and
 * stopped with SIGINT once the traced processes are gone (trace_run.h).
 */
#include "trace_run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpftrace_process.h"
#include "cli.h"
#include "proc_status.h"
#include "term_text.h"
#include "trace_output.h"
#include "trace_script.h"

static volatile sig_atomic_t tracer_pid, forwarded_sigint;

static void forward_signal(int sig)
{
	if (tracer_pid > 0) {
		kill((pid_t)tracer_pid, sig);
		forwarded_sigint |= sig == SIGINT;
	}
}

/* Have the semaphores of every site the script uses been raised?  All
 * of them raised means bpftrace has attached its uprobes. */
static int attached(pid_t pid, const pr_probe_set_t *set, const unsigned char *used)
{
	for (size_t i = 0; i < set->probe_count; i++) {
		const pr_probe_t *p = &set->probes[i];
		unsigned short value;
		if (used[i] != BP_TRACE_ATTACHED || !p->runtime_semaphore)
			continue;
		if (pr_proc_read_memory(pid, p->runtime_semaphore, &value, sizeof value) != 0 || value == 0)
			return 0;
	}
	return 1;
}

/* 1 when every one of the npids processes has exited (never for none). */
/* Gone: no process has the PID, or the one that has it started after the
 * process trace was given (starts[i], the start time read when it began). */
static int all_gone(const int *pids, const unsigned long long *starts, size_t npids)
{
	for (size_t i = 0; i < npids; i++) {
		unsigned long long now = pr_process_start_time((pid_t)pids[i]);
		if (now != 0 && now == starts[i])
			return 0;
	}
	return npids > 0;
}

/* bpftrace started with argv, its stdout and stderr on pipes read
 * through out, which holds the script's output until bpftrace says it
 * attached want probes (0: not checked).  Its pid, or -1 after the one
 * error line. */
static pid_t start_tracer(char **argv, size_t want, bp_trace_output_t *out)
{
	int out_pipe[2], err_pipe[2];
	if (pipe(out_pipe) != 0) {
		bp_error("trace", strerror(errno));
		return -1;
	}
	if (pipe(err_pipe) != 0) {
		bp_error("trace", strerror(errno));
		close(out_pipe[0]);
		close(out_pipe[1]);
		return -1;
	}
	pid_t tracer = fork();
	if (tracer == 0) {
		dup2(out_pipe[1], STDOUT_FILENO);
		dup2(err_pipe[1], STDERR_FILENO);
		close(out_pipe[0]);
		close(out_pipe[1]);
		close(err_pipe[0]);
		close(err_pipe[1]);
		execv(argv[0], argv);
		pr_printf_escaped(stderr, "billing-probes: trace: cannot run %s: %s (apt-get install bpftrace)", argv[0],
		                  strerror(errno));
		fputc('\n', stderr);
		_exit(BP_EXIT_ERROR);
	}
	close(out_pipe[1]);
	close(err_pipe[1]);
	if (tracer < 0) {
		close(out_pipe[0]);
		close(err_pipe[0]);
		bp_error("trace", "fork failed");
		return -1;
	}
	bp_trace_output_init(out, out_pipe[0], err_pipe[0], want);
	return tracer;
}

/* How long after the script's first line (BEGIN's) bpftrace may still
 * not have said how many probes it attached before `trace` refuses: every
 * tested version says it before BEGIN runs. */
#define BP_ATTACH_LINE_WAIT_MS 2000

/* The gate of out refused what bpftrace attached, or it never said (the
 * script printing for BP_ATTACH_LINE_WAIT_MS, or ended, without the
 * line): one line, bpftrace killed, nothing of its output shown.  1 when
 * so.  ended: bpftrace has exited. */
static int refuse_attachment(pid_t tracer, bp_trace_output_t *out, const bp_bpftrace_version_t *version,
                             long long *printed_ms, int ended)
{
	if (out->gate == BP_GATE_WAIT) {
		if (!bp_trace_output_script_printed(out))
			return 0;
		long long now = bp_monotonic_ms();
		if (!*printed_ms)
			*printed_ms = now;
		if (!ended && now - *printed_ms < BP_ATTACH_LINE_WAIT_MS)
			return 0;
	} else if (out->gate != BP_GATE_REFUSED) {
		return 0;
	}
	if (!ended)
		kill(tracer, SIGKILL);
	fflush(stdout);
	if (out->gate == BP_GATE_REFUSED)
		fprintf(stderr,
		        "billing-probes: trace: refused: bpftrace %s attached %zu probes where the program asks for %zu "
		        "(more count an event twice, fewer miss some): no figure shown\n",
		        version->text, out->got, out->want);
	else
		fprintf(stderr,
		        "billing-probes: trace: refused: bpftrace %s did not say how many probes it attached "
		        "(\"Attaching N probes...\" or \"Attached N probes\"), so a doubled attachment could not be "
		        "ruled out: no figure shown\n",
		        version->text);
	out->gate = BP_GATE_REFUSED;
	return 1;
}

/* One run of bpftrace: its process, its output, what it is. */
typedef struct {
	pid_t tracer;
	bp_trace_output_t out;
	const bp_bpftrace_version_t *version;
	long long printed_ms; /* when the script printed while its attach line was awaited */
	int status;           /* its wait status, once it has exited */
} tracer_run_t;

/* The attachment refused (refuse_attachment): bpftrace reaped. */
static int refused(tracer_run_t *run)
{
	if (!refuse_attachment(run->tracer, &run->out, run->version, &run->printed_ms, 0))
		return 0;
	waitpid(run->tracer, &run->status, 0);
	return 1;
}

/* The wait below: passes of bpftrace's output this long, up to
 * BP_ATTACH_WAIT_MS to attach, then up to BP_SCRIPT_LINE_WAIT_MS for the
 * script's first line. */
#define BP_PASS_MS 20
#define BP_ATTACH_WAIT_MS 60000
#define BP_SCRIPT_LINE_WAIT_MS 5000

/* Until bpftrace is attached to the stopped command target: up to 60 s
 * to compile and attach (its semaphores raised, or without any to watch,
 * its SIGINT handler in place and a moment more) and to say it attached
 * the probes asked for, then up to 5 s for the script's first line:
 * bpftrace carries out BEGIN's clear()s in user space, in order with its
 * printf()s, so a command let go before BEGIN's "Tracing" line is printed
 * can fire into maps about to be cleared.  0 when attached, 1 when
 * bpftrace exited meanwhile, 2 when its attachment was refused (run->status
 * set for both). */
static int wait_attached(tracer_run_t *run, pid_t target, const pr_probe_set_t *set, const unsigned char *used)
{
	int any_semaphore = 0;
	for (size_t i = 0; i < set->probe_count; i++)
		any_semaphore |= used[i] == BP_TRACE_ATTACHED && set->probes[i].runtime_semaphore;
	int ready_at = -1;
	for (int i = 0; i < BP_ATTACH_WAIT_MS / BP_PASS_MS; i++) {
		if (waitpid(run->tracer, &run->status, WNOHANG) == run->tracer)
			return 1;
		if (refused(run))
			return 2;
		if (ready_at < 0 &&
		    (any_semaphore ? attached(target, set, used) : bp_bpftrace_catches_sigint(run->tracer))) {
			if (!any_semaphore)
				nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
			ready_at = i;
		}
		if (ready_at >= 0 && run->out.gate == BP_GATE_OPEN &&
		    (bp_trace_output_script_printed(&run->out) || (i - ready_at) * BP_PASS_MS >= BP_SCRIPT_LINE_WAIT_MS))
			return 0;
		bp_trace_output_pass(&run->out, BP_PASS_MS);
	}
	return 0;
}

/* Until bpftrace exits, passing its output on: SIGINT to it (it prints
 * its END output) once the traced processes are all gone (--binary: only
 * on Ctrl-C or SIGTERM, forwarded).  0, or 2 when its attachment was
 * refused; run->status set. */
static int wait_done(tracer_run_t *run, const int *pids, const unsigned long long *starts, size_t npids,
                     pid_t command)
{
	int interrupted = 0;
	long long gone_ms = 0, output_ms = bp_monotonic_ms();
	bp_sigint_watch_t watch = { 0 };
	pid_t tracer = run->tracer;
	for (;;) {
		pid_t done = waitpid(-1, &run->status, WNOHANG);
		if (done == tracer)
			break;
		if (done < 0 && errno == ECHILD)
			break;
		if (refused(run))
			return 2;
		long long now = bp_monotonic_ms();
		if (!gone_ms && ((done > 0 && done == command) ||
		                 (done == 0 && command < 0 && all_gone(pids, starts, npids))))
			gone_ms = now;
		if (!interrupted && gone_ms && bp_bpftrace_catches_sigint(tracer) &&
		    ((bp_bpftrace_idle(tracer) && now - output_ms >= BP_BPFTRACE_QUIET_MS &&
		      now - gone_ms >= BP_BPFTRACE_QUIET_MS) ||
		     now - gone_ms > BP_BPFTRACE_STOP_MS)) {
			/* the traced process has ended and bpftrace has printed
			 * all it had, its output quiet for a while (a script's
			 * timer may still print what it queued), or after
			 * BP_BPFTRACE_STOP_MS whatever it prints */
			kill(tracer, SIGINT);
			bp_sigint_watch_sent(&watch);
			interrupted = 1;
		}
		if (forwarded_sigint) {
			forwarded_sigint = 0;
			bp_sigint_watch_sent(&watch);
		}
		if (bp_sigint_watch_missed(&watch, tracer)) {
			fprintf(stderr, "billing-probes: trace: bpftrace missed SIGINT (bpftrace 0.17 sees it only "
			                "while in epoll_wait): sent again\n");
			kill(tracer, SIGINT);
			bp_sigint_watch_sent(&watch);
		}
		if (done <= 0 && bp_trace_output_pass(&run->out, 20))
			output_ms = bp_monotonic_ms();
	}
	return 0;
}

int bp_trace_run(const bp_trace_run_t *r, int *released)
{
	const int *pids = r->pids;
	const unsigned long long *starts = r->starts;
	size_t npids = r->npids;
	pid_t command = r->command;
	tracer_run_t run = { 0 };
	run.version = r->version;
	run.tracer = start_tracer(r->argv, r->want, &run.out);
	if (run.tracer < 0)
		return BP_EXIT_ERROR;
	tracer_pid = run.tracer;
	signal(SIGINT, forward_signal);
	signal(SIGTERM, forward_signal);
	int ended = command > 0 ? wait_attached(&run, command, r->set, r->used) : 0;
	if (command > 0) {
		if (ended) {
			kill(command, SIGKILL);
			waitpid(command, NULL, 0);
		} else {
			kill(command, SIGCONT);
		}
		*released = 1;
	}
	if (!ended)
		ended = wait_done(&run, pids, starts, npids, command);
	bp_trace_output_finish(&run.out);
	/* bpftrace ended without its attach line: what it printed is shown
	 * only when the script printed nothing (its errors are on stderr) */
	if (ended != 2 && refuse_attachment(run.tracer, &run.out, r->version, &run.printed_ms, 1))
		ended = 2;
	bp_trace_output_release(&run.out);
	if (ended == 2)
		return BP_EXIT_ERROR;
	if (run.out.lost) {
		fflush(stdout);
		fprintf(stderr,
		        "billing-probes: trace: refused: bpftrace %s failed to update a map %zu time%s (map_update_elem; "
		        "bpftrace 0.23 loses a count when two CPUs add one new key at once), so the figures from then on "
		        "would be short: not shown\n",
		        r->version->text, run.out.lost, run.out.lost == 1 ? "" : "s");
		return BP_EXIT_ERROR;
	}
	return WIFEXITED(run.status) ? WEXITSTATUS(run.status) : 128 + WTERMSIG(run.status);
}
