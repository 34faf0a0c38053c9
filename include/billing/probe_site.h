/*
 * billing/probe_site.h -- the instruction a probe site is made of.
 *
 * Included by billing/probes.h after sys/sdt.h: sys/sdt.h expands _SDT_NOP
 * where a probe macro is used, so redefining it here switches every site.
 * The default is sys/sdt.h's own 1-byte nop, safe with every stapsdt
 * consumer.  This is the one place the site is chosen.
 */
#ifndef BILLING_PROBE_SITE_H
#define BILLING_PROBE_SITE_H

#include "billing/probes_config.h"

#endif /* BILLING_PROBE_SITE_H */
