/*
 * cross_forms.c -- probes whose arguments take every shape a compiler
 * gives them (stack slots, registers, globals, thread-locals, constants,
 * floating point, 12 arguments), compiled by test_cross_forms.py with
 * clang for several architectures into object files whose notes
 * `billing-probes list` must decode.  Never linked or run.
 */
#include <sys/sdt.h>
struct s {
	long a;
	int b[4];
};
struct s g;
long arr[16];
static __thread long tls;
long f(long x, int y, struct s *p, long i, double d, char c, short h)
{
	long local = x * 3;
	int buf[8];
	buf[y & 7] = y;
	DTRACE_PROBE12(demo, many, x, y, p->a, p->b[2], g.b[1], arr[i], local, buf[3], c, h, &g, 5);
	DTRACE_PROBE3(demo, fp, d, (float)d, x + 1);
	DTRACE_PROBE4(demo, regs, x, y, i, c);
	DTRACE_PROBE4(demo, globals, g.a, g.b[3], arr[2], tls);
	DTRACE_PROBE3(demo, consts, 7, -1, 0x1234567);
	return local + buf[1];
}
