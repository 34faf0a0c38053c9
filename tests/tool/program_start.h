/*
 * program_start.h -- how the trace test programs start: "ROUNDS [--wait |
 * --linger]".  Prints "ready"; with --wait then reads one line from stdin
 * (a test writes it once its tracer is attached).  Returns ROUNDS (default
 * 1), or -1 when stdin closed before the go-ahead.  program_main() is a
 * test program's whole main(): that start, then round(id) for id
 * 1..ROUNDS, then "fired ROUNDS"; with --linger it then waits for stdin to
 * close before it exits (a test holds a `trace -c` open until the script
 * has printed what the rounds made it print).
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

static int program_main(int argc, char **argv, void (*round)(unsigned long long id))
{
	long rounds = program_start(argc, argv);

	if (rounds < 0)
		return 1;
	for (long i = 0; i < rounds; i++)
		round((unsigned long long)i + 1);
	printf("fired %ld\n", rounds);
	fflush(stdout);
	if (argc > 2 && strcmp(argv[2], "--linger") == 0)
		while (getchar() != EOF)
			;
	return 0;
}

#endif
