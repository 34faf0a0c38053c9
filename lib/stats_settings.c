/*
 * stats_settings.c -- BILLING_STATS* read strictly (stats_settings.h).
 */
#include "stats_settings.h"

#include "billing_metrics_layout.h"

#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

extern char **environ;

#define PREFIX "BILLING_STATS"

/* A value as a person can read it in one line: bytes outside printable
 * ASCII as \xNN, cut after 64 bytes. */
static void shown(const char *v, char *out, size_t outlen)
{
	size_t o = 0;
	for (size_t i = 0; v[i] && o + 8 < outlen; i++) {
		unsigned char c = (unsigned char)v[i];
		if (i == 64) {
			o += (size_t)snprintf(out + o, outlen - o, "...");
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
	}
	out[o] = '\0';
}

/* "billing-probes: pid N: NAME=VALUE: WHAT", WHAT saying what is used. */
static void say_value(const char *name, const char *value, const char *what)
{
	char n[4 * 70], v[4 * 70];
	shown(name, n, sizeof n);
	shown(value, v, sizeof v);
	fprintf(stderr, "billing-probes: pid %d: %s=%s: %s\n", (int)getpid(), n, v, what);
}

/* Digits only, at most max: the number, else -1. */
static long whole_number(const char *v, long max)
{
	long n = 0;
	if (!*v)
		return -1;
	for (; *v; v++) {
		if (*v < '0' || *v > '9' || n > (max - (*v - '0')) / 10)
			return -1;
		n = n * 10 + (*v - '0');
	}
	return n;
}

/* "90", "90s", "15m", "1h" or "2d" in seconds, at most
 * BS_MAX_KEEP_SECONDS; -1 for anything else (a sign, a fraction, a
 * space, another unit). */
static long duration_seconds(const char *v)
{
	size_t n = strlen(v);
	long unit = 1;
	char digits[32];
	if (n == 0 || n >= sizeof digits)
		return -1;
	switch (v[n - 1]) {
	case 's': unit = 1, n--; break;
	case 'm': unit = 60, n--; break;
	case 'h': unit = 3600, n--; break;
	case 'd': unit = 86400, n--; break;
	default: break;
	}
	memcpy(digits, v, n);
	digits[n] = '\0';
	long count = whole_number(digits, BS_MAX_KEEP_SECONDS);
	return count < 0 || count > BS_MAX_KEEP_SECONDS / unit ? -1 : count * unit;
}

static void read_switch(bs_settings_t *s, const char *v)
{
	if (strcmp(v, "on") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "true") == 0)
		return;
	s->off = 1;
	if (strcmp(v, "off") != 0 && strcmp(v, "0") != 0 && strcmp(v, "no") != 0 && strcmp(v, "false") != 0)
		say_value(PREFIX, v, "not on, off, 1, 0, yes, no, true or false: stats off");
}

static void read_native(bs_settings_t *s, const char *v)
{
	if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0 || strcmp(v, "no") == 0 || strcmp(v, "false") == 0)
		s->native_off = 1;
	else if (strcmp(v, "on") != 0 && strcmp(v, "1") != 0 && strcmp(v, "yes") != 0 && strcmp(v, "true") != 0)
		say_value(PREFIX "_NATIVE", v, "not on, off, 1, 0, yes, no, true or false: native buckets on");
}

/* A directory refused turns the stats off: the default directory is
 * shared by the user's services, where readers would sum this one's
 * segment with the others'. */
static void read_dir(bs_settings_t *s, const char *v)
{
	if (v[0] == '/' && strlen(v) < sizeof s->dir) {
		snprintf(s->dir, sizeof s->dir, "%s", v);
		return;
	}
	s->off = 1;
	say_value(PREFIX "_DIR", v,
	          v[0] != '/' ? "not an absolute path: stats off (not the default directory, which other services share)"
	                      : "too long: stats off (not the default directory, which other services share)");
}

static void read_group(bs_settings_t *s, const char *v)
{
	long n = whole_number(v, 0x7ffffffeL);
	if (n >= 0) {
		s->has_group = 1;
		s->gid = (gid_t)n;
		return;
	}
	struct group *gr = getgrnam(v);
	if (!gr) {
		say_value(PREFIX "_GROUP", v, "no such group: the segment readable by its user alone (0600)");
		return;
	}
	s->has_group = 1;
	s->gid = gr->gr_gid;
}

static void read_threads(bs_settings_t *s, const char *v)
{
	long n = whole_number(v, BS_MAX_SLOTS);
	if (n < 1) {
		char what[96];
		snprintf(what, sizeof what, "not a whole number 1..%d: %d slots used", BS_MAX_SLOTS, BS_DEFAULT_SLOTS);
		say_value(PREFIX "_THREADS", v, what);
		return;
	}
	s->threads = n;
}

