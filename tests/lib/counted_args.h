/*
 * counted_args.h -- probe arguments that count their own evaluations, for
 * the tests that say when a macro evaluates its arguments (never while
 * untraced with USDT sites; once per fire with function sites).
 */
#ifndef TESTS_COUNTED_ARGS_H
#define TESTS_COUNTED_ARGS_H

#include <stdint.h>

static int evaluations;

static uint64_t counted_id(uint64_t id)
{
	evaluations++;
	return id;
}

static const char *counted_string(const char *s)
{
	evaluations++;
	return s;
}

#endif
