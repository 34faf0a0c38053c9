/*
 * host_checks.c -- can this host trace USDT probes: kernel, kernel
 * configuration, tracefs, privileges (capabilities) and the
 * perf_event_paranoid sysctl.
 *
 * Every check reads something real and says where it looked.  What
 * cannot be known is a WARN with the reason, never a guessed OK.  Each
 * fix is written beside the check that finds the fault.
 */
#include "host_checks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "kconfig.h"
#include "proc_status.h"

#define TRACEFS_MAGIC_NUMBER 0x74726163
#define DEBUGFS_MAGIC_NUMBER 0x64626720

int bp_doctor_uname(bp_check_result_t *r, const char *name, struct utsname *u)
{
	char msg[160];
	r->name = name;
	if (uname(u) == 0)
		return 0;
	snprintf(msg, sizeof msg, "unknown: uname failed: %s", strerror(errno));
	bp_result_set(r, BP_WARN, msg, NULL);
	return -1;
}

void bp_doctor_kernel(bp_check_result_t *r)
{
	struct utsname u;
	char msg[512];
	if (bp_doctor_uname(r, "kernel", &u) != 0)
		return;
	snprintf(msg, sizeof msg, "Linux %.100s on %.40s", u.release, u.machine);
	bp_result_set(r, BP_OK, msg, NULL);
}

/* Check that every option is y (or m where allowed); list what is not. */
static void check_options(bp_check_result_t *r, const char *const *options, size_t count, const char *fix)
{
	kconfig_t k;
	if (bp_kconfig_load(&k) != 0) {
		bp_result_set(r, BP_WARN, bp_kconfig_missing_text(), "install the kernel's config, or load the configs module for /proc/config.gz");
		return;
	}
	char msg[512], missing[256] = "";
	size_t used = 0;
	for (size_t i = 0; i < count; i++) {
		if (bp_kconfig_value(&k, options[i]) == 'n')
			used += (size_t)snprintf(missing + used, used < sizeof missing ? sizeof missing - used : 0,
			                         "%s%s", used ? ", " : "", options[i]);
	}
	if (used == 0) {
		used = 0;
		for (size_t i = 0; i < count && used < sizeof msg; i++)
			used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s=%c", i ? " " : "", options[i],
			                         bp_kconfig_value(&k, options[i]));
		if (used < sizeof msg)
			snprintf(msg + used, sizeof msg - used, " (%s)", k.source);
		bp_result_set(r, BP_OK, msg, NULL);
	} else {
		snprintf(msg, sizeof msg, "not set in %s: %s", k.source, missing);
		bp_result_set(r, BP_FAIL, msg, fix);
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
			bp_result_set(r, BP_OK, "mounted at /sys/kernel/tracing", NULL);
		} else {
			bp_result_set(r, BP_FAIL, "mounted at /sys/kernel/tracing but has no uprobe_events: kernel without CONFIG_UPROBE_EVENTS",
			              "run a kernel with CONFIG_UPROBE_EVENTS=y");
		}
		return;
	}
	if (statfs("/sys/kernel/debug/tracing", &sf) == 0 && (unsigned long)sf.f_type == TRACEFS_MAGIC_NUMBER) {
		bp_result_set(r, BP_WARN, "mounted only at /sys/kernel/debug/tracing (older tools look there, bpftrace wants /sys/kernel/tracing)",
		              "mount -t tracefs nodev /sys/kernel/tracing");
		return;
	}
	snprintf(msg, sizeof msg, "not mounted at /sys/kernel/tracing%s",
	         statfs("/sys/kernel/debug", &sf) == 0 && (unsigned long)sf.f_type == DEBUGFS_MAGIC_NUMBER
	             ? ""
	             : " (nor debugfs at /sys/kernel/debug)");
	bp_result_set(r, BP_FAIL, msg,
	              "as root: mount -t tracefs nodev /sys/kernel/tracing (and add it to /etc/fstab: tracefs /sys/kernel/tracing tracefs defaults 0 0)");
}

/* --- privileges ------------------------------------------------------------ */

enum { CAP_SYS_ADMIN_BIT = 21,
       CAP_PERFMON_BIT = 38,
       CAP_BPF_BIT = 39 };

void bp_doctor_privileges(bp_check_result_t *r)
{
	unsigned long long caps = bp_proc_status_mask(0, "CapEff");
	int sys_admin = (caps >> CAP_SYS_ADMIN_BIT) & 1;
	int bpf = (caps >> CAP_BPF_BIT) & 1, perfmon = (caps >> CAP_PERFMON_BIT) & 1;
	char msg[512];
	r->name = "privileges";
	if (geteuid() == 0 && sys_admin) {
		bp_result_set(r, BP_OK, "root with CAP_SYS_ADMIN", NULL);
	} else if (sys_admin || (bpf && perfmon)) {
		snprintf(msg, sizeof msg, "uid %u with %s", (unsigned)geteuid(),
		         sys_admin ? "CAP_SYS_ADMIN" : "CAP_BPF and CAP_PERFMON");
		bp_result_set(r, BP_OK, msg, NULL);
	} else {
		snprintf(msg, sizeof msg, "uid %u without CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN (CapEff %llx)",
		         (unsigned)geteuid(), caps);
		bp_result_set(r, BP_FAIL, msg,
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
		bp_result_set(r, BP_WARN, "cannot read /proc/sys/kernel/perf_event_paranoid", NULL);
		return;
	}
	fclose(f);
	unsigned long long caps = bp_proc_status_mask(0, "CapEff");
	int privileged = ((caps >> CAP_SYS_ADMIN_BIT) & 1) || ((caps >> CAP_PERFMON_BIT) & 1);
	if (privileged || level <= 2) {
		snprintf(msg, sizeof msg, "kernel.perf_event_paranoid = %d%s", level,
		         privileged ? " (does not limit CAP_PERFMON / CAP_SYS_ADMIN)" : "");
		bp_result_set(r, BP_OK, msg, NULL);
	} else {
		snprintf(msg, sizeof msg, "kernel.perf_event_paranoid = %d: unprivileged perf events are off", level);
		bp_result_set(r, BP_WARN, msg, "trace with CAP_PERFMON or as root, or: sysctl kernel.perf_event_paranoid=2");
	}
}
