/*
 * baseline_program.c -- a service of the tiny provider "shop"
 * (baseline_shop.d), which test_check_baseline.py compiles in variants
 * to hold against a baseline saved from the plain build:
 *
 *   WITHOUT_REFUND   shop:refund is gone
 *   PAY_CODE_WIDE    shop:pay's third argument is a long long, not an int
 *   PAY_TWO_FORMS    a second shop:pay site passes that long long
 *   OPEN_MORE_ARGS   shop:order__open gets a third argument
 *   WITH_SHIP        shop:ship is added
 *
 * It also fires a probe of another provider ("audit"), which a baseline
 * of shop leaves out.  The arguments come from argc so that no build
 * folds them into constants of another width.
 */
#include <sys/sdt.h>

int main(int argc, char **argv)
{
	unsigned long long order = (unsigned long long)argc;
	long long amount = 100LL * argc;
	int code = argc - 1;
	long long wide_code = code;

	(void)argv;
	(void)wide_code;
#ifdef OPEN_MORE_ARGS
	STAP_PROBE3(shop, order__open, order, amount, code);
#else
	STAP_PROBE2(shop, order__open, order, amount);
#endif
#ifdef PAY_CODE_WIDE
	STAP_PROBE3(shop, pay, order, amount, wide_code);
#else
	STAP_PROBE3(shop, pay, order, amount, code);
#endif
#ifdef PAY_TWO_FORMS
	STAP_PROBE3(shop, pay, order, amount, wide_code);
#endif
#ifndef WITHOUT_REFUND
	STAP_PROBE2(shop, refund, order, amount);
#endif
#ifdef WITH_SHIP
	STAP_PROBE1(shop, ship, order);
#endif
	STAP_PROBE1(audit, seen, order);
	return 0;
}
