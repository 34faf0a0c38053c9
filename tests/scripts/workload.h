/*
 * workload.h -- what the parts of scripts-workload share: workload.c (main,
 * options, the business, race and tps modes), workload_requests.c (the
 * requests, long, bounds, burst, overlap and simultaneous modes) and
 * workload_system.c (the system and park modes and the CPU spinners).  The
 * modes are described in workload.c.
 */
#ifndef SCRIPTS_WORKLOAD_H
#define SCRIPTS_WORKLOAD_H

#include <stdint.h>

#define MS 1000000ULL

/* Every ID the workload fires is above 2^32, so a script that prints one
 * through a 32-bit conversion shows the wrong number (expected.py holds
 * the same bases).  Transaction and invoice IDs are above 2^63 too: a
 * signed 64-bit conversion prints them negative. */
#define ID_BASE 0x10000000000ULL          /* 2^40: requests, payments, refunds */
#define BIG_ID_BASE 0x8000000000000000ULL /* 2^63: transactions, invoices */

void sleep_ns(uint64_t ns);
uint64_t monotonic_ns(void);

int run_requests(void);
void run_long(void);
void run_bounds(void);
void run_burst(void);
void begin_before_tracing(void);
void run_begun(void);
void run_overlap(void);
int run_simultaneous(void);
int run_system(const char *path);
int run_park(void);
int wait_for_go(void);
int keep_cpus_busy(void);

#endif
