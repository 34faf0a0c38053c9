/*
 * alternatives -- what a service does instead of a probe, per event.
 *
 * The same payment-auth events fire_loop fires, handled the ways services
 * usually record them when there is no tracer:
 *   fprintf    a formatted, timestamped log line to a line-buffered file
 *   syslog     the same line through syslog(3) (a datagram to /dev/log)
 *   atomic     an in-process counter of approved / declined (C11 atomics)
 *   histogram  an in-process log2 histogram of duration_ns (C11 atomics)
 * Prints the loop's time per event.  Needs C11 (meson: c_std=gnu11).
 *
 * Usage: alternatives MODE N [LOGFILE]
 *
 * Without LOGFILE the log is a fresh file made by mkstemp in /tmp (never
 * a fixed name there, where another user could have left a link), removed
 * at the end.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static const char *const gateways[3] = { "stripe-sim", "adyen-sim", "paypal-sim" };
static const char *const currencies[3] = { "EUR", "USD", "JPY" };

static atomic_ullong outcome[2];  /* approved, declined */
static atomic_ullong log2_ns[65]; /* bucket b: 2^(b-1) <= duration < 2^b */

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int usage(const char *argv0)
{
	fprintf(stderr, "usage: %s fprintf|syslog|atomic|histogram N [LOGFILE]\n", argv0);
	return 2;
}

int main(int argc, char **argv)
{
	unsigned long long n, i, total = 0;
	const char *mode;
	FILE *log = NULL;
	char fresh[] = "/tmp/billing-bench-XXXXXX";
	double t0, t1;
	char *end;
	int b;

	if (argc < 3 || argc > 4)
		return usage(argv[0]);
	mode = argv[1];
	n = strtoull(argv[2], &end, 10);
	if (*argv[2] == '\0' || *argv[2] == '-' || *end != '\0' || n == 0) {
		fprintf(stderr, "%s: N must be a positive integer, got '%s'\n", argv[0], argv[2]);
		return 2;
	}
	if (strcmp(mode, "fprintf") == 0) {
		if (argc == 4) {
			log = fopen(argv[3], "w");
		} else {
			int fd = mkstemp(fresh);
			log = fd >= 0 ? fdopen(fd, "w") : NULL;
			if (fd >= 0)
				unlink(fresh); /* written, never read: no name needed */
		}
		if (!log) {
			perror("alternatives: log file");
			return 1;
		}
		setvbuf(log, NULL, _IOLBF, 0);
	} else if (strcmp(mode, "syslog") == 0) {
		openlog("billing-bench", LOG_NDELAY, LOG_USER);
	} else if (strcmp(mode, "atomic") != 0 && strcmp(mode, "histogram") != 0) {
		return usage(argv[0]);
	}

	t0 = now_ns();
	for (i = 0; i < n; i++) {
		uint64_t id = i, duration = 1000 + (i & 1023);
		int64_t amount = (int64_t)(i % 5000) * 100;
		int32_t result = i % 10 == 0 ? 51 : 0;
		const char *currency = currencies[i % 3], *gateway = gateways[i % 3];

		switch (mode[0]) {
		case 'f': {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			fprintf(log, "%lld.%06ld payment-auth id=%llu amount=%lld currency=%s gateway=%s result=%d duration_ns=%llu\n",
			        (long long)ts.tv_sec, ts.tv_nsec / 1000, (unsigned long long)id, (long long)amount,
			        currency, gateway, (int)result, (unsigned long long)duration);
			break;
		}
		case 's':
			syslog(LOG_INFO, "payment-auth id=%llu amount=%lld currency=%s gateway=%s result=%d duration_ns=%llu",
			       (unsigned long long)id, (long long)amount, currency, gateway, (int)result,
			       (unsigned long long)duration);
			break;
		case 'a':
			atomic_fetch_add_explicit(&outcome[result != 0], 1, memory_order_relaxed);
			break;
		default:
			b = duration ? 64 - __builtin_clzll(duration) : 0;
			atomic_fetch_add_explicit(&log2_ns[b], 1, memory_order_relaxed);
			break;
		}
	}
	t1 = now_ns();

	if (log)
		fclose(log);
	for (b = 0; b < 2; b++)
		total += atomic_load(&outcome[b]);
	for (b = 0; b < 65; b++)
		total += atomic_load(&log2_ns[b]);
	printf("mode=%s events=%llu counted=%llu ns_per_event=%.2f\n", mode, n, total, (t1 - t0) / (double)n);
	return 0;
}
