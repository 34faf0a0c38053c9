/*
 * pid_cycler.c -- what any local user can do to be given a PID he wants:
 * fork children that exit at once until one is given TARGET, which then
 * runs PROGRAM.  No privilege: PIDs are handed out in order and wrap at
 * pid_max.  The security tests run it as the attacker against
 * `billing-probes trace -p` (docs/security.md).
 *
 *   pid_cycler TARGET MAX_FORKS PROGRAM [ARG...]
 *
 * Exit 0 once the child that was given TARGET has run PROGRAM and ended
 * with status 0; 3 when MAX_FORKS forks never reached TARGET (it stays
 * taken, or PIDs are handed out elsewhere); 1 on an error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static long number(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	long target, max_forks, n;
	int status;

	if (argc < 4 || (target = number(argv[1])) < 0 || (max_forks = number(argv[2])) < 0) {
		fprintf(stderr, "usage: pid_cycler TARGET MAX_FORKS PROGRAM [ARG...]\n");
		return 1;
	}
	for (n = 0; n < max_forks; n++) {
		pid_t child = fork();

		if (child < 0) {
			fprintf(stderr, "pid_cycler: fork: %s\n", strerror(errno));
			return 1;
		}
		if (child == 0) {
			if (getpid() != (pid_t)target)
				_exit(0);
			execv(argv[3], argv + 3);
			_exit(127);
		}
		if (waitpid(child, &status, 0) < 0) {
			fprintf(stderr, "pid_cycler: waitpid: %s\n", strerror(errno));
			return 1;
		}
		if (child == (pid_t)target) {
			printf("pid_cycler: PID %ld after %ld forks, exit status %d\n", target, n + 1,
			       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
		}
	}
	printf("pid_cycler: PID %ld not reached in %ld forks\n", target, max_forks);
	return 3;
}
