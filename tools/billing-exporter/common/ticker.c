/*
 * ticker.c -- see ticker.h.
 */
#include "ticker.h"

#include <time.h>

double bx_seconds(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void bx_ticker_init(bx_ticker_t *t)
{
	pthread_condattr_t monotonic;
	pthread_condattr_init(&monotonic);
	pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC); /* a clock step is no wake-up */
	pthread_cond_init(&t->wake, &monotonic);
	pthread_condattr_destroy(&monotonic);
	pthread_mutex_init(&t->lock, NULL);
	t->stopped = 0;
}

int bx_ticker_wait(bx_ticker_t *t, unsigned ms)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&t->lock);
	while (!t->stopped && pthread_cond_timedwait(&t->wake, &t->lock, &until) == 0)
		; /* woken without a stop: sleep on to the deadline */
	int stopped = t->stopped;
	pthread_mutex_unlock(&t->lock);
	return stopped;
}

void bx_ticker_stop(bx_ticker_t *t)
{
	pthread_mutex_lock(&t->lock);
	t->stopped = 1;
	pthread_cond_broadcast(&t->wake);
	pthread_mutex_unlock(&t->lock);
}

void bx_ticker_destroy(bx_ticker_t *t)
{
	pthread_cond_destroy(&t->wake);
	pthread_mutex_destroy(&t->lock);
}
