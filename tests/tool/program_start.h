/*
 * program_start.h -- how the trace test programs start: "ROUNDS [--wait]".
 * Prints "ready"; with --wait then reads one line from stdin (a test
 * writes it once its tracer is attached).  Returns ROUNDS (default 1), or
 * -1 when stdin closed before the go-ahead.
 */
#ifndef TOOL_TEST_PROGRAM_START_H
#define TOOL_TEST_PROGRAM_START_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long program_start(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1;
	int wait = argc > 2 && strcmp(argv[2], "--wait") == 0;
	char line[64];

	printf("ready\n");
	fflush(stdout);
	if (wait && !fgets(line, sizeof line, stdin))
		return -1;
	return rounds;
}

#endif
