/*
 * server.h -- billingd's HTTP side: libmicrohttpd with a thread pool, the
 * route table, and a drain that lets in-flight requests finish.
 */
#ifndef BILLINGD_SERVER_H
#define BILLINGD_SERVER_H

#include <stdint.h>

#include "options.h"

/* Largest request body billingd reads; a larger one is answered 413. */
#define BILLINGD_MAX_BODY 16384

/* Starts listening.  Returns the bound port, or 0 after printing why not. */
unsigned int server_start(const billingd_options_t *opts);

/* Stops taking connections (from now on a new one is closed at once) and
 * asks kept-alive clients to close. */
void server_refuse_new(void);

/* Waits up to timeout_ms for requests being served to finish.  Returns how
 * many were still running when it gave up (0: all finished). */
unsigned int server_drain(unsigned int timeout_ms);

/* Stops the worker threads; afterwards no handler runs. */
void server_stop(void);

/* Requests answered since start. */
uint64_t server_requests_answered(void);

#endif /* BILLINGD_SERVER_H */
