/*
 * arg_forms.c -- payment-auth fired from four sites whose notes give the
 * arguments in each operand form the exporter reads on x86-64, with known
 * values: every argument in a register; every one in memory on the stack;
 * the integers as constants; the result as a 32-bit register whose upper
 * half holds garbage (read as -2, not as 0x5a5a5a5afffffffe).  Each site
 * names its own gateway, so each site's figures are told apart.  The notes
 * are written here (no sys/sdt.h), with the compiler choosing registers
 * and stack slots through the operand constraints, as sys/sdt.h does.
 *
 *   arg_forms            prints "waiting pid PID"; on each line read from
 *                        stdin fires every site once and prints "fired";
 *                        exits at end of input.
 *   arg_forms_mismatch   the same, and a fifth site with five arguments
 *                        (billing.d declares six): the exporter must refuse
 *                        the file, not read a sixth as 0.
 *
 * The sites have no semaphore: the test fires once the exporter serves.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "hand_note.h"

/* The note of the site at label 990 (just before), whose argument string
 * is ARGS: payment-auth's, no semaphore. */
#define NOTE(args) HAND_NOTE(billing, payment__auth, 0, args)

/* payment__auth(payment_id, amount_minor, currency, gateway, result, duration_ns) */
static __attribute__((noinline)) void in_registers(uint64_t id, int64_t amount, const char *currency,
                                                   const char *gateway, int32_t result, uint64_t ns)
{
	__asm__ volatile("990: nop\n" NOTE("8@%0 -8@%1 8@%2 8@%3 -4@%k4 8@%5")::"r"(id), "r"(amount), "r"(currency),
	                 "r"(gateway), "r"(result), "r"(ns));
}

static __attribute__((noinline)) void in_memory(uint64_t id, int64_t amount, const char *currency,
                                                const char *gateway, int32_t result, uint64_t ns)
{
	volatile uint64_t m_id = id, m_ns = ns;
	volatile int64_t m_amount = amount;
	const char *volatile m_currency = currency;
	const char *volatile m_gateway = gateway;
	volatile int32_t m_result = result;
	__asm__ volatile("990: nop\n" NOTE("8@%0 -8@%1 8@%2 8@%3 -4@%4 8@%5")::"m"(m_id), "m"(m_amount),
	                 "m"(m_currency), "m"(m_gateway), "m"(m_result), "m"(m_ns));
}

static __attribute__((noinline)) void as_constants(const char *currency, const char *gateway)
{
	__asm__ volatile("990: nop\n" NOTE("8@%0 -8@%1 8@%2 8@%3 -4@%4 8@%5")::"i"(77), "i"(-9000000000LL),
	                 "r"(currency), "r"(gateway), "i"(7), "i"(0));
}

static __attribute__((noinline)) void narrow_register(uint64_t id, int64_t amount, const char *currency,
                                                      const char *gateway, int32_t result, uint64_t ns)
{
	__asm__ volatile("movl %k0, %%eax\n"
	                 "movabsq $0x5a5a5a5a00000000, %%rcx\n"
	                 "orq %%rcx, %%rax\n"
	                 "990: nop\n" NOTE("8@%1 -8@%2 8@%3 8@%4 -4@%%eax 8@%5")::"r"(result),
	                 "r"(id), "r"(amount), "r"(currency), "r"(gateway), "r"(ns)
	                 : "rax", "rcx");
}

#ifdef MISMATCH
static __attribute__((noinline)) void five_arguments(uint64_t id, int64_t amount, const char *currency,
                                                     const char *gateway, int32_t result)
{
	__asm__ volatile("990: nop\n" NOTE("8@%0 -8@%1 8@%2 8@%3 -4@%k4")::"r"(id), "r"(amount), "r"(currency),
	                 "r"(gateway), "r"(result));
}
#endif

int main(void)
{
	char line[64];
	printf("waiting pid %d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		in_registers(11, 1234, "EUR", "reg", 0, 1500);
		in_memory(22, -250, "USD", "mem", 51, 2000000000);
		as_constants("GBP", "const");
		narrow_register(44, (int64_t)1 << 40, "JPY", "narrow", -2, 3000);
#ifdef MISMATCH
		five_arguments(55, 1, "EUR", "five", 0);
#endif
		printf("fired\n");
		fflush(stdout);
	}
	return 0;
}
