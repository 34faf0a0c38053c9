/*
 * lib/function_site.h -- what makes billing_fire_<probe>() a function probe
 * site (-Dprobe_site=function, docs/function-sites.md).
 *
 * The site is the function's entry, where the pid provider puts its
 * breakpoint and reads the probe's arguments from the calling convention's
 * registers.  Three things must survive -O2 and LTO for that:
 *   - the call: the body is empty, so a compiler that sees it would call it
 *     pure and drop the call, or inline it.  An asm volatile with a memory
 *     clobber is a side effect it cannot see through; noinline (noipa on
 *     gcc) keeps the function whole.
 *   - every argument in its register: an unused parameter of a function the
 *     linker may internalize can be deleted (gcc IPA-SRA, LLVM dead argument
 *     elimination) or specialised on a constant (IPA-CP).  Each argument is
 *     an input of an asm statement, and gcc's noipa forbids clones.
 *   - one function per probe: two probes with the same argument types have
 *     identical bodies, and gcc's identical code folding (-fipa-icf, on at
 *     -O2) would make one probe's entry the other's.  noipa implies no_icf;
 *     clang has no such pass on by default.  Linker ICF (--icf=all, MSVC
 *     /OPT:ICF) must be off for this library: docs/function-sites.md.
 * "used" and default visibility keep the symbol, under its own name, in
 * the symbol table where the pid provider looks it up, also when an
 * executable is linked with LTO.
 *
 * None of this emits an instruction: an untraced site is the caller's
 * argument set-up, a call and a return.
 */
#ifndef BILLING_FUNCTION_SITE_H
#define BILLING_FUNCTION_SITE_H

#if defined(__has_attribute)
#  if __has_attribute(noipa)
#    define BILLING_FUNCTION_SITE_NOIPA_ __attribute__((noipa))
#  endif
#endif
#ifndef BILLING_FUNCTION_SITE_NOIPA_
#  define BILLING_FUNCTION_SITE_NOIPA_
#endif

#if defined(__GNUC__)
#  define BILLING_FUNCTION_SITE_ \
    __attribute__((noinline, used, visibility("default"))) BILLING_FUNCTION_SITE_NOIPA_
#  define BILLING_FUNCTION_SITE_ARG_(x) __asm__ __volatile__("" \
		                                             : \
		                                             : "r"(x))
#  define BILLING_FUNCTION_SITE_BARRIER_() __asm__ __volatile__("" \
		                                                : \
		                                                : \
		                                                : "memory")
#elif defined(_MSC_VER)
#  include <intrin.h>
/* Untested (no Windows here): docs/function-sites.md says what else a
 * Windows build needs (a DLL, /OPT:NOICF). */
#  define BILLING_FUNCTION_SITE_ __declspec(noinline)
#  define BILLING_FUNCTION_SITE_ARG_(x) ((void)(x))
#  define BILLING_FUNCTION_SITE_BARRIER_() _ReadWriteBarrier()
#else
#  error "billing-probes: function probe sites need gcc, clang or MSVC (noinline and a compiler barrier)"
#endif

#endif /* BILLING_FUNCTION_SITE_H */
