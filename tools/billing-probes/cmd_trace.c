/*
 * cmd_trace.c -- `billing-probes trace SCRIPT (-p PID [-p PID...] |
 * --binary PATH [--binary PATH...] | -c 'CMD ARGS') [--dry-run]
 * [-- SCRIPT-ARGS]`: run a shipped bpftrace script on any billing
 * service, one process or several.
 *
 * bpftrace 0.17 resolves `usdt::billing:NAME` only with -p, fails when a
 * probe sits in two modules of the process ("Could not resolve symbol"),
 * and refuses a script naming a probe the process lacks.  So the launcher
 * reads which modules carry which probes (the probe reader), resolves the
 * script for them (trace_script.c) and runs bpftrace on the result.
 *
 * bpftrace runs with the resolved script (probes attached by path, kept
 * to the processes by a pid predicate: see trace_script.h) and is ended
 * with SIGINT, so it prints its END output, when the processes are gone.
 * Several -p are one service: their modules merged (one file once, by
 * inode), one predicate naming them all, one set of totals.  --binary
 * PATH attaches to the file with no predicate: every process running it,
 * now or later, until Ctrl-C; several --binary are one program whose
 * probes live in several files (trace_targets.c), each probe attached
 * where it lives.  Targets that carry none of the USDT probes the script
 * names are refused in one line: the program would print zeros for a
 * busy service.  For one process in our mount namespace
 * whose probes each sit in one module, bpftrace also gets -p PID and the
 * probes without a path (bpftrace 0.27 attaches a path-qualified probe
 * twice when given -p), so the kernel places breakpoints and raises
 * semaphores in that process only; otherwise (several processes, --binary,
 * two modules) the kernel raises them in every process mapping the file
 * (docs/tool.md).
 *
 * Which bpftrace: asked once (bpftrace_version.h); one outside the tested
 * versions is named in one line.  Nothing the script prints is shown
 * until bpftrace has said it attaches as many probes as the program asks
 * for (trace_output.h); another count is refused.
 *
 * For -c the launcher starts the command itself, stopped at its entry
 * point once the loader has mapped its libraries (start_stopped.c), reads
 * its modules like any PID, waits until bpftrace has raised the
 * semaphores of the probes it attaches to and printed its first line
 * (BEGIN), and lets the command run.  A
 * library opened later with dlopen() is not seen: trace such a service
 * with -p once it has loaded it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpftrace_version.h"
#include "cli.h"
#include "commands.h"
#include "start_stopped.h"
#include "term_text.h"
#include "text_buf.h"
#include "text_file.h"
#include "trace_run.h"
#include "trace_script.h"
#include "trace_targets.h"
#include "trusted_file.h"

#ifndef BP_DATADIR
#  define BP_DATADIR "/usr/local/share"
#endif
/* The environment variable that names a directory of scripts ahead of
 * the installed ones: a build tree's tests and `meson devenv` set it to
 * the source tree's d-scripts/bpftrace (meson.build), so the tool never
 * carries the paths of the machine that built it. */
#define BP_SCRIPTS_ENV "BILLING_PROBES_SCRIPTS"

/* The script to run, open: with a '/' in SCRIPT, the file the operator
 * names; a bare name (tps, tps.bt) only among the shipped scripts
 * ($BILLING_PROBES_SCRIPTS when set, else the installed share folder
 * beside the executable, then the configured one), never the current
 * directory, where anyone may have left a file of that name.  Either
 * way the file must pass bp_open_trusted() (trusted_file.h).  The
 * descriptor, with the path in out; -1 after the one error line. */
