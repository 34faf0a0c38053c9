/*
 * billing/probe_site.h -- the instruction a probe site is made of.
 *
 * Included by billing/probes.h after sys/sdt.h: sys/sdt.h expands _SDT_NOP
 * where a probe macro is used, so redefining it here switches every site.
 * The default is sys/sdt.h's own 1-byte nop, safe with every stapsdt
 * consumer.  This is the one place the site is chosen.
 *
 * The fast site (-Dprobe_site=fast, x86-64 only) is the 5-byte nop
 * 0f 1f 44 00 00.  Linux 6.x optimizes a uprobe placed on it: after the
 * first hit the kernel rewrites the nop into a call to a trampoline, which
 * costs about half an int3 trap.  That call pushes a return address below
 * the stack pointer, into the 128-byte red zone, so a leaf function that
 * keeps data there would see it overwritten while a tracer is attached.
 * Every translation unit that expands a probe macro in fast mode must
 * therefore be compiled with -mno-red-zone.  Compilers do not announce that
 * flag to the preprocessor, so the build passes -DBILLING_NO_RED_ZONE=1
 * beside it (project arguments, the meson dependency and pkg-config
 * --cflags carry both) and this header refuses to compile without it.
 *
 * Two macros override the configured site for one translation unit (the
 * benchmarks and the red-zone test use them to build both kinds of site in
 * one build tree):
 *   BILLING_PROBE_SITE_FORCE_FAST      5-byte site, same red-zone rule
 *   BILLING_PROBE_SITE_FORCE_STANDARD  sys/sdt.h's 1-byte site
 */
#ifndef BILLING_PROBE_SITE_H
#define BILLING_PROBE_SITE_H

#include "billing/probes_config.h"

#if defined(BILLING_PROBE_SITE_FORCE_STANDARD)
#  define BILLING_PROBE_SITE_IS_FAST 0
#elif defined(BILLING_PROBE_SITE_FORCE_FAST)
#  define BILLING_PROBE_SITE_IS_FAST 1
#else
#  define BILLING_PROBE_SITE_IS_FAST BILLING_PROBE_SITE_FAST
#endif

#if BILLING_PROBE_SITE_IS_FAST
#  if !defined(__x86_64__)
#    error "billing-probes: the fast probe site (5-byte nop) exists on x86-64 only; build with -Dprobe_site=standard"
#  endif
#  if !defined(BILLING_NO_RED_ZONE)
#    error "billing-probes: fast probe sites need a translation unit without a red zone: compile it with -mno-red-zone -DBILLING_NO_RED_ZONE=1 (pkg-config --cflags billing-probes and the meson dependency give both); without them a traced leaf function can have its stack data overwritten"
#  endif
/* The optimized uprobe only takes this exact encoding (nopl 0x0(%rax,%rax,1)),
 * so it is spelled out byte by byte rather than left to the assembler's
 * choice of nop.  Semicolons, not commas: sys/sdt.h passes _SDT_NOP through
 * a one-argument macro. */
#  undef _SDT_NOP
#  define _SDT_NOP \
    .byte 0x0f; \
    .byte 0x1f; \
    .byte 0x44; \
    .byte 0x00; \
    .byte 0x00
#endif

#endif /* BILLING_PROBE_SITE_H */
