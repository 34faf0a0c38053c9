/*
 * request_deadline.c -- close connections that do not deliver a whole
 * request in time.
 *
 * libmicrohttpd's connection timeout counts idle time only, so a client
 * that sends one byte a second keeps its connection slot for ever: a
 * thousand of them fill the connection limit and honest clients time out.
 * (A byte a second of body does the same.)  Here every connection is
 * tracked from accept; server.c marks it answering once a whole request is
 * in and waiting again when the reply is done.  A reaper thread shuts
 * down the socket of a connection that has waited longer than the
 * deadline -- one second once most of the limit is in use, so a reserve of
 * slots stays free for clients that send a request at once -- and
 * libmicrohttpd then closes it as a client that went away.
 *
 * The socket is shut down, never closed, and only while its connection is
 * tracked under the lock.  libmicrohttpd reports a connection closed
 * before it closes the descriptor, so the number cannot have been reused.
 */
#include "request_deadline.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#define REAP_EVERY_MS 100
#define PRESSURE_DEADLINE_MS 1000

typedef struct tracked {
	struct tracked *prev, *next;
	int fd;
	uint64_t waiting_since_ms; /* 0: a request is being handled */
	int shut;                  /* shut down already; await libmicrohttpd */
} tracked_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tracked_t ring = { &ring, &ring, -1, 0, 0 }; /* list head */
static unsigned int open_count;
static uint64_t deadline_ms;
static unsigned int pressure_at;
static pthread_t reaper;
static int reaper_running;
static atomic_int stopping;
static atomic_uint_fast64_t closed_count;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void reap(void)
{
	tracked_t *t;
	uint64_t now = now_ms(), limit;

	pthread_mutex_lock(&lock);
	limit = open_count >= pressure_at ? PRESSURE_DEADLINE_MS : deadline_ms;
	for (t = ring.next; t != &ring; t = t->next) {
		if (t->shut || t->waiting_since_ms == 0 || now - t->waiting_since_ms <= limit)
			continue;
		shutdown(t->fd, SHUT_RDWR);
		t->shut = 1;
		atomic_fetch_add_explicit(&closed_count, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&lock);
}

static void *reaper_main(void *arg)
{
	struct timespec tick = { 0, REAP_EVERY_MS * 1000 * 1000 };
	(void)arg;
	while (!atomic_load(&stopping)) {
		nanosleep(&tick, NULL);
		reap();
	}
	return NULL;
}

int request_deadline_start(unsigned int timeout_s, unsigned int max_connections)
{
	deadline_ms = (uint64_t)timeout_s * 1000u;
	pressure_at = max_connections - max_connections / 4;
	atomic_store(&stopping, 0);
	if (pthread_create(&reaper, NULL, reaper_main, NULL) != 0)
		return -1;
	reaper_running = 1;
	return 0;
}

void request_deadline_stop(void)
{
	if (!reaper_running)
		return;
	atomic_store(&stopping, 1);
	pthread_join(reaper, NULL);
	reaper_running = 0;
}

void request_deadline_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                             enum MHD_ConnectionNotificationCode code)
{
	tracked_t *t;
	const union MHD_ConnectionInfo *info;
	(void)cls;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		t = calloc(1, sizeof(*t));
		if (t == NULL || info == NULL) {
			free(t); /* untracked: only libmicrohttpd's idle timeout applies */
			return;
		}
		t->fd = info->connect_fd;
		t->waiting_since_ms = now_ms();
		pthread_mutex_lock(&lock);
		t->prev = ring.prev;
		t->next = &ring;
		ring.prev->next = t;
		ring.prev = t;
		open_count++;
		pthread_mutex_unlock(&lock);
		*socket_context = t;
		return;
	}
	t = *socket_context;
	if (t == NULL)
		return;
	pthread_mutex_lock(&lock);
	t->prev->next = t->next;
	t->next->prev = t->prev;
	open_count--;
	pthread_mutex_unlock(&lock);
	*socket_context = NULL;
	free(t);
}

/* 0, or -1 when the reaper has shut the connection down already. */
static int set_waiting(struct MHD_Connection *conn, uint64_t since)
{
	const union MHD_ConnectionInfo *info =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	tracked_t *t = info != NULL ? info->socket_context : NULL;
	int shut;
	if (t == NULL)
		return 0;
	pthread_mutex_lock(&lock);
	shut = t->shut;
	if (!shut)
		t->waiting_since_ms = since;
	pthread_mutex_unlock(&lock);
	return shut ? -1 : 0;
}

int request_deadline_answering(struct MHD_Connection *conn)
{
	return set_waiting(conn, 0);
}

void request_deadline_waiting(struct MHD_Connection *conn)
{
	(void)set_waiting(conn, now_ms());
}

uint64_t request_deadline_closed(void)
{
	return (uint64_t)atomic_load(&closed_count);
}
