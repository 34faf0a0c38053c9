/*
 * runner.c -- run a program with a time limit and capture what it says:
 * fork, exec, poll the pipe, kill it at the deadline.
 */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
