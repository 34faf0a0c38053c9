/*
 * doctor_checks.c -- can this host trace USDT probes, and if not, why.
 *
 * Every check reads something real (kernel config, mounts, capabilities,
 * sysctls, the tracers' own --version) and says where it looked.  What
 * cannot be known is a WARN with the reason, never a guessed OK.
 */
#include "doctor_checks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef BP_HAVE_ZLIB
#  include <zlib.h>
#endif

#define TRACEFS_MAGIC_NUMBER 0x74726163
#define DEBUGFS_MAGIC_NUMBER 0x64626720

static void set(bp_check_result_t *r, bp_status_t s, const char *finding, const char *fix)
{
	r->status = s;
	snprintf(r->finding, sizeof r->finding, "%s", finding);
	snprintf(r->fix, sizeof r->fix, "%s", fix ? fix : "");
}

/* --- kernel --------------------------------------------------------------- */

void bp_doctor_kernel(bp_check_result_t *r)
{
	struct utsname u;
	char msg[512];
	r->name = "kernel";
	if (uname(&u) != 0) {
		set(r, BP_WARN, "uname failed", NULL);
		return;
	}
	snprintf(msg, sizeof msg, "Linux %.100s on %.40s", u.release, u.machine);
	set(r, BP_OK, msg, NULL);
}

/* The kernel's build configuration: /boot/config-RELEASE, else the
 * kernel's own copy in /proc/config.gz (CONFIG_IKCONFIG_PROC). */
typedef struct kconfig {
	char *text;
	char source[300];
} kconfig_t;

static int read_plain(const char *path, kconfig_t *k)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t cap = 1 << 18, len = 0, n;
	char *buf = malloc(cap);
	while (buf && (n = fread(buf + len, 1, cap - 1 - len, f)) > 0) {
		len += n;
		if (len == cap - 1) {
			char *grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap *= 2;
		}
	}
	fclose(f);
	if (!buf)
		return -1;
	buf[len] = '\0';
	k->text = buf;
	snprintf(k->source, sizeof k->source, "%s", path);
	return 0;
}

#ifdef BP_HAVE_ZLIB
static int read_gzip(const char *path, kconfig_t *k)
{
	gzFile g = gzopen(path, "rb");
	if (!g)
		return -1;
	size_t cap = 1 << 18, len = 0;
	char *buf = malloc(cap);
	int n;
	while (buf && (n = gzread(g, buf + len, (unsigned)(cap - 1 - len))) > 0) {
		len += (size_t)n;
		if (len == cap - 1) {
			char *grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap *= 2;
		}
	}
	gzclose(g);
	if (!buf || len == 0) {
		free(buf);
		return -1;
	}
	buf[len] = '\0';
	k->text = buf;
	snprintf(k->source, sizeof k->source, "%s", path);
	return 0;
}
#endif

static int load_kconfig(kconfig_t *k)
{
	struct utsname u;
	char path[300];
	k->text = NULL;
	if (uname(&u) == 0) {
		snprintf(path, sizeof path, "/boot/config-%.200s", u.release);
		if (read_plain(path, k) == 0)
			return 0;
	}
#ifdef BP_HAVE_ZLIB
	if (read_gzip("/proc/config.gz", k) == 0)
		return 0;
#endif
	return -1;
}

