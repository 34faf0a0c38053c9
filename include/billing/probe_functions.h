/*
 * billing/probe_functions.h -- every probe as a plain function, for callers
 * that cannot expand C macros: FFI from Python (ctypes), Go (cgo), Rust.
 *
 *     billing_fire_payment_auth(payment_id, amount_minor, "EUR", "stripe-sim", 0, ns);
 *     if (billing_enabled_payment_auth()) { ...costly arguments... }
 *
 * These probe sites live in libbillingprobes, so a consumer attaches to the
 * library.  From C, prefer billing/probes.h: its macros cost no call while
 * untraced and evaluate no argument.
 */
#ifndef BILLING_PROBE_FUNCTIONS_H
#define BILLING_PROBE_FUNCTIONS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "billing/ffi_prototypes.h"

#ifdef __cplusplus
}
#endif

#endif /* BILLING_PROBE_FUNCTIONS_H */
