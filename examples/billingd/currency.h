/*
 * currency.h -- the ISO 4217 currencies billingd accepts.
 */
#ifndef BILLINGD_CURRENCY_H
#define BILLINGD_CURRENCY_H

/* Number of minor-unit digits (2 for EUR, 0 for JPY, 3 for KWD), or -1
 * when code is not an active ISO 4217 currency one can bill in. */
int currency_minor_units(const char *code);

#endif /* BILLINGD_CURRENCY_H */
