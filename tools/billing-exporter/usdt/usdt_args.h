/*
 * usdt_args.h -- a probe site's argument string, as its stapsdt note
 * gives it ("-4@%edx 8@-16(%rbp) 8@$5"), read into the spec the BPF
 * programs fetch its arguments by (struct bx_usdt_spec,
 * billing_exporter.h).  Pure: no BPF, no I/O, so a unit test feeds it
 * every form.
 *
 * The forms read are those a compiler gives a billing probe's integer
 * and pointer arguments on x86-64: a constant ($5, $-3, $0x10), a
 * register of any width (%rax, %eax, %ax, %al, %r8d...), and memory at a
 * register plus a constant (-16(%rbp), (%rax)).  Anything else (an index
 * register, a segment, a symbol, %rip, a floating-point argument) is
 * refused, as is a site whose arguments do not match billing.d's
 * declaration of the probe (their count, or an argument's size): a value
 * read from the wrong place would be counted as a true one.
 */
#ifndef BX_USDT_ARGS_H
#define BX_USDT_ARGS_H

#include <stddef.h>

#include "billing/catalogue.h"
#include "billing_exporter.h"

/* 1 when this build reads argument specs (x86-64). */
int bx_usdt_args_built(void);

/* args into *spec, checked against the probe's declaration.  0, or -1
 * with a one-line reason in err. */
int bx_usdt_args_parse(const char *args, const billing_probe_info_t *declared, struct bx_usdt_spec *spec,
                       char *err, size_t errlen);

#endif /* BX_USDT_ARGS_H */
