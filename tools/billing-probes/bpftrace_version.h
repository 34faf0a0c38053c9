/*
 * bpftrace_version.h -- which bpftrace `trace` runs, and what that version
 * does differently: how many probes it says it attached, whether its type
 * checker warns of the shipped scripts' arithmetic.  The scripts are
 * tested on the versions of Debian 12, 13 and sid (BP_BPFTRACE_TESTED).
 */
#ifndef BP_BPFTRACE_VERSION_H
#define BP_BPFTRACE_VERSION_H

#include <stddef.h>

/* The versions the shipped scripts are tested on, for the one line that
 * names them. */
#define BP_BPFTRACE_TESTED "0.17 (Debian 12), 0.23 (Debian 13), 0.27 (sid)"

typedef struct {
	int major, minor, patch;
	char text[64]; /* as bpftrace says it: "v0.23.2" */
} bp_bpftrace_version_t;

/* Ask the bpftrace at path (`bpftrace --version`, 5 s at most).  0, or -1
 * with a one-line reason in why. */
int bp_bpftrace_version(const char *path, bp_bpftrace_version_t *v, char *why, size_t whylen);

/* Parse "bpftrace v0.23.2" (text: bpftrace's first line).  0 or -1. */
int bp_bpftrace_version_parse(const char *text, bp_bpftrace_version_t *v);

/* 1 for a major.minor the scripts are tested on. */
int bp_bpftrace_tested(const bp_bpftrace_version_t *v);

/* 1 when bpftrace counts one probe per site of a USDT probe ("Attaching 4
 * probes..." for BEGIN, END and a probe of two sites), as through 0.23;
 * 0 when it counts one per probe spec, attached through libbpf's USDT
 * support with one uprobe-multi link for all its sites (0.24 on). */
int bp_bpftrace_counts_sites(const bp_bpftrace_version_t *v);

/* 1 when bpftrace's type checker warns of mixed-sign arithmetic and while
 * loops (0.24 on): the shipped scripts, one text for 0.17 too, cannot
 * avoid either, so `trace` passes --no-warnings for them. */
int bp_bpftrace_warns_of_types(const bp_bpftrace_version_t *v);

#endif