/* 'y', 'm', or 'n' (also when absent). */
static char kconfig_value(const kconfig_t *k, const char *option)
{
	size_t n = strlen(option);
	for (const char *line = k->text; line && *line;) {
		if (strncmp(line, option, n) == 0 && line[n] == '=')
			return line[n + 1] == 'y' ? 'y' : line[n + 1] == 'm' ? 'm' : 'n';
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return 'n';
}

static const char *config_missing_text(void)
{
#ifdef BP_HAVE_ZLIB
	return "kernel config not found (/boot/config-$(uname -r), /proc/config.gz): cannot verify";
#else
	return "kernel config not found (/boot/config-$(uname -r); this build reads no /proc/config.gz: built without zlib)";
#endif
}

/* Check that every option is y (or m where allowed); list what is not. */
static void check_options(bp_check_result_t *r, const char *const *options, size_t count, const char *fix)
{
	kconfig_t k;
	if (load_kconfig(&k) != 0) {
		set(r, BP_WARN, config_missing_text(), "install the kernel's config, or load the configs module for /proc/config.gz");
		return;
	}
	char msg[512], missing[256] = "";
	size_t used = 0;
	for (size_t i = 0; i < count; i++) {
		if (kconfig_value(&k, options[i]) == 'n')
			used += (size_t)snprintf(missing + used, used < sizeof missing ? sizeof missing - used : 0,
			                         "%s%s", used ? ", " : "", options[i]);
	}
	if (used == 0) {
		used = 0;
		for (size_t i = 0; i < count && used < sizeof msg; i++)
			used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s=%c", i ? " " : "", options[i],
			                         kconfig_value(&k, options[i]));
		if (used < sizeof msg)
			snprintf(msg + used, sizeof msg - used, " (%s)", k.source);
		set(r, BP_OK, msg, NULL);
	} else {
		snprintf(msg, sizeof msg, "not set in %s: %s", k.source, missing);
		set(r, BP_FAIL, msg, fix);
	}
	free(k.text);
}

void bp_doctor_kernel_uprobes(bp_check_result_t *r)
{
	static const char *const options[] = { "CONFIG_UPROBES", "CONFIG_UPROBE_EVENTS" };
	r->name = "kernel uprobes";
	check_options(r, options, 2, "run a kernel built with CONFIG_UPROBES=y and CONFIG_UPROBE_EVENTS=y (Debian's is)");
}

void bp_doctor_kernel_bpf(bp_check_result_t *r)
{
	static const char *const options[] = { "CONFIG_BPF", "CONFIG_BPF_SYSCALL", "CONFIG_BPF_EVENTS", "CONFIG_BPF_JIT" };
	r->name = "kernel BPF";
	check_options(r, options, 4, "run a kernel built with CONFIG_BPF_SYSCALL, CONFIG_BPF_EVENTS and CONFIG_BPF_JIT (Debian's is)");
}

/* --- tracefs --------------------------------------------------------------- */

void bp_doctor_tracefs(bp_check_result_t *r)
{
	struct statfs sf;
	char msg[512];
	r->name = "tracefs";
	if (statfs("/sys/kernel/tracing", &sf) == 0 && (unsigned long)sf.f_type == TRACEFS_MAGIC_NUMBER) {
		if (access("/sys/kernel/tracing/uprobe_events", F_OK) == 0 || errno == EACCES) {
			set(r, BP_OK, "mounted at /sys/kernel/tracing", NULL);
		} else {
			set(r, BP_FAIL, "mounted at /sys/kernel/tracing but has no uprobe_events: kernel without CONFIG_UPROBE_EVENTS",
			    "run a kernel with CONFIG_UPROBE_EVENTS=y");
		}
		return;
	}
	if (statfs("/sys/kernel/debug/tracing", &sf) == 0 && (unsigned long)sf.f_type == TRACEFS_MAGIC_NUMBER) {
		set(r, BP_WARN, "mounted only at /sys/kernel/debug/tracing (older tools look there, bpftrace wants /sys/kernel/tracing)",
		    "mount -t tracefs nodev /sys/kernel/tracing");
		return;
	}
	snprintf(msg, sizeof msg, "not mounted at /sys/kernel/tracing%s",
	         statfs("/sys/kernel/debug", &sf) == 0 && (unsigned long)sf.f_type == DEBUGFS_MAGIC_NUMBER
	             ? "" : " (nor debugfs at /sys/kernel/debug)");
	set(r, BP_FAIL, msg,
	    "as root: mount -t tracefs nodev /sys/kernel/tracing (and add it to /etc/fstab: tracefs /sys/kernel/tracing tracefs defaults 0 0)");
}

/* --- privileges ------------------------------------------------------------ */

/* CapEff of this process, from /proc/self/status; 0 when unknown. */
static unsigned long long effective_caps(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long caps = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return caps;
}

