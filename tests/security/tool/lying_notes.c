/*
 * lying_notes.c -- a program whose stapsdt notes lie, as an attacker
 * would build it (tests/security/tool/test_*.py).
 *
 *   billing:evil__text    its "semaphore" is the first bytes of code()
 *   billing:evil__rodata  its "semaphore" is the constant in .rodata
 *   billing:evil__data    its "semaphore" is a variable in .data: writable
 *                         and in the program's own rw-p mapping, but not
 *                         in the semaphore section (.probes)
 *
 * Every site is a plain nop and nothing raises the counters, so doctor
 * sees three "semaphores" raised with no uprobe behind them (stale).
 *
 *     lying_notes [SECONDS]
 *
 * Prints "ready", then calls code() and checks the constant and the
 * variable every 20 ms for SECONDS (default 10): a zero written into
 * code() kills it (SIGSEGV or SIGILL), a change to the constant makes it
 * exit 3, to the variable exit 4.  Exit 0 when all held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hand_note.h"

/* What the "semaphores" point at. */
const unsigned short constant[4] = { 0x1234, 0x5678, 0x9abc, 0xdef0 };
unsigned short variable[4] = { 0x4321, 0x8765, 0xcba9, 0x0fed };

__attribute__((noinline, used)) int code(int x)
{
	return x * 3 + 1;
}

/* One stapsdt note with a site of its own and no arguments; SEM is an
 * assembler expression, NAME a bare word. */
#define LYING_NOTE(NAME, SEM) __asm__ __volatile__("990: nop\n" HAND_NOTE(billing, NAME, SEM, ""))

static void sites(void)
{
	LYING_NOTE(evil__text, code);
	LYING_NOTE(evil__rodata, constant);
	LYING_NOTE(evil__data, variable);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	sites();
	printf("ready\n");
	fflush(stdout);
	int sum = 0;
	for (long i = 0; i < (long)(seconds * 50); i++) {
		sum += code((int)i);
		const volatile unsigned short *now = constant;
		if (now[0] != 0x1234 || now[1] != 0x5678) {
			printf("constant changed\n");
			return 3;
		}
		const volatile unsigned short *var = variable;
		if (var[0] != 0x4321) {
			printf("variable changed\n");
			return 4;
		}
		nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
	}
	printf("held %d\n", sum != 0);
	return 0;
}
