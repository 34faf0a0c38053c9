/*
 * slow_listen_removal.c -- an LD_PRELOAD library for billingd-shutdown.
 *
 * epoll_ctl(EPOLL_CTL_DEL) of a listening socket, called from a process's
 * main thread, waits 20 ms before it is carried out.  A shutdown that has
 * the main thread take the listening socket out of the workers' epoll
 * sets while the workers may do it themselves (MHD_quiesce_daemon() on a
 * thread pool) then loses that race whenever a worker is busy, instead of
 * once in hundreds of runs on a loaded machine; a shutdown that leaves the
 * listening socket to libmicrohttpd's own threads is not affected.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int (*epoll_ctl_fn)(int, int, int, struct epoll_event *);

static int listening(int fd)
{
	int on = 0;
	socklen_t len = sizeof on;
	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on;
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	static epoll_ctl_fn real;
	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "epoll_ctl");
	if (op == EPOLL_CTL_DEL && syscall(SYS_gettid) == getpid() && listening(fd))
		nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
	return real(epfd, op, fd, event);
}
