/*
 * output.c -- probe listings.
 *
 * Table: one probe per line, columns sized to their content (the module
 * first when the probes come from more than one file), arguments
 * decoded as "TYPE LOCATION" (the type comes from the spec's size and
 * sign: a string argument shows as uint64, the pointer it is), or as
 * "unknown SPEC" when the spec is no form the reader decodes.  JSON:
 * addresses are "0x..." strings, because JSON numbers lose precision
 * above 2^53.  Paths, names and argument specs are other people's text:
 * the table escapes them (term_text.h), JSON escapes them its own way.
 */
#include "output.h"

#include <inttypes.h>
#include <string.h>

#include "term_text.h"

static void format_args(char *buf, size_t n, const pr_probe_t *p)
{
	size_t used = 0;
	buf[0] = '\0';
	if (p->nargs < 0) {
		snprintf(buf, n, "unknown (more than %d arguments)", PR_SDT_MAX_ARGS);
		return;
	}
	for (int i = 0; i < p->nargs && used < n; i++) {
		const pr_sdt_arg_t *a = &p->args[i];
		int w = a->kind == PR_SDT_ARG_UNKNOWN
		            ? snprintf(buf + used, n - used, "%sunknown %s", i ? ", " : "", a->location)
		            : snprintf(buf + used, n - used, "%s%s %s", i ? ", " : "", pr_sdt_arg_type_name(a), a->location);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (p->nargs == 0)
		snprintf(buf, n, "-");
}

static const char *traced_word(const pr_probe_t *p)
{
	if (!p->semaphore)
		return "always"; /* no semaphore: the site is never skipped */
	return p->traced == 1 ? "yes" : p->traced == 0 ? "no"
	                                               : "?";
}

static const char *module_name(const pr_probe_set_t *t, const pr_probe_t *p)
{
	return t->modules[p->module].path;
}

/* Foreign text (term_text.h) left-aligned in a column of width w. */
static void put_column(FILE *out, const char *s, size_t w)
{
	pr_put_escaped(out, s);
	for (size_t k = pr_escaped_width(s); k < w; k++)
		fputc(' ', out);
	fputs("  ", out);
}

/* The MODULE column: a process's probes, or a file's that come from more
 * than one file (the program and the libraries it loads). */
static int show_modules(const pr_probe_set_t *t, const unsigned char *selected)
{
	size_t first = (size_t)-1;
	for (size_t i = 0; i < t->probe_count && !t->is_process; i++)
		if (selected[i] && first == (size_t)-1)
			first = t->probes[i].module;
		else if (selected[i] && t->probes[i].module != first)
			return 1;
	return t->is_process;
}

void bp_print_table(FILE *out, const pr_probe_set_t *t, const unsigned char *selected)
{
	size_t wmod = 6, wprov = 8, wname = 4, l;
	int modules = show_modules(t, selected);
	for (size_t i = 0; i < t->probe_count; i++) {
		if (!selected[i])
			continue;
		const pr_probe_t *p = &t->probes[i];
		if ((l = pr_escaped_width(module_name(t, p))) > wmod) wmod = l;
		if ((l = pr_escaped_width(p->provider)) > wprov) wprov = l;
		if ((l = pr_escaped_width(p->name)) > wname) wname = l;
	}
	if (modules)
		put_column(out, "MODULE", wmod);
	put_column(out, "PROVIDER", wprov);
	put_column(out, "NAME", wname);
	fprintf(out, "%-18s  %-18s  ", "ADDRESS", "SEMAPHORE");
	if (t->is_process)
		fprintf(out, "%-6s  ", "TRACED");
	fprintf(out, "ARGUMENTS\n");
	for (size_t i = 0; i < t->probe_count; i++) {
		if (!selected[i])
			continue;
		const pr_probe_t *p = &t->probes[i];
		char addr[24], sem[24] = "-", args[PR_SDT_MAX_ARGS * (PR_SDT_MAX_LOCATION + 10)];
		snprintf(addr, sizeof addr, "0x%" PRIx64, p->address);
		if (p->semaphore)
			snprintf(sem, sizeof sem, "0x%" PRIx64, p->semaphore);
		format_args(args, sizeof args, p);
		if (modules)
			put_column(out, module_name(t, p), wmod);
		put_column(out, p->provider, wprov);
		put_column(out, p->name, wname);
		fprintf(out, "%-18s  %-18s  ", addr, sem);
		if (t->is_process)
			fprintf(out, "%-6s  ", traced_word(p));
		pr_put_escaped(out, args);
		fputc('\n', out);
	}
}

void bp_json_string(FILE *out, const char *before, const char *s)
{
	fputs(before, out);
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(out, "\\%c", *c);
		else if (*c < 0x20 || *c >= 0x7f)
			fprintf(out, "\\u%04x", *c);
		else
			fputc(*c, out);
	}
	fputc('"', out);
}

static void json_hex_or_null(FILE *out, const char *before, uint64_t v)
{
	fputs(before, out);
	if (v)
		fprintf(out, "\"0x%" PRIx64 "\"", v);
	else
		fputs("null", out);
}

void bp_print_json(FILE *out, const pr_probe_set_t *t, const unsigned char *selected)
{
	bp_json_string(out, "{\"target\": ", t->spec);
	if (t->is_process)
		fprintf(out, ", \"pid\": %d", t->pid);
	else
		fputs(", \"pid\": null", out);
	fputs(", \"probes\": [", out);
	int first = 1;
	for (size_t i = 0; i < t->probe_count; i++) {
		if (!selected[i])
			continue;
		const pr_probe_t *p = &t->probes[i];
		bp_json_string(out, first ? "\n  {\"module\": " : ",\n  {\"module\": ", module_name(t, p));
		first = 0;
		bp_json_string(out, ", \"provider\": ", p->provider);
		bp_json_string(out, ", \"name\": ", p->name);
		json_hex_or_null(out, ", \"address\": ", p->address);
		json_hex_or_null(out, ", \"semaphore\": ", p->semaphore);
		if (t->is_process) {
			json_hex_or_null(out, ", \"runtime_address\": ", p->runtime_address);
			json_hex_or_null(out, ", \"runtime_semaphore\": ", p->runtime_semaphore);
			if (p->semaphore && p->traced >= 0)
				fprintf(out, ", \"semaphore_value\": %u, \"traced\": %s", p->semaphore_value,
				        p->traced ? "true" : "false");
			else
				fputs(", \"semaphore_value\": null, \"traced\": null", out);
		}
		bp_json_string(out, ", \"args\": ", p->arg_string);
		if (p->nargs < 0) {
			fputs(", \"arguments\": null}", out);
			continue;
		}
		fputs(", \"arguments\": [", out);
		for (int a = 0; a < p->nargs; a++) {
			const pr_sdt_arg_t *arg = &p->args[a];
			fprintf(out, "%s{\"size\": %d, \"signed\": %s", a ? ", " : "", arg->size, arg->is_signed ? "true" : "false");
			bp_json_string(out, ", \"type\": ", pr_sdt_arg_type_name(arg));
			bp_json_string(out, ", \"kind\": ", pr_sdt_arg_kind_name(arg->kind));
			bp_json_string(out, ", \"location\": ", arg->location);
			fputc('}', out);
		}
		fputs("]}", out);
	}
	fputs(first ? "]}\n" : "\n]}\n", out);
}
