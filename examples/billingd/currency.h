/*
 * currency.h -- the ISO 4217 currencies billingd accepts.
 */
#ifndef BILLINGD_CURRENCY_H
#define BILLINGD_CURRENCY_H

/* Number of minor-unit digits (2 for EUR, 0 for JPY, 3 for KWD), or -1
 * when code is not an active ISO 4217 currency one can bill in. */
int currency_minor_units(const char *code);

/* The table's own copy of code (static), or NULL when code is not an active
 * ISO 4217 currency one can bill in. */
const char *currency_code(const char *code);

/* The table's own copy of code, or code itself when it is not in the table:
 * a probe label that points into read-only memory is a pointer compare in
 * the stats writer's cache, a copy in a buffer is compared byte by byte. */
const char *currency_label(const char *code);

#endif /* BILLINGD_CURRENCY_H */
