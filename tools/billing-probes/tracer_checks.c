/*
 * tracer_checks.c -- which tracers are usable (bpftrace, a real DTrace)
 * and whether the kernel optimizes uprobes on 5-byte nops.  Asks the
 * tracers themselves (--version, -V) and /proc/kallsyms.
 */
#include "host_checks.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "bpftrace_version.h"
#include "runner.h"
#include "trusted_file.h"

/* First line of s, trimmed, at most 120 bytes. */
static void first_line(const char *s, char *out, size_t n)
{
	size_t len = strcspn(s, "\n");
	if (len > 120)
		len = 120;
	if (len >= n)
		len = n - 1;
	memcpy(out, s, len);
	out[len] = '\0';
}

/* The tracer doctor runs, as trace would find it (trusted_file.h): 0, or
 * -1 with r filled (not found, or a file doctor will not run as root). */
static int find_tracer(bp_check_result_t *r, const char *name, const char *env_var, char *path, size_t n)
{
	char why[500];
	int rc = bp_find_program(name, env_var, path, n, why, sizeof why);
	if (rc == -2)
		bp_result_set(r, BP_WARN, why, "use a tracer installed by root (apt-get), not writable by other users");
	return rc == -2 ? -1 : 0;
}

void bp_doctor_bpftrace(bp_check_result_t *r, int *usable)
{
	char path[PATH_MAX] = "";
	char *const argv[] = { path, (char *)"--version", NULL };
	char out[1024], line[160], msg[512];
	r->name = "bpftrace";
	*usable = 0;
	if (find_tracer(r, "bpftrace", "BPFTRACE", path, sizeof path) != 0)
		return;
	int rc = path[0] ? bp_run_capture(argv, out, sizeof out, 5000) : -1;
	if (rc == -1) {
		bp_result_set(r, BP_WARN, "not installed", "apt-get install bpftrace (0.17 or later reads USDT semaphores with -p PID)");
		return;
	}
	first_line(out, line, sizeof line);
	if (rc != 0) {
		snprintf(msg, sizeof msg, "`bpftrace --version` failed (%s): %s", rc == -2 ? "timeout or signal" : "non-zero exit", line);
		bp_result_set(r, BP_WARN, msg, "reinstall bpftrace");
		return;
	}
	*usable = 1;
	bp_bpftrace_version_t v;
	if (bp_bpftrace_version_parse(line, &v) == 0 && !bp_bpftrace_tested(&v)) {
		/* usable: trace checks what it attaches, but the scripts' figures
		 * are tested on three versions only */
		snprintf(msg, sizeof msg, "%s: untested (the scripts are tested on " BP_BPFTRACE_TESTED ")", line);
		bp_result_set(r, BP_WARN, msg, "trace still checks how many probes it attaches");
		return;
	}
	bp_result_set(r, BP_OK, line, NULL);
}

void bp_doctor_dtrace(bp_check_result_t *r, int *usable)
{
	char path[PATH_MAX] = "";
	char *const argv[] = { path, (char *)"-V", NULL };
	char out[1024], line[160];
	r->name = "dtrace";
	*usable = 0;
	if (find_tracer(r, "dtrace", NULL, path, sizeof path) != 0)
		return;
	int rc = path[0] ? bp_run_capture(argv, out, sizeof out, 5000) : -1;
	if (rc == -1) {
		bp_result_set(r, BP_WARN, "not installed (building with probes needs systemtap-sdt-dev's dtrace)",
		              "apt-get install systemtap-sdt-dev to build; trace with bpftrace");
		return;
	}
	first_line(out, line, sizeof line);
	/* A real DTrace answers -V with "dtrace: Sun D 1.x" (illumos, FreeBSD,
	 * macOS, Oracle's Linux port); systemtap's wrapper rejects -V. */
	if (rc == 0 && strstr(out, "Sun D") != NULL) {
		*usable = 1;
		bp_result_set(r, BP_OK, line, NULL);
	} else {
		bp_result_set(r, BP_OK, "systemtap's dtrace wrapper: builds probes (-h, -G), cannot trace (trace with bpftrace)", NULL);
	}
}

/* --- optimized uprobes --------------------------------------------------- */

/* Does /proc/kallsyms name the symbol?  Names are listed even where
 * kptr_restrict hides addresses. 1 yes, 0 no, -1 unreadable. */
static int kernel_has_symbol(const char *symbol)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	if (!f)
		return -1;
	char line[512];
	size_t n = strlen(symbol);
	int found = 0, lines = 0;
	while (!found && fgets(line, sizeof line, f)) {
		lines++;
		char *name = strrchr(line, ' ');
		if (name && strncmp(name + 1, symbol, n) == 0 && (name[n + 1] == '\n' || name[n + 1] == '\0'))
			found = 1;
	}
	fclose(f);
	return lines == 0 ? -1 : found;
}

void bp_doctor_optimized_uprobes(bp_check_result_t *r)
{
	struct utsname u;
	char msg[512];
	if (bp_doctor_uname(r, "optimized uprobes", &u) != 0)
		return;
	if (strcmp(u.machine, "x86_64") != 0) {
		snprintf(msg, sizeof msg, "not on %.40s: the 5-byte-nop optimization is x86-64 only; every probe hit traps", u.machine);
		bp_result_set(r, BP_WARN, msg, NULL);
		return;
	}
	/* The x86-64 optimization (a uprobe on a 5-byte nop becomes a call
	 * into a trampoline and the uprobe syscall, instead of an int3 trap)
	 * shows in the kernel as arch_uprobe_optimize and sys_uprobe. */
	int opt = kernel_has_symbol("arch_uprobe_optimize");
	int sys = kernel_has_symbol("__x64_sys_uprobe");
	int major = 0, minor = 0;
	sscanf(u.release, "%d.%d", &major, &minor);
	if (opt == 1 && sys == 1) {
		snprintf(msg, sizeof msg,
		         "available: kernel %.60s has arch_uprobe_optimize and the uprobe syscall (/proc/kallsyms); "
		         "only 5-byte-nop sites (-Dprobe_site=fast) benefit",
		         u.release);
		bp_result_set(r, BP_OK, msg, NULL);
	} else if (opt == 0 || sys == 0) {
		snprintf(msg, sizeof msg, "not available: kernel %.60s lacks arch_uprobe_optimize / sys_uprobe; every probe hit traps (int3)",
		         u.release);
		bp_result_set(r, BP_WARN, msg, "a 6.18 or later x86-64 kernel optimizes uprobes on 5-byte nops");
	} else {
		snprintf(msg, sizeof msg, "unknown: /proc/kallsyms unreadable; kernel %.60s is %s 6.18, where x86-64 gained them",
		         u.release, (major > 6 || (major == 6 && minor >= 18)) ? "at or after" : "before");
		bp_result_set(r, BP_WARN, msg, "run doctor as root to read /proc/kallsyms");
	}
}
