/*
 * start_stopped.c -- run a command up to its entry point, then stop it.
 *
 * bpftrace 0.17's -c resolves USDT probes in the command's libraries
 * before the loader has mapped them: "Could not resolve symbol", or
 * arguments read wrong.  So trace starts the command itself under ptrace,
 * puts a breakpoint on the ELF entry point (AT_ENTRY from
 * /proc/PID/auxv), lets the loader map and initialise the libraries, and
 * at the breakpoint restores the instruction and detaches with SIGSTOP.
 * The stopped process has its final modules mapped; bpftrace then
 * attaches with -p and the launcher sends SIGCONT.  x86-64 only (the
 * breakpoint and the program counter); elsewhere -c is refused.
 */
#include "start_stopped.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__) && defined(__x86_64__)
#  include <elf.h>
#  include <sys/ptrace.h>
#  include <sys/user.h>
#  include <sys/wait.h>

static unsigned long entry_point(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/auxv", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Elf64_auxv_t aux;
	unsigned long entry = 0;
	while (read(fd, &aux, sizeof aux) == (ssize_t)sizeof aux && aux.a_type != AT_NULL)
		if (aux.a_type == AT_ENTRY)
			entry = aux.a_un.a_val;
	close(fd);
	return entry;
}

/* Wait for the next stop with SIGTRAP, passing other signals on.
 * 0 stopped, -1 it exited. */
static int wait_trap(pid_t pid)
{
	for (;;) {
		int st;
		if (waitpid(pid, &st, 0) < 0)
			return -1;
		if (!WIFSTOPPED(st))
			return -1;
		if (WSTOPSIG(st) == SIGTRAP)
			return 0;
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)WSTOPSIG(st));
	}
}

pid_t bp_start_stopped(const char *command_line, char *err, size_t errlen)
{
	char *copy = strdup(command_line);
	char **argv = calloc(strlen(command_line) / 2 + 2, sizeof *argv);
	if (!copy || !argv) {
		free(copy);
		free(argv);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	size_t argc = 0;
	for (char *w = strtok(copy, " \t"); w; w = strtok(NULL, " \t"))
		argv[argc++] = w;
	if (argc == 0) {
		free(copy);
		free(argv);
		snprintf(err, errlen, "an empty command");
		return -1;
	}
	int exec_err[2];
	if (pipe(exec_err) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		free(copy);
		free(argv);
		return -1;
	}
	fcntl(exec_err[1], F_SETFD, FD_CLOEXEC);
	pid_t pid = fork();
	if (pid == 0) {
		close(exec_err[0]);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvp(argv[0], argv);
		int e = errno;
		if (write(exec_err[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(127);
	}
	close(exec_err[1]);
	free(copy);
	free(argv);
	if (pid < 0) {
		close(exec_err[0]);
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	int failed = 0;
	if (wait_trap(pid) != 0) {
		/* exec failed: the child wrote errno and exited */
		int e = 0;
		if (read(exec_err[0], &e, sizeof e) == (ssize_t)sizeof e)
			snprintf(err, errlen, "cannot run it: %s", strerror(e));
		else
			snprintf(err, errlen, "it exited before its entry point");
		close(exec_err[0]);
		waitpid(pid, NULL, WNOHANG);
		return -1;
	}
	close(exec_err[0]);
	unsigned long entry = entry_point(pid);
	errno = 0;
	long word = entry ? ptrace(PTRACE_PEEKTEXT, pid, (void *)entry, NULL) : -1;
	if (!entry || errno != 0 ||
	    ptrace(PTRACE_POKETEXT, pid, (void *)entry, (void *)((word & ~0xffL) | 0xcc)) != 0 ||
	    ptrace(PTRACE_CONT, pid, NULL, NULL) != 0 || wait_trap(pid) != 0) {
		failed = 1;
	} else {
		struct user_regs_struct regs;
		failed = ptrace(PTRACE_GETREGS, pid, NULL, &regs) != 0 || regs.rip != entry + 1;
		if (!failed) {
			regs.rip = entry;
			failed = ptrace(PTRACE_POKETEXT, pid, (void *)entry, (void *)word) != 0 ||
			         ptrace(PTRACE_SETREGS, pid, NULL, &regs) != 0 ||
			         ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)SIGSTOP) != 0;
		}
	}
	if (failed) {
		snprintf(err, errlen, "cannot stop it at its entry point (ptrace: %s)", strerror(errno ? errno : EIO));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

#else

pid_t bp_start_stopped(const char *command_line, char *err, size_t errlen)
{
	(void)command_line;
	snprintf(err, errlen, "trace -c is x86-64 Linux only here: start the program and use -p PID");
	return -1;
}

#endif
