/*
 * trace_output.c -- bpftrace's stdout and stderr as `trace` passes them
 * on: the attach line checked, host noise dropped (trace_output.h).
 */
#include "trace_output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "term_text.h"

/* Kernels from 5.11 on charge BPF memory to the cgroup, not to
 * RLIMIT_MEMLOCK, so bpftrace failing to raise it changes nothing. */
static int memlock_unused(void)
{
	struct utsname u;
	int major = 0, minor = 0;
	if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major > 5 || (major == 5 && minor >= 11);
}

void bp_trace_output_init(bp_trace_output_t *t, int out_fd, int err_fd, size_t want)
{
	memset(t, 0, sizeof *t);
	t->out_fd = out_fd;
	t->err_fd = err_fd;
	t->trim = (bp_blank_trim_t)BP_BLANK_TRIM_INIT;
	t->want = want;
	t->gate = want ? BP_GATE_WAIT : BP_GATE_OPEN;
	t->drop_memlock = memlock_unused();
	fcntl(out_fd, F_SETFL, O_NONBLOCK);
	fcntl(err_fd, F_SETFL, O_NONBLOCK);
}

/* "Attaching N probes..." / "Attached N probes" (one probe: "probe"):
 * N, or 0 for any other line. */
static size_t attach_count(const char *line, size_t len)
{
	char text[64];
	unsigned long n = 0;
	char tail[16] = "";
	if (len >= sizeof text)
		return 0;
	memcpy(text, line, len);
	text[len] = '\0';
	if (sscanf(text, "Attaching %lu probe%15s", &n, tail) == 2 && (!strcmp(tail, "s...") || !strcmp(tail, "...")))
		return n;
	if (sscanf(text, "Attached %lu probe%15s", &n, tail) >= 1 && (!strcmp(tail, "s") || !tail[0]) &&
	    strncmp(text, "Attached ", 9) == 0)
		return n;
	return 0;
}

static void show(bp_trace_output_t *t, const char *buf, size_t n)
{
	bp_blank_trim_write(&t->trim, buf, n, stdout);
}

/* The gate leaves WAIT: open shows what it held, refused drops it. */
static void settle(bp_trace_output_t *t, int open)
{
	t->gate = open ? BP_GATE_OPEN : BP_GATE_REFUSED;
	if (open && t->held.len)
		show(t, t->held.data, t->held.len);
	free(t->held.data);
	t->held = (pr_buf_t){ 0 };
}

/* The attach line said n probes: open the gate, or refuse. */
static void judge(bp_trace_output_t *t, size_t n)
{
	if (t->gate != BP_GATE_WAIT || t->got)
		return;
	t->got = n;
	settle(t, n == t->want);
}

/* One line of stdout (with its newline, but at the very end) where the
 * gate says. */
static void emit(bp_trace_output_t *t, const char *line, size_t len)
{
	if (t->gate == BP_GATE_OPEN)
		show(t, line, len);
	else if (t->gate == BP_GATE_WAIT)
		pr_buf_append(&t->held, line, len);
}

/* A map update failed: what it counted is lost, nothing more is shown. */
static void update_lost(bp_trace_output_t *t)
{
	t->lost++;
	if (t->gate != BP_GATE_REFUSED)
		t->gate = BP_GATE_LOST;
}

/* Is the failed update whose source line src and marker line ("~~~"
 * under its expression) bpftrace printed a sum(0)?  It adds nothing, so
 * failing loses nothing: the scripts make each new key of a per-CPU map
 * with one (bpftrace 0.23 adds a new key with BPF_NOEXIST, so of two CPUs
 * adding one key at once, one fails). */
static int failed_sum_of_zero(const pr_buf_t *src, const char *marker, size_t n)
{
	static const char zero[] = "sum(0)";
	const size_t len = sizeof zero - 1;
	const char *from = memchr(marker, '~', n);
	if (!from || !src->data)
		return 0;
	size_t at = (size_t)(from - marker), width = 0;
	while (at + width < n && marker[at + width] == '~')
		width++;
	return width == len && at + len <= src->len && memcmp(src->data + at, zero, len) == 0;
}

/* One whole stdout line: counted, judged, shown or held. */
static void stdout_line(bp_trace_output_t *t, const char *line, size_t len)
{
	char text[160];
	size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
	memcpy(text, line, n);
	text[n] = '\0';
	if (n && text[n - 1] == '\n')
		text[--n] = '\0';
	/* bpftrace's own line comes first; a later one that reads the same is
	 * the script printing what a traced process passed it */
	size_t count = t->lines == 0 ? attach_count(text, n) : 0;
	t->first_is_attaching = t->first_is_attaching || count > 0;
	t->lines++;
	if (count)
		judge(t, count);
	if (t->update_line == 1) { /* the failed update's source line */
		t->update_src.len = 0;
		pr_buf_append(&t->update_src, line, len);
		t->update_line = 2;
		return;
	}
	if (t->update_line == 2) { /* and its marker line */
		if (!failed_sum_of_zero(&t->update_src, line, len))
			update_lost(t);
		t->update_line = 0;
		return;
	}
	if (strstr(text, "helper: map_update_elem, retcode:")) {
		/* the WARNING line before it goes too; the source and marker
		 * lines that follow tell whether a count was lost */
		t->update_line = 1;
		t->warning.len = 0;
		return;
	}
	if (t->warning.len) {
		emit(t, t->warning.data, t->warning.len);
		t->warning.len = 0;
	}
	if (strstr(text, ": WARNING: ") && t->gate != BP_GATE_LOST) {
		pr_buf_append(&t->warning, line, len);
		return;
	}
	emit(t, line, len);
}

