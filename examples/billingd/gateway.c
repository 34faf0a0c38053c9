/*
 * gateway.c -- the simulated card gateway.
 */
#include "gateway.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "billing/timing.h"

static gateway_config_t config = { 1.0, GATEWAY_LATENCY_EXPONENTIAL, 0.1 };
static uint64_t base_seed = 1;
/* Each thread's stream starts from base_seed and its own stream number. */
static atomic_uint_fast64_t next_stream = 1;

const char *const gateway_names[] = { "stripe-sim", "adyen-sim", "braintree-sim", NULL };

static _Thread_local uint64_t rng_state;

/* splitmix64: small, fast, good enough for a simulation. */
static uint64_t rng_next(void)
{
	uint64_t z;
	if (rng_state == 0)
		rng_state = base_seed * 0x9E3779B97F4A7C15ull +
		            atomic_fetch_add(&next_stream, 1) * 0xBF58476D1CE4E5B9ull + 1;
	z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double rng_unit(void)
{
	return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

int gateway_distribution_parse(const char *text, gateway_latency_distribution_t *out)
{
	if (strcmp(text, "fixed") == 0)
		*out = GATEWAY_LATENCY_FIXED;
	else if (strcmp(text, "uniform") == 0)
		*out = GATEWAY_LATENCY_UNIFORM;
	else if (strcmp(text, "exponential") == 0)
		*out = GATEWAY_LATENCY_EXPONENTIAL;
	else
		return -1;
	return 0;
}

void gateway_configure(const gateway_config_t *cfg, uint64_t seed)
{
	config = *cfg;
	base_seed = seed;
}

static double draw_latency_ms(void)
{
	double mean = config.latency_ms, x;
	if (mean <= 0.0)
		return 0.0;
	switch (config.distribution) {
	case GATEWAY_LATENCY_FIXED:
		return mean;
	case GATEWAY_LATENCY_UNIFORM:
		return 2.0 * mean * rng_unit();
	case GATEWAY_LATENCY_EXPONENTIAL:
	default:
		x = -mean * log(1.0 - rng_unit());
		return x > 10.0 * mean ? 10.0 * mean : x;
	}
}

static void wait_like_a_network(void)
{
	double ms = draw_latency_ms();
	struct timespec ts;
	if (ms <= 0.0)
		return;
	ts.tv_sec = (time_t)(ms / 1000.0);
	ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
	while (nanosleep(&ts, &ts) != 0)
		; /* interrupted: sleep the rest */
}

static int draw_decline(void)
{
	static const int codes[] = { GATEWAY_INSUFFICIENT_FUNDS, GATEWAY_DO_NOT_HONOR,
		                     GATEWAY_EXPIRED_CARD, GATEWAY_INVALID_CARD };
	if (config.decline_rate <= 0.0 || rng_unit() >= config.decline_rate)
		return GATEWAY_APPROVED;
	return codes[rng_next() % (sizeof(codes) / sizeof(codes[0]))];
}

const char *gateway_label(const char *name)
{
	size_t i;
	for (i = 0; gateway_names[i] != NULL; i++)
		if (strcmp(gateway_names[i], name) == 0)
			return gateway_names[i];
	return name;
}

int gateway_authorize(uint64_t request_id, const char *gateway, int64_t amount_minor,
                      const char *currency, int timed, uint64_t *duration_ns)
{
	billing_gateway_call_t call;
	int result;
	uint64_t ns;
	(void)amount_minor;
	(void)currency;
	billing_gateway_call_begin(&call, request_id, gateway, "authorize");
	/* One clock pair for both spans: begin clocks only while the pair is
	 * enabled, so a caller's need alone starts the clock here. */
	if (timed && call.start_ns == 0)
		call.start_ns = billing_clock_if(1);
	wait_like_a_network();
	result = draw_decline();
	ns = billing_gateway_call_end(&call, result);
	/* end measures only while gateway-call-done is enabled */
	*duration_ns = ns != 0 ? ns : billing_elapsed_ns(call.start_ns);
	return result;
}

int gateway_refund(uint64_t request_id, const char *gateway, int64_t amount_minor,
                   const char *currency)
{
	billing_gateway_call_t call;
	(void)amount_minor;
	(void)currency;
	billing_gateway_call_begin(&call, request_id, gateway, "refund");
	wait_like_a_network();
	billing_gateway_call_end(&call, 0);
	return 0;
}

const char *gateway_decline_name(int code)
{
	switch (code) {
	case GATEWAY_APPROVED: return "approved";
	case GATEWAY_DO_NOT_HONOR: return "do_not_honor";
	case GATEWAY_INVALID_CARD: return "invalid_card";
	case GATEWAY_INSUFFICIENT_FUNDS: return "insufficient_funds";
	case GATEWAY_EXPIRED_CARD: return "expired_card";
	default: return "declined";
	}
}
