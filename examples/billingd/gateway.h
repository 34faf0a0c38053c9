/*
 * gateway.h -- a simulated card gateway: it takes time and sometimes says no.
 *
 * Authorisations sleep for a latency drawn from the configured distribution
 * and are declined at the configured rate with a card-network style code.
 * Each worker thread draws from its own random stream, so the simulation
 * needs no lock.
 */
#ifndef BILLINGD_GATEWAY_H
#define BILLINGD_GATEWAY_H

#include <stdint.h>

typedef enum gateway_latency_distribution {
	GATEWAY_LATENCY_FIXED,
	GATEWAY_LATENCY_UNIFORM,     /* 0 .. 2 x mean */
	GATEWAY_LATENCY_EXPONENTIAL, /* mean, capped at 10 x mean */
} gateway_latency_distribution_t;

typedef struct gateway_config {
	double latency_ms; /* mean latency of one gateway call */
	gateway_latency_distribution_t distribution;
	double decline_rate; /* 0..1 */
} gateway_config_t;

/* Decline codes, after the ISO 8583 response codes card networks use. */
enum {
	GATEWAY_APPROVED = 0,
	GATEWAY_DO_NOT_HONOR = 5,
	GATEWAY_INVALID_CARD = 14,
	GATEWAY_INSUFFICIENT_FUNDS = 51,
	GATEWAY_EXPIRED_CARD = 54,
};

int gateway_distribution_parse(const char *text, gateway_latency_distribution_t *out);

/* Called once before any worker starts. */
void gateway_configure(const gateway_config_t *config, uint64_t seed);

/* The gateways we are connected to, NULL-terminated: "stripe-sim", ... */
extern const char *const gateway_names[];

/* The gateway_names entry equal to name, or name itself when none is: a
 * probe label into read-only memory is a pointer compare in the stats
 * writer's cache, a copy (a database row) is compared byte by byte. */
const char *gateway_label(const char *name);

/* Authorise (and capture) a card payment.  Fires the gateway-call pair.
 * *duration_ns gets the call's duration when timed is non-zero or the
 * gateway-call pair is enabled, else 0 (not measured): a caller timing this
 * same call (payment-auth) takes it instead of reading the clock itself.
 * Returns GATEWAY_APPROVED or a decline code. */
int gateway_authorize(uint64_t request_id, const char *gateway, int64_t amount_minor,
                      const char *currency, int timed, uint64_t *duration_ns);

/* Send a refund to the gateway; the simulation always accepts it. */
int gateway_refund(uint64_t request_id, const char *gateway, int64_t amount_minor,
                   const char *currency);

/* "insufficient_funds" etc. for a decline code; "approved" for 0. */
const char *gateway_decline_name(int code);

#endif /* BILLINGD_GATEWAY_H */
