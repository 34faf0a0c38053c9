/*
 * ticker.h -- the exporter's clocks: a clock read as seconds, and a
 * background thread's periodic wake-up that another thread can end at
 * once.  The flag and the sleep share a mutex, so the stop is seen (a
 * plain or volatile int is a data race) and needs no waiting out.
 */
#ifndef BX_TICKER_H
#define BX_TICKER_H

#include <pthread.h>
#include <time.h>

/* clock (CLOCK_MONOTONIC, CLOCK_REALTIME) in seconds. */
double bx_seconds(clockid_t clock);

typedef struct bx_ticker {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stopped;
} bx_ticker_t;

void bx_ticker_init(bx_ticker_t *t);
/* Sleep for ms milliseconds, or until bx_ticker_stop(): 1 when stopped. */
int bx_ticker_wait(bx_ticker_t *t, unsigned ms);
void bx_ticker_stop(bx_ticker_t *t);
void bx_ticker_destroy(bx_ticker_t *t);

#endif
