/*
 * slow_reaper.c -- an LD_PRELOAD library for billingd-unheard.
 *
 * shutdown(fd, SHUT_RDWR) -- billingd's request deadline shutting a
 * connection down (request_deadline.c; libmicrohttpd itself shuts a socket
 * for writing only) -- first appends "FD\n" to the file
 * BILLINGD_TEST_SHUTDOWN_LOG names, then waits 500 ms before it is carried
 * out.  A test that sees the line sends a whole request on that
 * connection while the reaper is deciding: the request comes in as its
 * connection is being shut down, every run, instead of once in thousands
 * of requests on a loaded machine.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef int (*shutdown_fn)(int, int);

int shutdown(int fd, int how)
{
	static shutdown_fn real;
	const char *log = getenv("BILLINGD_TEST_SHUTDOWN_LOG");
	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "shutdown");
	if (how == SHUT_RDWR && log != NULL) {
		char line[32];
		int n = snprintf(line, sizeof line, "%d\n", fd);
		int out = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (out >= 0) {
			if (write(out, line, (size_t)n) != n) {
				/* the test then waits in vain and says so */
			}
			close(out);
		}
		nanosleep(&(struct timespec){ 0, 500 * 1000 * 1000 }, NULL);
	}
	return real(fd, how);
}
