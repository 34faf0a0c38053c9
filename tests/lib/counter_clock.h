/*
 * counter_clock.h -- whether this machine's kernel trusts the time-stamp
 * counter (constant_tsc and nonstop_tsc in /proc/cpuinfo, clocksource
 * tsc), read apart from lib/span_clock.c: where it does, the timing helpers'
 * spans must be timed by it (their start marks have the top bit set).
 */
#ifndef BILLING_TEST_COUNTER_CLOCK_H
#define BILLING_TEST_COUNTER_CLOCK_H

#include <stdio.h>
#include <string.h>

static inline int counter_clock_trusted(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	char line[8192], source[64] = "";
	int constant = 0, nonstop = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof line, f)) {
		if (strncmp(line, "flags", 5) == 0) {
			constant = strstr(line, " constant_tsc") != NULL;
			nonstop = strstr(line, " nonstop_tsc") != NULL;
			break;
		}
	}
	if (f)
		fclose(f);
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f && !fgets(source, sizeof source, f))
		source[0] = '\0';
	if (f)
		fclose(f);
	return constant && nonstop && strcmp(source, "tsc\n") == 0;
#else
	return 0;
#endif
}

#endif