enum { CAP_SYS_ADMIN_BIT = 21, CAP_PERFMON_BIT = 38, CAP_BPF_BIT = 39 };

void bp_doctor_privileges(bp_check_result_t *r)
{
	unsigned long long caps = effective_caps();
	int sys_admin = (caps >> CAP_SYS_ADMIN_BIT) & 1;
	int bpf = (caps >> CAP_BPF_BIT) & 1, perfmon = (caps >> CAP_PERFMON_BIT) & 1;
	char msg[512];
	r->name = "privileges";
	if (geteuid() == 0 && sys_admin) {
		set(r, BP_OK, "root with CAP_SYS_ADMIN", NULL);
	} else if (sys_admin || (bpf && perfmon)) {
		snprintf(msg, sizeof msg, "uid %u with %s", (unsigned)geteuid(),
		         sys_admin ? "CAP_SYS_ADMIN" : "CAP_BPF and CAP_PERFMON");
		set(r, BP_OK, msg, NULL);
	} else {
		snprintf(msg, sizeof msg, "uid %u without CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN (CapEff %llx)",
		         (unsigned)geteuid(), caps);
		set(r, BP_FAIL, msg,
		    "trace as root (sudo bpftrace ...), or grant the tracer CAP_BPF,CAP_PERFMON (setcap cap_bpf,cap_perfmon,cap_dac_read_search+ep $(command -v bpftrace))");
	}
}

void bp_doctor_perf_event_paranoid(bp_check_result_t *r)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int level;
	char msg[512];
	r->name = "perf_event_paranoid";
	if (!f || fscanf(f, "%d", &level) != 1) {
		if (f)
			fclose(f);
		set(r, BP_WARN, "cannot read /proc/sys/kernel/perf_event_paranoid", NULL);
		return;
	}
	fclose(f);
	unsigned long long caps = effective_caps();
	int privileged = ((caps >> CAP_SYS_ADMIN_BIT) & 1) || ((caps >> CAP_PERFMON_BIT) & 1);
	if (privileged || level <= 2) {
		snprintf(msg, sizeof msg, "kernel.perf_event_paranoid = %d%s", level,
		         privileged ? " (does not limit CAP_PERFMON / CAP_SYS_ADMIN)" : "");
		set(r, BP_OK, msg, NULL);
	} else {
		snprintf(msg, sizeof msg, "kernel.perf_event_paranoid = %d: unprivileged perf events are off", level);
		set(r, BP_WARN, msg, "trace with CAP_PERFMON or as root, or: sysctl kernel.perf_event_paranoid=2");
	}
}

/* --- tracers --------------------------------------------------------------- */