static void stdout_bytes(bp_trace_output_t *t, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		pr_buf_append(&t->out_line, buf + i, 1);
		if (buf[i] == '\n') {
			stdout_line(t, t->out_line.data, t->out_line.len);
			t->out_line.len = 0;
		}
	}
}

/* One whole stderr line (without its newline): dropped, judged or passed on. */
static void stderr_line(bp_trace_output_t *t, const char *line, size_t len)
{
	char text[4096];
	size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
	memcpy(text, line, n);
	text[n] = '\0';
	if (t->drop_memlock && strstr(text, "couldn't set RLIMIT_MEMLOCK"))
		return;
	if (strstr(text, "Could not read functions from") && strstr(text, "available_filter_functions"))
		return;
	size_t count = attach_count(text, n);
	if (count) {
		judge(t, count);
		if (t->gate == BP_GATE_REFUSED)
			return;
	}
	if (strstr(text, "helper: map_update_elem, retcode:")) { /* as on stdout */
		t->lost++;
		if (t->gate != BP_GATE_REFUSED)
			t->gate = BP_GATE_LOST;
	}
	fflush(stdout);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];
		if (c != '\t' && pr_byte_needs_escape(c))
			pr_put_escaped_byte(stderr, c);
		else
			fputc(c, stderr);
	}
	fputc('\n', stderr);
	fflush(stderr);
}

static void stderr_bytes(bp_trace_output_t *t, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] != '\n') {
			pr_buf_append(&t->err_line, buf + i, 1);
			continue;
		}
		stderr_line(t, t->err_line.data ? t->err_line.data : "", t->err_line.len);
		t->err_line.len = 0;
	}
}

/* Read fd until it would block; 1 when something was read.  *fd = -1 at
 * end of file. */
static int drain(bp_trace_output_t *t, int *fd, int is_err)
{
	char buf[65536];
	int got = 0;
	while (*fd >= 0) {
		ssize_t n = read(*fd, buf, sizeof buf);
		if (n == 0) {
			close(*fd);
			*fd = -1;
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		got = 1;
		if (is_err)
			stderr_bytes(t, buf, (size_t)n);
		else
			stdout_bytes(t, buf, (size_t)n);
	}
	return got;
}

int bp_trace_output_pass(bp_trace_output_t *t, int timeout_ms)
{
	struct pollfd pfd[2] = { { t->out_fd, POLLIN, 0 }, { t->err_fd, POLLIN, 0 } };
	if (t->out_fd < 0 && t->err_fd < 0) {
		poll(NULL, 0, timeout_ms);
		return 0;
	}
	if (poll(pfd, 2, timeout_ms) <= 0)
		return 0;
	int got = 0;
	if (pfd[0].revents)
		got |= drain(t, &t->out_fd, 0);
	if (pfd[1].revents)
		got |= drain(t, &t->err_fd, 1);
	return got;
}

int bp_trace_output_script_printed(const bp_trace_output_t *t)
{
	return t->lines > (size_t)t->first_is_attaching;
}

void bp_trace_output_release(bp_trace_output_t *t)
{
	if (t->gate == BP_GATE_WAIT) {
		settle(t, 1);
		return;
	}
	free(t->held.data);
	t->held = (pr_buf_t){ 0 };
}

void bp_trace_output_finish(bp_trace_output_t *t)
{
	drain(t, &t->out_fd, 0);
	drain(t, &t->err_fd, 1);
	if (t->out_line.len)
		stdout_line(t, t->out_line.data, t->out_line.len);
	if (t->update_line)
		update_lost(t);
	if (t->warning.len)
		emit(t, t->warning.data, t->warning.len);
	if (t->err_line.len)
		stderr_line(t, t->err_line.data, t->err_line.len);
	if (t->out_fd >= 0)
		close(t->out_fd);
	if (t->err_fd >= 0)
		close(t->err_fd);
	t->out_fd = t->err_fd = -1;
	free(t->out_line.data);
	free(t->err_line.data);
	free(t->warning.data);
	free(t->update_src.data);
	t->out_line = t->err_line = t->warning = t->update_src = (pr_buf_t){ 0 };
}