static void read_keep(bs_settings_t *s, const char *v)
{
	long n = duration_seconds(v);
	if (n < 0) {
		char what[160];
		snprintf(what, sizeof what,
		         "not a duration (whole seconds, or with a unit s, m, h or d, up to 3650d): %ld s used",
		         BS_DEFAULT_KEEP_SECONDS);
		say_value(PREFIX "_KEEP", v, what);
		return;
	}
	s->keep_seconds = n;
}

static void read_slow_keep(bs_settings_t *s, const char *v)
{
	long n = duration_seconds(v);
	if (n < 1) {
		char what[160];
		snprintf(what, sizeof what,
		         "not a duration (whole seconds, or with a unit s, m, h or d, from 1 s to 3650d): %ld s used",
		         BS_DEFAULT_SLOW_KEEP_SECONDS);
		say_value(PREFIX "_SLOW_KEEP", v, what);
		return;
	}
	s->slow_keep_seconds = n;
}

/* "250ms", "2s", "500us" or "250" (milliseconds) in nanoseconds, above 0
 * and at most BS_SLOW_MAX_NS; 0 for anything else. */
static uint64_t threshold_ns(const char *v, size_t n)
{
	char digits[32];
	uint64_t unit = 1000000;
	if (n >= 2 && strncmp(v + n - 2, "ms", 2) == 0)
		n -= 2;
	else if (n >= 2 && strncmp(v + n - 2, "us", 2) == 0)
		unit = 1000, n -= 2;
	else if (n >= 1 && v[n - 1] == 's')
		unit = 1000000000, n -= 1;
	if (n == 0 || n >= sizeof digits)
		return 0;
	memcpy(digits, v, n);
	digits[n] = '\0';
	long count = whole_number(digits, (long)(BS_SLOW_MAX_NS / 1000));
	if (count <= 0 || (uint64_t)count > BS_SLOW_MAX_NS / unit)
		return 0;
	return (uint64_t)count * unit;
}

static const uint64_t duration_bounds[] = { BX_DURATION_NS_BOUND_LIST };
enum { NBOUNDS = sizeof duration_bounds / sizeof duration_bounds[0] };

/* A threshold must be a bound of the duration buckets: a reader counts
 * the requests over it from the buckets, exactly only at a bound (and
 * the SLO rules count the same bucket). */
static int is_bound(uint64_t ns)
{
	for (size_t b = 0; b < NBOUNDS; b++)
		if (duration_bounds[b] == ns)
			return 1;
	return 0;
}

/* A bound as BILLING_STATS_SLOW takes it: "500us", "250ms", "1s". */
static void bound_text(uint64_t ns, char *out, size_t outlen)
{
	uint64_t n = ns / 1000u;
	const char *unit = "us";
	if (ns % 1000000000u == 0)
		n = ns / 1000000000u, unit = "s";
	else if (ns % 1000000u == 0)
		n = ns / 1000000u, unit = "ms";
	snprintf(out, outlen, "%llu%s", (unsigned long long)n, unit);
}

/* The bounds as BILLING_STATS_SLOW takes them: "500us 1ms ... 10s". */
static void bounds_text(char *out, size_t outlen)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t b = 0; b < NBOUNDS && o < outlen; b++) {
		char one[24];
		bound_text(duration_bounds[b], one, sizeof one);
		o += (size_t)snprintf(out + o, outlen - o, "%s%s", b ? " " : "", one);
	}
}

/* An override the SLO rules do not follow: they count billing.d's default
 * bucket as slow for every handler (monitoring/rules), whatever the trails
 * are judged by.  Said once, so that trails and exemplars over another
 * threshold are not taken for the alerts' view of slow. */
static void say_rules_differ(const bs_settings_t *s, const char *v)
{
	int differs = s->slow_default_ns && s->slow_default_ns != BX_SLOW_DEFAULT_NS;
	for (size_t i = 0; i < s->nslow; i++)
		differs |= s->slow[i].ns != BX_SLOW_DEFAULT_NS;
	if (!differs)
		return;
	char what[256], bound[24];
	bound_text(BX_SLOW_DEFAULT_NS, bound, sizeof bound);
	snprintf(what, sizeof what,
	         "trails and exemplars judged by it; the SLO rules still judge by their bucket, billing.d's %s "
	         "(le=\"%g\")",
	         bound, (double)BX_SLOW_DEFAULT_NS / 1e9);
	say_value(PREFIX "_SLOW", v, what);
}

