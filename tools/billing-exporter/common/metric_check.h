/*
 * metric_check.h -- the metric table against billing.d's catalogue.
 */
#ifndef BX_METRIC_CHECK_H
#define BX_METRIC_CHECK_H

#include <stddef.h>

/* 0 when every map's probe exists in the catalogue and every argument
 * the BPF side reads sits at the position, with the name and type, that
 * billing.d declares; else -1 with the first mismatch in err. */
int bx_metric_table_check(char *err, size_t errlen);

#endif /* BX_METRIC_CHECK_H */
