/*
 * proc_status.c -- one hex mask from /proc/PID/status.
 */
#include "proc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned long long bp_proc_status_mask(pid_t pid, const char *field)
{
	char path[64], line[256];
	if (pid)
		snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof path, "/proc/self/status");
	FILE *f = fopen(path, "r");
	unsigned long long mask = 0;
	size_t n = strlen(field);
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			mask = strtoull(line + n + 1, NULL, 16);
			break;
		}
	fclose(f);
	return mask;
}