static void read_slow(bs_settings_t *s, const char *v)
{
	if (strcmp(v, "off") == 0) {
		s->slow_off = 1;
		return;
	}
	bs_settings_t t = *s;
	for (const char *item = v; *item;) {
		size_t n = strcspn(item, ",");
		const char *eq = memchr(item, '=', n);
		size_t name = eq ? (size_t)(eq - item) : 0;
		uint64_t ns = eq ? threshold_ns(eq + 1, n - name - 1) : threshold_ns(item, n);
		if (!is_bound(ns) || (eq && (name == 0 || name >= sizeof t.slow[0].handler || t.nslow == BS_SLOW_OVERRIDES)) ||
		    (!eq && t.slow_default_ns)) {
			char what[512], bounds[256];
			bounds_text(bounds, sizeof bounds);
			snprintf(what, sizeof what,
			         "not off or a list of THRESHOLD and HANDLER=THRESHOLD (each a bound of the duration buckets: "
			         "%s; up to 16 handlers of 31 bytes): billing.d's thresholds used",
			         bounds);
			say_value(PREFIX "_SLOW", v, what);
			return;
		}
		if (eq) {
			memcpy(t.slow[t.nslow].handler, item, name);
			t.slow[t.nslow].handler[name] = '\0';
			t.slow[t.nslow++].ns = ns;
		} else {
			t.slow_default_ns = ns;
		}
		item += n + (item[n] == ',');
	}
	*s = t;
	say_rules_differ(s, v);
}

/* The length of the name of environment entry e when it begins with
 * BILLING_STAT (followed by "="): the settings, and the names a person
 * typing one of them may have written instead (BILLING_STAT_DIR,
 * BILLING_STATSDIR, BILLING_STATS_DIRECTORY); else 0. */
static size_t stats_name(const char *e)
{
	size_t len = strcspn(e, "=");
	if (e[len] != '=' || strncmp(e, PREFIX, strlen(PREFIX) - 1) != 0)
		return 0;
	return len;
}

/* The names that are no setting, said in one line (the first named, the
 * others counted).  One may be a misspelt BILLING_STATS_DIR: without a
 * BILLING_STATS_DIR taken, the segment would go to the default directory
 * the user's other services share, where readers sum it with theirs (a
 * figure that may be wrong), so the stats are off; with one, the segment
 * goes where it was meant to and the names are only said. */
static void say_unknown(bs_settings_t *s, const char *first, size_t n, int dir_taken)
{
	char name[80], what[400], more[64] = "";
	size_t len = strcspn(first, "=");
	snprintf(name, sizeof name, "%.*s", (int)(len < 64 ? len : 64), first);
	if (n > 1)
		snprintf(more, sizeof more, " (and %zu more such name%s)", n - 1, n > 2 ? "s" : "");
	snprintf(what, sizeof what,
	         "not a setting of the stats (" PREFIX ", " PREFIX "_DIR, _GROUP, _THREADS, _KEEP, _SLOW, _SLOW_KEEP, _NATIVE)%s: %s",
	         more,
	         dir_taken ? "ignored" : "stats off (a misspelt " PREFIX "_DIR would put the segment in the default "
	                                 "directory, summed with the other services')");
	if (!dir_taken)
		s->off = 1;
	say_value(name, first + len + 1, what);
}

void bs_settings_read(bs_settings_t *s)
{
	static const struct {
		const char *name;
		void (*read)(bs_settings_t *, const char *);
	} known[] = { { PREFIX, read_switch },
		      { PREFIX "_DIR", read_dir },
		      { PREFIX "_GROUP", read_group },
		      { PREFIX "_THREADS", read_threads },
		      { PREFIX "_KEEP", read_keep },
		      { PREFIX "_SLOW", read_slow },
		      { PREFIX "_SLOW_KEEP", read_slow_keep },
		      { PREFIX "_NATIVE", read_native } };
	enum { NKNOWN = sizeof known / sizeof *known };
	int seen[NKNOWN] = { 0 }; /* the first of a name counts, as for getenv() */
	const char *unknown = NULL;
	size_t nunknown = 0;

	memset(s, 0, sizeof *s);
	s->threads = BS_DEFAULT_SLOTS;
	s->keep_seconds = BS_DEFAULT_KEEP_SECONDS;
	s->slow_keep_seconds = BS_DEFAULT_SLOW_KEEP_SECONDS;
	int secure = getauxval(AT_SECURE) != 0, said = 0;
	for (char **e = environ; e && *e; e++) {
		size_t len = stats_name(*e);
		if (!len)
			continue;
		if (secure) {
			if (!said)
				fprintf(stderr,
				        "billing-probes: pid %d: a set-id program: " PREFIX " and " PREFIX "_* (any "
				        "name beginning BILLING_STAT) from its caller's environment ignored, the "
				        "defaults used\n",
				        (int)getpid());
			said = 1;
			continue;
		}
		size_t k = 0;
		while (k < NKNOWN && (strlen(known[k].name) != len || strncmp(*e, known[k].name, len) != 0))
			k++;
		const char *v = *e + len + 1;
		if (k == NKNOWN) {
			if (!unknown)
				unknown = *e;
			nunknown++;
		} else if (!seen[k]++ && *v) { /* set but empty: as unset */
			known[k].read(s, v);
		}
	}
	if (unknown)
		say_unknown(s, unknown, nunknown, s->dir[0] != '\0');
}
