/*
 * billing/catalogue.h -- the probes of provider/billing.d, at run time.
 *
 * Generated from billing.d when the library is built, so a program can
 * list what it offers (names, argument names and types, meaning) without
 * the .d file at hand.  Present whether or not probes are compiled in.
 */
#ifndef BILLING_CATALOGUE_H
#define BILLING_CATALOGUE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum billing_arg_type {
	BILLING_ARG_UINT64,
	BILLING_ARG_INT64,
	BILLING_ARG_INT32,
	BILLING_ARG_STRING
} billing_arg_type_t;

typedef struct billing_probe_arg {
	const char *name; /* "amount_minor" */
	billing_arg_type_t type;
	const char *doc; /* meaning and units */
} billing_probe_arg_t;

typedef struct billing_probe_info {
	const char *name;     /* "payment-auth", as D scripts spell it */
	const char *sdt_name; /* "payment__auth", as in ELF notes and bpftrace */
	const char *summary;  /* when it fires */
	size_t nargs;
	const billing_probe_arg_t *args;
} billing_probe_info_t;

/* The provider's name: "billing". */
const char *billing_catalogue_provider(void);
/* All probes, in billing.d order; *count receives how many. */
const billing_probe_info_t *billing_catalogue(size_t *count);
/* The probe named name (either spelling), or NULL. */
const billing_probe_info_t *billing_catalogue_find(const char *name);
/* "uint64", "int64", "int32", "string". */
const char *billing_arg_type_name(billing_arg_type_t type);
/* 1 when probes were compiled into this library (USDT or function
 * sites), 0 when built without. */
int billing_probes_compiled_in(void);

#ifdef __cplusplus
}
#endif

#endif /* BILLING_CATALOGUE_H */
