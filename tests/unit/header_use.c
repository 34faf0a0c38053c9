/* Every probe macro used the way an application would: compiled by
 * test_header_compile.py as C99, C11 and C++17 with gcc and clang under
 * -Wall -Wextra -Werror -pedantic, with probes on and off.  The calls come
 * from billing/probe_samples.h, generated from billing.d: each macro with
 * integers of its argument types, strings, and NULL. */
#include "billing/probe_samples.h"

int main(int argc, char **argv)
{
	(void)argv;
	billing_sample_fire_all(argc % BILLING_SAMPLE_ROUNDS);
	return 0;
}
