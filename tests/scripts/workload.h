/*
 * workload.h -- what the parts of scripts-workload share: workload.c (main,
 * options, the business, race and tps modes), workload_requests.c (the
 * requests, bounds and burst modes) and workload_system.c (the system mode
 * and the CPU spinners).  The modes are described in workload.c.
 */
#ifndef SCRIPTS_WORKLOAD_H
#define SCRIPTS_WORKLOAD_H

#include <stdint.h>

#define MS 1000000ULL

void sleep_ns(uint64_t ns);
uint64_t monotonic_ns(void);

int run_requests(void);
void run_bounds(void);
void run_burst(void);
int run_system(const char *path);
int keep_cpus_busy(void);

#endif
