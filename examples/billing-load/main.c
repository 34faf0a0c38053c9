/*
 * billing-load -- drive billingd with a realistic request mix and count
 * every outcome exactly.
 *
 * Prints throughput, latency percentiles and the count of each outcome
 * (invoices created, payments approved/declined, refunds, 4xx by kind).
 * Exits 1 when a request got no response or an answer the scenario did
 * not expect (a 5xx, a wrong status or error code), so scripts can rely
 * on it.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "options.h"
#include "stats.h"

static volatile int stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

int main(int argc, char **argv)
{
	load_options_t opts;
	stats_t stats;
	struct sigaction sa;
	int rc = load_options_parse(&opts, argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 2;

	/* Ctrl-C ends the run early but still prints what was counted. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	memset(&stats, 0, sizeof(stats));
	if (driver_run(&opts, &stats, &stop_requested) != 0)
		return 1;
	if (opts.json)
		stats_print_json(&stats, stdout);
	else
		stats_print(&stats, stdout, opts.rate, opts.concurrency);
	fflush(stdout);
	rc = 0;
	if (stats.transport_errors > 0 || stats.unexpected > 0) {
		fprintf(stderr, "billing-load: %llu requests got no response and %llu an unexpected "
		                "one\n",
		        (unsigned long long)stats.transport_errors,
		        (unsigned long long)stats.unexpected);
		rc = 1;
	} else if (stats.responses == 0) {
		fprintf(stderr, "billing-load: no request was answered\n");
		rc = 1;
	}
	stats_free(&stats);
	return rc;
}
