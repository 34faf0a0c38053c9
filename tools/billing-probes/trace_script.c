/*
 * trace_script.c -- rewrite a bpftrace script's USDT specs for the
 * modules of one process.
 *
 * A bpftrace program is a list of clauses "SPECS [/PREDICATE/] { BODY }"
 * (plus preprocessor lines and comments).  The scanner walks the text at
 * brace depth 0, skipping comments, strings and bodies; the text between
 * one clause's closing brace and the next '{' or '/' predicate is the spec
 * list, split at commas.  Only specs of the form usdt::PROVIDER:NAME are
 * touched; a NAME with glob characters expands to every matching probe.
 */
#include "trace_script.h"
#include "text_buf.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Past a comment or string starting at p (which must start one), or p. */
static const char *skip_lexical(const char *p, const char *end, int *bad)
{
	if (p + 1 < end && p[0] == '/' && p[1] == '*') {
		const char *close = p + 2;
		while (close + 1 < end && !(close[0] == '*' && close[1] == '/'))
			close++;
		if (close + 1 >= end) {
			*bad = 1;
			return end;
		}
		return close + 2;
	}
	if (p + 1 < end && p[0] == '/' && p[1] == '/') {
		while (p < end && *p != '\n')
			p++;
		return p;
	}
	if (*p == '"') {
		for (p++; p < end && *p != '"'; p++)
			if (*p == '\\' && p + 1 < end)
				p++;
		if (p >= end) {
			*bad = 1;
			return end;
		}
		return p + 1;
	}
	return p;
}

/* Past the block starting at the '{' at p. */
static const char *skip_block(const char *p, const char *end, int *bad)
{
	int depth = 0;
	while (p < end) {
		const char *q = skip_lexical(p, end, bad);
		if (q != p) {
			p = q;
			continue;
		}
		if (*p == '{')
			depth++;
		else if (*p == '}' && --depth == 0)
			return p + 1;
		p++;
	}
	*bad = 1;
	return end;
}

/* Past the predicate "/ ... /" starting at p. */
static const char *skip_predicate(const char *p, const char *end, int *bad)
{
	for (p++; p < end; p++) {
		const char *q = skip_lexical(p, end, bad);
		if (q != p) {
			p = q - 1;
			continue;
		}
		if (*p == '/')
			return p + 1;
	}
	*bad = 1;
	return end;
}

/* A '/' opens a predicate when blank space precedes it; inside a spec it
 * is part of a path ("usdt:/usr/bin/x:p:n", "uprobe:/lib/libc.so.6:f"). */
static int is_predicate_start(const char *start, const char *p, const char *end)
{
	if (*p != '/' || (p + 1 < end && (p[1] == '*' || p[1] == '/')))
		return 0;
	return p == start || p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n' || p[-1] == '\r';
}

static int is_word_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