static int open_script(const char *script, char *out, size_t n)
{
	char why[PATH_MAX + 200];
	if (strchr(script, '/')) {
		int fd = bp_open_trusted(script, out, n, why, sizeof why);
		if (fd < 0)
			bp_error(script, why);
		return fd;
	}
	const char *dirs[3];
	size_t ndirs = 0;
	const char *env_dir = getenv(BP_SCRIPTS_ENV);
	if (env_dir && env_dir[0]) {
		/* a relative directory would depend on where root happens to stand */
		if (env_dir[0] != '/') {
			bp_error(BP_SCRIPTS_ENV, "must be an absolute directory (the shipped scripts of a source tree: "
			                         "SOURCE/d-scripts/bpftrace)");
			return -1;
		}
		dirs[ndirs++] = env_dir;
	}
	char exe[PATH_MAX] = "", exe_share[PATH_MAX + 64] = "";
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(exe_share, sizeof exe_share, "%s/../share/billing-probes/d-scripts/bpftrace", exe);
			dirs[ndirs++] = exe_share;
		}
	}
	dirs[ndirs++] = BP_DATADIR "/billing-probes/d-scripts/bpftrace";
	for (size_t d = 0; d < ndirs; d++) {
		static const char *const suffixes[] = { "", ".bt" };
		for (size_t k = 0; k < 2; k++) {
			char candidate[PATH_MAX + 128];
			struct stat st;
			snprintf(candidate, sizeof candidate, "%s/%s%s", dirs[d], script, suffixes[k]);
			if (stat(candidate, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			int fd = bp_open_trusted(candidate, out, n, why, sizeof why);
			if (fd < 0)
				bp_error(candidate, why);
			return fd;
		}
	}
	bp_error(script, "no such script (a name such as tps names a shipped script: looked in $" BP_SCRIPTS_ENV
	                 " when set and in share/billing-probes/d-scripts/bpftrace; a file of yours is named by "
	                 "a path, ./tps)");
	return -1;
}

/* The specs no module carries, each once however many clauses name it
 * ("\nspec\n" per spec, entries sharing their newlines): said only
 * once the resolution is known, since a script left with nothing to
 * attach to is refused in one line instead. */
typedef struct drop_ctx {
	pr_buf_t specs;
	size_t count;
} drop_ctx_t;

static void note_dropped(const char *spec, void *ctx)
{
	drop_ctx_t *d = ctx;
	char key[520];
	snprintf(key, sizeof key, "\n%s\n", spec);
	if (d->specs.data && strstr(d->specs.data, key))
		return;
	pr_buf_puts(&d->specs, d->count ? key + 1 : key);
	d->count++;
}

/* Call fn for each dropped spec, in the script's order. */
static void each_dropped(const drop_ctx_t *d, void (*fn)(const char *spec, size_t len, void *arg), void *arg)
{
	for (const char *p = d->specs.data ? d->specs.data + 1 : ""; *p;) {
		size_t len = strcspn(p, "\n");
		fn(p, len, arg);
		p += len + (p[len] == '\n');
	}
}

/* What a dropped line says, and where to look for a hint: with --binary,
 * the libraries the files load (a probe the program fires from one of
 * them is attached only when that library is given too). */
typedef struct drop_say {
	const char *where;
	const pr_probe_set_t *needed; /* NULL without --binary */
	pr_buf_t list;                /* refusal: the specs, ", " between */
	const pr_module_t *carrier;   /* refusal: a loaded library carrying one */
} drop_say_t;

static void say_dropped(const char *spec, size_t len, void *arg)
{
	drop_say_t *say = arg;
	const pr_module_t *lib = say->needed ? bp_trace_loaded_carrier(say->needed, spec, len) : NULL;
	fflush(stdout);
	pr_printf_escaped(stderr, "billing-probes: trace: dropped %.*s: no module of %s carries it", (int)len, spec,
	                  say->where);
	if (lib)
		pr_printf_escaped(stderr, " (%s, which %s loads, does: add --binary %s)", lib->path, lib->needed_by,
		                  lib->path);
	fputc('\n', stderr);
}

static void list_dropped(const char *spec, size_t len, void *arg)
{
	drop_say_t *say = arg;
	pr_buf_printf(&say->list, "%s%.*s", say->list.len ? ", " : "", (int)len, spec);
	if (!say->carrier && say->needed)
		say->carrier = bp_trace_loaded_carrier(say->needed, spec, len);
}

/* No module carries any USDT probe the script names: one line, refused
 * (the program would attach nothing and print zeros, as if the service
 * were idle, until stopped).  Returns 1 when refused. */
static int refuse_nothing_carried(const drop_ctx_t *dropped, const pr_probe_set_t *set, const unsigned char *used,
                                  drop_say_t *say)
{
	for (size_t i = 0; i < set->probe_count; i++)
		if (used[i] != BP_TRACE_UNUSED)
			return 0;
	if (!dropped->count)
		return 0; /* a script without USDT probes (cpu_profile...) */
	each_dropped(dropped, list_dropped, say);
	fflush(stdout);
	pr_printf_escaped(stderr, "billing-probes: trace: refused: no module of %s carries a probe the script names (%s): "
	                          "nothing to count",
	                  say->where, say->list.failed ? "..." : say->list.data);
	if (say->carrier)
		pr_printf_escaped(stderr, " (%s, which %s loads, carries some: add --binary %s)", say->carrier->path,
		                  say->carrier->needed_by, say->carrier->path);
	fputc('\n', stderr);
	return 1;
}

/* One of several -p carries no USDT probe while the script counts USDT
 * probes: nothing of that process would be counted, and the figures would
 * read as the whole service's.  A script without USDT probes (cpu_profile)
 * may name any process. */
static int refuse_bare_pid(int bare_pid, const drop_ctx_t *dropped, const pr_probe_set_t *set,
                           const unsigned char *used)
{
	int counts_usdt = dropped->count > 0;
	for (size_t i = 0; i < set->probe_count && !counts_usdt; i++)
		counts_usdt = used[i] != BP_TRACE_UNUSED;
	if (!bare_pid || !counts_usdt)
		return 0;
	char what[32];
	snprintf(what, sizeof what, "%d", bare_pid);
	bp_error(what, "no USDT probes in the executable or any mapped library: nothing of it would be counted");
	return 1;
}

/* Why a module's probes were left out of the program. */
static const char *left_out_reason(const pr_module_t *mod)
{
	return mod->attach_path ? "its path holds characters a bpftrace program cannot carry safely (only letters, "
	                          "digits and /._- are written into one)"
	                        : "no path from here reaches the file mapped (not in this mount namespace nor under "
	                          "/proc/PID/root)";
}

/* The probes the script names but the program leaves out (used[]:
 * BP_TRACE_LEFT_OUT): one line per module whose path cannot be written
 * into a program, one per probe whose name cannot.  When nothing else is
 * left to attach to, one line only, refusing: a program without the
 * probes asked for would print totals of 0 as if the service were idle.
 * Returns 1 when refused. */
static int report_left_out(const pr_probe_set_t *set, const unsigned char *used, const char *where)
{
	size_t attached = 0, modules = 0, first = (size_t)-1;
	for (size_t i = 0; i < set->probe_count; i++)
		attached += used[i] == BP_TRACE_ATTACHED;
	for (size_t m = 0; m < set->module_count; m++) {
		const pr_module_t *mod = &set->modules[m];
		int path_safe = bp_trace_path_is_safe(mod->attach_path), said = 0;
		for (size_t i = 0; i < set->probe_count && !said; i++) {
			const pr_probe_t *p = &set->probes[i];
			if (p->module != m || used[i] != BP_TRACE_LEFT_OUT)
				continue;
			int again = 0; /* one line per name, however many sites */
			for (size_t j = 0; j < i && !again; j++)
				again = set->probes[j].module == m && used[j] == BP_TRACE_LEFT_OUT &&
				        strcmp(set->probes[j].name, p->name) == 0;
			if (again)
				continue;
			if (first == (size_t)-1)
				first = m;
			said = !path_safe;
			if (!attached) {
				modules++;
				break;
			}
			fflush(stdout);
			if (path_safe)
				pr_printf_escaped(stderr, "billing-probes: trace: left out probe %s:%s of %s: its name holds "
				                          "characters a bpftrace program cannot carry safely (only letters, digits and _)",
				                  p->provider, p->name, mod->path);
			else
				pr_printf_escaped(stderr, "billing-probes: trace: left out %s: %s", mod->path, left_out_reason(mod));
			fputc('\n', stderr);
		}
	}
	if (attached || first == (size_t)-1)
		return 0;
	const pr_module_t *mod = &set->modules[first];
	fflush(stdout);
	if (bp_trace_path_is_safe(mod->attach_path))
		pr_printf_escaped(stderr, "billing-probes: trace: refused: the probes of %s that the script names have names "
		                          "a bpftrace program cannot carry safely (only letters, digits and _), and no other "
		                          "module of %s carries them",
		                  mod->path, where);
	else
		pr_printf_escaped(stderr, "billing-probes: trace: refused: %s carries the probes the script names, but %s%s",
		                  mod->path, left_out_reason(mod),
		                  modules > 1 ? " (so do the other modules that carry them)" : "");
	fputc('\n', stderr);
	return 1;
}

/* May bpftrace attach with -p PID (breakpoints and semaphores in that one
 * process only)?  bpftrace 0.17 then fails on a probe that sits in two
 * modules of the process, and looks files up in the process's mount
 * namespace itself: so only for one process, in our namespace, whose
 * used probes sit in one module each (a module left out included: the
 * probes are then written without a path, and bpftrace finds them in
 * every module). */
static int can_use_bpftrace_pid(const pr_probe_set_t *set, const unsigned char *used)
{
	for (size_t i = 0; i < set->probe_count; i++) {
		if (used[i] != BP_TRACE_ATTACHED)
			continue;
		const pr_module_t *mod = &set->modules[set->probes[i].module];
		if (!mod->attach_path || strcmp(mod->attach_path, mod->path) != 0)
			return 0;
		for (size_t j = 0; j < set->probe_count; j++)
			if (used[j] != BP_TRACE_UNUSED && set->probes[j].module != set->probes[i].module &&
			    strcmp(set->probes[j].provider, set->probes[i].provider) == 0 &&
			    strcmp(set->probes[j].name, set->probes[i].name) == 0)
				return 0;
	}
	return 1;
}

/* A command started stopped and not handed to bp_trace_run: killed. */
static void kill_stopped(pid_t command)
{
	if (command > 0) {
		kill(command, SIGKILL);
		waitpid(command, NULL, 0);
	}
}

int bp_cmd_trace(const bp_options_t *opt)
{
	char script[PATH_MAX + 128], err[512], bpftrace[PATH_MAX], why[PATH_MAX + 700];
	/* bpftrace runs as root with the program below: only a file root
	 * (or the user running trace) controls (trusted_file.h) */
	if (!opt->dry_run && bp_find_program("bpftrace", "BPFTRACE", bpftrace, sizeof bpftrace, why, sizeof why) != 0) {
		bp_error("trace: bpftrace", why);
		return BP_EXIT_ERROR;
	}
	/* what this bpftrace counts and warns of; a version the scripts are
	 * not tested on is said in one line, its attachment still checked */
	bp_bpftrace_version_t version = { 0 };
	if (!opt->dry_run && bp_bpftrace_version(bpftrace, &version, why, sizeof why) != 0) {
		bp_error("trace: bpftrace", why);
		return BP_EXIT_ERROR;
	}
	if (!opt->dry_run && !bp_bpftrace_tested(&version)) {
		pr_printf_escaped(stderr,
		                  "billing-probes: trace: bpftrace %s is untested (tested: " BP_BPFTRACE_TESTED
		                  "): how many probes it attaches is checked, its figures are not",
		                  version.text);
		fputc('\n', stderr);
	}
	int script_fd = open_script(opt->script, script, sizeof script);
	if (script_fd < 0)
		return BP_EXIT_ERROR;
	size_t len;
	char *text = pr_read_text_fd(script_fd, 16u << 20, &len);
	if (!text) {
		bp_error(script, errno == EACCES ? "permission denied" : strerror(errno));
		return BP_EXIT_ERROR;
	}

	/* From here one way out: everything below is freed at "out". */
	int rc = BP_EXIT_ERROR, released = 0;
	drop_ctx_t dropped = { { 0 }, 0 };
	drop_say_t say;
	pr_probe_set_t set, needed;
	memset(&say, 0, sizeof say);
	memset(&needed, 0, sizeof needed);
	memset(&set, 0, sizeof set);
	int *pids = NULL;
	unsigned long long *starts = NULL;
	unsigned char *used = NULL;
	char *resolved = NULL, **argv = NULL;
	char where[PATH_MAX + 32], pid_text[32];
	pid_t command = -1;
	if (opt->command_line) {
		command = bp_start_stopped(opt->command_line, err, sizeof err);
		int st;
		if (command < 0 || waitpid(command, &st, WUNTRACED) != command || !WIFSTOPPED(st)) {
			bp_error(opt->command_line, command < 0 ? err : "did not stop at its entry point");
			goto out;
		}
		snprintf(pid_text, sizeof pid_text, "%d", (int)command);
		snprintf(where, sizeof where, "'%.200s'", opt->command_line);
	} else if (opt->binary_count) {
		snprintf(where, sizeof where, "%.4000s%s", opt->binaries[0],
		         opt->binary_count > 1 ? " or the other --binary paths" : "");
	} else {
		snprintf(where, sizeof where, "PID %.20s%s", opt->targets[0],
		         opt->target_count > 1 ? " or the other PIDs" : "");
	}
	size_t npids = 0;
	int bare_pid = 0;
	if (!(pids = calloc((size_t)opt->target_count + 1, sizeof *pids)) ||
	    !(starts = calloc((size_t)opt->target_count + 1, sizeof *starts))) {
		bp_error("trace", "out of memory");
		goto out;
	}
	if (bp_trace_load_targets(opt, opt->command_line ? pid_text : NULL, &set, pids, &npids, &bare_pid) != 0)
		goto out;
	/* each process as the kernel knows it now: its PID and start time */
	for (size_t i = 0; i < npids; i++)
		starts[i] = pr_process_start_time((pid_t)pids[i]);
	if (!(used = calloc(set.probe_count + 1, 1))) {
		bp_error("trace", "out of memory");
		goto out;
	}

	bp_trace_target_t target = { &set, pids, npids, 0, note_dropped, &dropped };
	bp_trace_counts_t counts;
	resolved = bp_trace_resolve(text, len, &target, used, &counts, err, sizeof err);
	/* bpftrace -p: the USDT probes written without a path (0.27 attaches
	 * a path-qualified one twice when also given -p); not for a program
	 * with other kinds of probe, whose actions 0.27's -p would filter */
	target.by_pid = resolved && npids == 1 && !counts.other_kinds && can_use_bpftrace_pid(&set, used);
	if (target.by_pid) {
		free(resolved);
		target.dropped = NULL; /* each said once, above */
		resolved = bp_trace_resolve(text, len, &target, used, &counts, err, sizeof err);
	}
	if (!resolved) {
		bp_error(script, err);
		goto out;
	}
	/* --binary: the libraries the files load, for a hint in the lines
	 * below (not found or unreadable ones simply give none) */
	if (opt->binary_count && dropped.count && pr_probe_set_load_needed(&set, 1, &needed, err, sizeof err) != 0)
		pr_probe_set_free(&needed);
	say.where = where;
	say.needed = opt->binary_count ? &needed : NULL;
	if (refuse_nothing_carried(&dropped, &set, used, &say) || report_left_out(&set, used, where) ||
	    refuse_bare_pid(bare_pid, &dropped, &set, used))
		goto out;
	each_dropped(&dropped, say_dropped, &say);
	if (opt->dry_run) {
		if (target.by_pid)
			printf("/* billing-probes trace: for bpftrace -p %d, which finds these probes in the process */\n",
			       pids[0]);
		fputs(resolved, stdout);
		rc = BP_EXIT_OK;
		goto out;
	}

	/* bpftrace [-p PID] [--no-warnings] -e PROGRAM [ARGS...]: the probes
	 * attached by path, kept to the processes by the predicate; with -p,
	 * the kernel also places breakpoints and raises semaphores in that
	 * process only.  --no-warnings: a shipped script under bpftrace 0.24's
	 * type checker (bpftrace_version.h). */
	size_t argc = 0;
	char one_pid[32];
	if (!(argv = calloc(7 + (size_t)opt->script_arg_count + 1, sizeof *argv))) {
		bp_error("trace", "out of memory");
		goto out;
	}
	argv[argc++] = bpftrace;
	if (target.by_pid) {
		snprintf(one_pid, sizeof one_pid, "%d", pids[0]);
		argv[argc++] = (char *)"-p";
		argv[argc++] = one_pid;
	}
	if (!strchr(opt->script, '/') && bp_bpftrace_warns_of_types(&version))
		argv[argc++] = (char *)"--no-warnings";
	argv[argc++] = (char *)"-e";
	argv[argc++] = resolved;
	for (int i = 0; i < opt->script_arg_count; i++)
		argv[argc++] = opt->script_args[i];
	argv[argc] = NULL;
	fflush(stdout);
	/* the probes bpftrace must say it attaches (0: a glob, not checked) */
	size_t want = counts.unknown ? 0 : bp_bpftrace_counts_sites(&version) ? counts.sites
	                                                                      : counts.specs;
	bp_trace_run_t run = { argv, want, &version, pids, starts, npids, command, &set, used };
	rc = bp_trace_run(&run, &released);

out:
	if (!released)
		kill_stopped(command);
	free(text);
	free(argv);
	free(used);
	free(pids);
	free(starts);
	pr_probe_set_free(&set);
	free(resolved);
	free(dropped.specs.data);
	free(say.list.data);
	pr_probe_set_free(&needed);
	return rc;
}
