/*
 * driver.h -- run the load: libcurl's multi interface, one easy handle
 * (and so one kept-alive connection) per --concurrency slot.
 */
#ifndef BILLING_LOAD_DRIVER_H
#define BILLING_LOAD_DRIVER_H

#include "options.h"
#include "stats.h"

/* Drives billingd for opts->duration_s (or until *stop becomes non-zero),
 * then waits for the requests in flight.  Returns 0, or -1 after printing
 * why it could not start. */
int driver_run(const load_options_t *opts, stats_t *stats, volatile int *stop);

#endif /* BILLING_LOAD_DRIVER_H */