int bp_trace_path_is_safe(const char *path)
{
	if (!path || path[0] != '/' || strlen(path) > 4000)
		return 0;
	for (const char *c = path; *c; c++) {
		if (!is_word_byte(*c) && *c != '/' && *c != '.' && *c != '-')
			return 0;
		if (c[0] == '/' && (c[1] == '/' || (c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0'))))
			return 0;
	}
	return 1;
}

int bp_trace_name_is_safe(const char *name)
{
	if (!name || !*name || strlen(name) > 255)
		return 0;
	for (const char *c = name; *c; c++)
		if (!is_word_byte(*c))
			return 0;
	return 1;
}

static int has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* One resolution under way. */
typedef struct {
	const bp_trace_target_t *target;
	unsigned char *used;
	bp_trace_counts_t *counts;
} resolution_t;

/* Has a site before i of module m (any module when m is (size_t)-1) the
 * same provider and name as site i? */
static int named_before(const pr_probe_set_t *set, size_t i, size_t m)
{
	const pr_probe_t *p = &set->probes[i];
	for (size_t j = 0; j < i; j++)
		if ((m == (size_t)-1 || set->probes[j].module == m) && strcmp(set->probes[j].provider, p->provider) == 0 &&
		    strcmp(set->probes[j].name, p->name) == 0)
			return 1;
	return 0;
}

/* How many sites of module m (any module when m is (size_t)-1) bear
 * site i's provider and name. */
static size_t sites_named(const pr_probe_set_t *set, size_t i, size_t m)
{
	size_t n = 0;
	for (size_t j = 0; j < set->probe_count; j++)
		n += (m == (size_t)-1 || set->probes[j].module == m) &&
		     strcmp(set->probes[j].provider, set->probes[i].provider) == 0 &&
		     strcmp(set->probes[j].name, set->probes[i].name) == 0;
	return n;
}

/* Write one spec (",\n" before all but the clause's first) and count it. */
static void put_spec(resolution_t *r, pr_buf_t *out, int first, const char *path, const pr_probe_t *p, size_t sites)
{
	if (!first)
		pr_buf_puts(out, ",\n");
	pr_buf_printf(out, "usdt:%s:%s:%s", path, p->provider, p->name);
	if (r->counts) {
		r->counts->specs++;
		r->counts->sites += sites;
	}
}

/* Expand one spec (trimmed, n bytes) into out; returns how many specs it
 * became (0: dropped). */
static int expand_spec(resolution_t *r, const char *spec, size_t n, pr_buf_t *out, int first, int *passthrough)
{
	const pr_probe_set_t *set = r->target->set;
	char text[512];
	if (n >= sizeof text)
		n = sizeof text - 1;
	memcpy(text, spec, n);
	text[n] = '\0';
	if (strncmp(text, "usdt::", 6) != 0 || !strchr(text + 6, ':')) {
		if (!first)
			pr_buf_puts(out, ",\n");
		pr_buf_puts(out, text);
		(*passthrough)++;
		if (r->counts) {
			r->counts->specs++;
			r->counts->sites++;
			r->counts->unknown |= has_glob(text);
			r->counts->other_kinds |= strcmp(text, "BEGIN") != 0 && strcmp(text, "END") != 0 &&
			                          strncmp(text, "interval:", 9) != 0;
		}
		return 1;
	}
	char *provider = text + 6;
	char *colon = strchr(provider, ':');
	*colon = '\0';
	const char *name = colon + 1;
	int made = 0, left_out = 0;
	for (size_t m = 0; m < set->module_count; m++) {
		int module_safe = bp_trace_path_is_safe(set->modules[m].attach_path);
		/* each probe name once per module, in the set's order */
		for (size_t i = 0; i < set->probe_count; i++) {
			const pr_probe_t *p = &set->probes[i];
			if (p->module != m || strcmp(p->provider, provider) != 0)
				continue;
			if (has_glob(name) ? fnmatch(name, p->name, 0) != 0 : strcmp(name, p->name) != 0)
				continue;
			if (!module_safe || !bp_trace_name_is_safe(p->name)) {
				/* never written into the program; the caller says why */
				if (r->used && r->used[i] != BP_TRACE_ATTACHED)
					r->used[i] = BP_TRACE_LEFT_OUT;
				left_out++;
				continue;
			}
			if (r->used)
				r->used[i] = BP_TRACE_ATTACHED;
			/* by -p: one spec without a path for every module's sites */
			if (named_before(set, i, r->target->by_pid ? (size_t)-1 : m))
				continue;
			if (r->target->by_pid)
				put_spec(r, out, first && !made, "", p, sites_named(set, i, (size_t)-1));
			else
				put_spec(r, out, first && !made, set->modules[m].attach_path, p, sites_named(set, i, m));
			made++;
		}
	}
	if (!made && !left_out && r->target->dropped) {
		*colon = ':';
		r->target->dropped(text, r->target->ctx);
	}
	return made;
}

/* Rewrite a spec list [s, e) into out.  Returns the number of specs. */
static int rewrite_specs(resolution_t *r, const char *s, const char *e, pr_buf_t *out, int *passthrough)
{
	int made = 0;
	while (s < e) {
		const char *comma = s;
		while (comma < e && *comma != ',')
			comma++;
		const char *a = s, *b = comma;
		while (a < b && (*a == ' ' || *a == '\t' || *a == '\n' || *a == '\r'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\n' || b[-1] == '\r'))
			b--;
		if (b > a)
			made += expand_spec(r, a, (size_t)(b - a), out, made == 0, passthrough);
		s = comma < e ? comma + 1 : e;
	}
	return made;
}

/* "pid == A" or "(pid == A || pid == B ...)" into out.  With the kernel's
 * BTF, each PID also names its process's start time (the kernel's
 * start_boottime in /proc/PID/stat's clock ticks), so a process that gets
 * a traced PID after its owner exits is never counted. */
static void put_pid_filter(pr_buf_t *out, const int *pids, size_t npids)
{
	char one[160];
	long ticks = sysconf(_SC_CLK_TCK);
	int btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0 && ticks > 0;
	if (npids > 1)
		pr_buf_puts(out, "(");
	for (size_t i = 0; i < npids; i++) {
		unsigned long long start = btf ? pr_process_start_time((pid_t)pids[i]) : 0;
		if (start)
			snprintf(one, sizeof one,
			         "%s(pid == %d && curtask->group_leader->start_boottime / %ld == %llu)", i ? " || " : "",
			         pids[i], 1000000000L / ticks, start);
		else
			snprintf(one, sizeof one, "%spid == %d", i ? " || " : "", pids[i]);
		pr_buf_puts(out, one);
	}
	if (npids > 1)
		pr_buf_puts(out, ")");
}

char *bp_trace_resolve(const char *text, size_t len, const bp_trace_target_t *target, unsigned char *used,
                       bp_trace_counts_t *counts, char *err, size_t errlen)
{
	resolution_t r = { target, used, counts };
	const int *pids = target->pids;
	size_t npids = target->npids;
	pr_buf_t out = { 0 };
	if (counts)
		memset(counts, 0, sizeof *counts);
	const char *p = text, *end = text + len;
	int bad = 0;
	/* A "#!" first line cannot go through -e: keep the line, blank. */
	if (len >= 2 && p[0] == '#' && p[1] == '!') {
		while (p < end && *p != '\n')
			p++;
	}
	while (p < end && !bad) {
		/* Leading blanks, comments and preprocessor lines pass through. */
		const char *q = skip_lexical(p, end, &bad);
		if (q != p) {
			pr_buf_append(&out, p, (size_t)(q - p));
			p = q;
			continue;
		}
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
			pr_buf_append(&out, p, 1);
			p++;
			continue;
		}
		if (*p == '#') {
			const char *eol = p;
			while (eol < end && *eol != '\n')
				eol++;
			pr_buf_append(&out, p, (size_t)(eol - p));
			p = eol;
			continue;
		}
		/* A clause: specs up to '{' or a predicate's '/'. */
		const char *specs = p;
		while (p < end && *p != '{' && !is_predicate_start(specs, p, end))
			p++;
		if (p >= end) {
			bad = 1;
			break;
		}
		const char *specs_end = p;
		const char *clause_end = p;
		if (*p == '/')
			clause_end = skip_predicate(p, end, &bad);
		while (!bad && clause_end < end && *clause_end != '{') {
			const char *q2 = skip_lexical(clause_end, end, &bad);
			clause_end = q2 != clause_end ? q2 : clause_end + 1;
		}
		if (bad || clause_end >= end) {
			bad = 1;
			break;
		}
		clause_end = skip_block(clause_end, end, &bad);
		pr_buf_t specs_out = { 0 };
		int passthrough = 0;
		int made = rewrite_specs(&r, specs, specs_end, &specs_out, &passthrough);
		if (specs_out.failed)
			out.failed = 1;
		if (made > 0) {
			pr_buf_append(&out, specs_out.data, specs_out.len);
			pr_buf_append(&out, " ", 1);
			if (npids > 0 && passthrough == 0) {
				/* attached by path: keep to these processes */
				pr_buf_puts(&out, "/");
				put_pid_filter(&out, pids, npids);
				if (*specs_end == '/') {
					const char *pred_end = skip_predicate(specs_end, end, &bad);
					pr_buf_puts(&out, " && (");
					pr_buf_append(&out, specs_end + 1, (size_t)(pred_end - 1 - (specs_end + 1)));
					pr_buf_puts(&out, ")/");
					pr_buf_append(&out, pred_end, (size_t)(clause_end - pred_end));
				} else {
					pr_buf_puts(&out, "/ ");
					pr_buf_append(&out, specs_end, (size_t)(clause_end - specs_end));
				}
			} else {
				pr_buf_append(&out, specs_end, (size_t)(clause_end - specs_end));
			}
		} else {
			pr_buf_puts(&out, "/* dropped: no module of the process carries its probes */");
		}
		free(specs_out.data);
		p = clause_end;
	}
	if (bad) {
		snprintf(err, errlen, "cannot read the script: an unterminated comment, string, predicate or block");
		free(out.data);
		return NULL;
	}
	if (out.failed || !out.data) {
		if (!out.failed && !out.data) {
			out.data = calloc(1, 1);
			if (out.data)
				return out.data;
		}
		snprintf(err, errlen, "out of memory");
		free(out.data);
		return NULL;
	}
	return out.data;
}