int bp_run_capture(char *const argv[], char *out, size_t n, int timeout_ms)
{
	int fds[2];
	out[0] = '\0';
	if (pipe(fds) != 0)
		return -1;
	int exec_err[2];
	if (pipe(exec_err) != 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	fcntl(exec_err[1], F_SETFD, FD_CLOEXEC);
	pid_t child = fork();
	if (child < 0) {
		close(fds[0]);
		close(fds[1]);
		close(exec_err[0]);
		close(exec_err[1]);
		return -1;
	}
	if (child == 0) {
		close(fds[0]);
		close(exec_err[0]);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		execvp(argv[0], argv);
		int e = errno;
		if (write(exec_err[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(127);
	}
	close(fds[1]);
	close(exec_err[1]);
	int e = 0;
	ssize_t got = read(exec_err[0], &e, sizeof e);
	close(exec_err[0]);
	if (got == (ssize_t)sizeof e) {
		close(fds[0]);
		waitpid(child, NULL, 0);
		errno = e;
		return -1;
	}
	size_t len = 0;
	int timed_out = 0;
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (elapsed >= timeout_ms) {
			timed_out = 1;
			break;
		}
		struct pollfd pfd = { fds[0], POLLIN, 0 };
		int pr = poll(&pfd, 1, (int)(timeout_ms - elapsed));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			timed_out = pr == 0;
			break;
		}
		char buf[512];
		ssize_t r = read(fds[0], buf, sizeof buf);
		if (r <= 0)
			break;
		size_t keep = (size_t)r;
		if (len + keep > n - 1)
			keep = n - 1 - len;
		memcpy(out + len, buf, keep);
		len += keep;
	}
	out[len] = '\0';
	close(fds[0]);
	if (timed_out)
		kill(child, SIGKILL);
	int status;
	if (waitpid(child, &status, 0) < 0)
		return -2;
	if (timed_out || !WIFEXITED(status))
		return -2;
	return WEXITSTATUS(status);
}

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

void bp_doctor_bpftrace(bp_check_result_t *r, int *usable)
{
	char *const argv[] = { (char *)"bpftrace", (char *)"--version", NULL };
	char out[1024], line[160], msg[512];
	r->name = "bpftrace";
	*usable = 0;
	int rc = bp_run_capture(argv, out, sizeof out, 5000);
	if (rc == -1) {
		set(r, BP_WARN, "not installed", "apt-get install bpftrace (0.17 or later reads USDT semaphores with -p PID)");
		return;
	}
	first_line(out, line, sizeof line);
	if (rc != 0) {
		snprintf(msg, sizeof msg, "`bpftrace --version` failed (%s): %s", rc == -2 ? "timeout or signal" : "non-zero exit", line);
		set(r, BP_WARN, msg, "reinstall bpftrace");
		return;
	}
	snprintf(msg, sizeof msg, "%s", line);
	*usable = 1;
	set(r, BP_OK, msg, NULL);
}

void bp_doctor_dtrace(bp_check_result_t *r, int *usable)
{
	char *const argv[] = { (char *)"dtrace", (char *)"-V", NULL };
	char out[1024], line[160], msg[512];
	r->name = "dtrace";
	*usable = 0;
	int rc = bp_run_capture(argv, out, sizeof out, 5000);
	if (rc == -1) {
		set(r, BP_WARN, "not installed (building with probes needs systemtap-sdt-dev's dtrace)",
		    "apt-get install systemtap-sdt-dev to build; trace with bpftrace");
		return;
	}
	first_line(out, line, sizeof line);
	/* A real DTrace answers -V with "dtrace: Sun D 1.x" (illumos, FreeBSD,
	 * macOS, Oracle's Linux port); systemtap's wrapper rejects -V. */
	if (rc == 0 && strstr(out, "Sun D") != NULL) {
		snprintf(msg, sizeof msg, "%s", line);
		*usable = 1;
		set(r, BP_OK, msg, NULL);
	} else {
		set(r, BP_OK, "systemtap's dtrace wrapper: builds probes (-h, -G), cannot trace (trace with bpftrace)", NULL);
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
	r->name = "optimized uprobes";
	if (uname(&u) != 0) {
		set(r, BP_WARN, "unknown: uname failed", NULL);
		return;
	}
	if (strcmp(u.machine, "x86_64") != 0) {
		snprintf(msg, sizeof msg, "not on %.40s: the 5-byte-nop optimization is x86-64 only; every probe hit traps", u.machine);
		set(r, BP_WARN, msg, NULL);
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
		         "only 5-byte-nop sites (-Dprobe_site=fast) benefit", u.release);
		set(r, BP_OK, msg, NULL);
	} else if (opt == 0 || sys == 0) {
		snprintf(msg, sizeof msg, "not available: kernel %.60s lacks arch_uprobe_optimize / sys_uprobe; every probe hit traps (int3)",
		         u.release);
		set(r, BP_WARN, msg, "a 6.18 or later x86-64 kernel optimizes uprobes on 5-byte nops");
	} else {
		snprintf(msg, sizeof msg, "unknown: /proc/kallsyms unreadable; kernel %.60s is %s 6.18, where x86-64 gained them",
		         u.release, (major > 6 || (major == 6 && minor >= 18)) ? "at or after" : "before");
		set(r, BP_WARN, msg, "run doctor as root to read /proc/kallsyms");
	}
}
