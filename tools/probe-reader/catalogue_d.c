/*
 * catalogue_d.c -- provider blocks of a .d file, at run time.
 *
 * `--provider FILE.d` reads a provider file at run time, so
 * check works for any provider (the built-in catalogue, catalogue_builtin.c,
 * is billing.d as the tool was built).  A small tokenizer, a recursive
 * walk of the one construct we need, and a line number in every error.
 */
#include "catalogue_d.h"
#include "text_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum { TOK_END,
	       TOK_IDENT,
	       TOK_PUNCT,
	       TOK_OTHER } tok_kind_t;

typedef struct lexer {
	const char *p, *end;
	int line;
	tok_kind_t kind;
	const char *tok;
	size_t tok_len;
	int tok_line;
	char *err;
	size_t errlen;
	int failed;
} lexer_t;

static void fail(lexer_t *lx, int line, const char *msg, const char *detail)
{
	if (lx->failed)
		return;
	lx->failed = 1;
	if (detail)
		snprintf(lx->err, lx->errlen, "line %d: %s %s", line, msg, detail);
	else
		snprintf(lx->err, lx->errlen, "line %d: %s", line, msg);
}

static int is_ident_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

/* Skip blanks, comments and preprocessor / #pragma lines. */
static void skip_space(lexer_t *lx)
{
	while (lx->p < lx->end) {
		char c = *lx->p;
		if (c == '\n') {
			lx->line++;
			lx->p++;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			lx->p++;
		} else if (c == '#') {
			/* #pragma, #define, #include: D has no other use for '#'. */
			while (lx->p < lx->end && *lx->p != '\n')
				lx->p++;
		} else if (c == '/' && lx->p + 1 < lx->end && lx->p[1] == '*') {
			int start = lx->line;
			lx->p += 2;
			while (lx->p + 1 < lx->end && !(lx->p[0] == '*' && lx->p[1] == '/')) {
				if (*lx->p == '\n')
					lx->line++;
				lx->p++;
			}
			if (lx->p + 1 >= lx->end) {
				fail(lx, start, "unterminated comment", NULL);
				lx->p = lx->end;
				return;
			}
			lx->p += 2;
		} else if (c == '/' && lx->p + 1 < lx->end && lx->p[1] == '/') {
			while (lx->p < lx->end && *lx->p != '\n')
				lx->p++;
		} else {
			return;
		}
	}
}

static void next(lexer_t *lx)
{
	skip_space(lx);
	lx->tok = lx->p;
	lx->tok_line = lx->line;
	if (lx->failed || lx->p >= lx->end) {
		lx->kind = TOK_END;
		lx->tok_len = 0;
		return;
	}
	if (is_ident_char(*lx->p, 1)) {
		while (lx->p < lx->end && is_ident_char(*lx->p, 0))
			lx->p++;
		lx->kind = TOK_IDENT;
	} else if (strchr("{}();,*", *lx->p)) {
		lx->p++;
		lx->kind = TOK_PUNCT;
	} else if ((unsigned char)*lx->p < 0x20 || (unsigned char)*lx->p >= 0x7f) {
		/* Outside comments a D file is ASCII. */
		char byte[32];
		snprintf(byte, sizeof byte, "0x%02x", (unsigned char)*lx->p);
		fail(lx, lx->line, "unexpected byte", byte);
		lx->kind = TOK_END;
	} else {
		lx->p++;
		lx->kind = TOK_OTHER;
	}
	lx->tok_len = (size_t)(lx->p - lx->tok);
}

static int is_tok(const lexer_t *lx, const char *s)
{
	return lx->kind != TOK_END && lx->tok_len == strlen(s) && memcmp(lx->tok, s, lx->tok_len) == 0;
}

static char *tok_copy(const lexer_t *lx)
{
	char *s = malloc(lx->tok_len + 1);
	if (s) {
		memcpy(s, lx->tok, lx->tok_len);
		s[lx->tok_len] = '\0';
	}
	return s;
}

static void describe_tok(const lexer_t *lx, char *buf, size_t n)
{
	if (lx->kind == TOK_END)
		snprintf(buf, n, "end of file");
	else if (lx->kind == TOK_OTHER && ((unsigned char)lx->tok[0] < 0x20 || (unsigned char)lx->tok[0] >= 0x7f))
		snprintf(buf, n, "byte 0x%02x", (unsigned char)lx->tok[0]);
	else
		snprintf(buf, n, "'%.*s'", (int)(lx->tok_len > 40 ? 40 : lx->tok_len), lx->tok);
}

static int expect(lexer_t *lx, const char *what)
{
	if (is_tok(lx, what)) {
		next(lx);
		return 0;
	}
	char got[64], msg[96];
	describe_tok(lx, got, sizeof got);
	snprintf(msg, sizeof msg, "expected '%s', found", what);
	fail(lx, lx->tok_line, msg, got);
	return -1;
}

/* The width of one argument's type from its tokens, as sys/sdt.h records
 * it on this host: pointers and longs at their host size.  0: unknown. */
typedef struct arg_type {
	int pointer, longs, ints, shorts, chars, other;
} arg_type_t;

static void note_type_token(const lexer_t *lx, arg_type_t *t)
{
	if (is_tok(lx, "*"))
		t->pointer = 1;
	else if (is_tok(lx, "long"))
		t->longs++;
	else if (is_tok(lx, "int"))
		t->ints++;
	else if (is_tok(lx, "short"))
		t->shorts++;
	else if (is_tok(lx, "char"))
		t->chars++;
	else if (is_tok(lx, "unsigned") || is_tok(lx, "signed") || is_tok(lx, "const") || is_tok(lx, "volatile")) {
		/* qualifiers say nothing of the width */
	} else if (lx->kind == TOK_IDENT) {
		/* a named argument ("unsigned long long id") leaves one extra
		 * identifier: only a second unknown word makes the type unknown */
		t->other++;
	}
}

static int type_width(const arg_type_t *t)
{
	if (t->pointer)
		return (int)sizeof(void *);
	if (t->other > 1 || (t->other == 1 && !(t->longs || t->ints || t->shorts || t->chars)))
		return 0; /* a typedef: width unknown */
	if (t->longs >= 2)
		return (int)sizeof(long long);
	if (t->longs == 1)
		return (int)sizeof(long);
	if (t->shorts)
		return (int)sizeof(short);
	if (t->chars)
		return 1;
	if (t->ints)
		return (int)sizeof(int);
	return 0;
}

/* "(type, type, ...)" after the probe name: count the arguments and note
 * each one's width in sizes (at most PR_CATALOGUE_MAX_ARGS). */
static int count_args(lexer_t *lx, int *sizes)
{
	arg_type_t type;
	memset(&type, 0, sizeof type);
	int start_line = lx->tok_line;
	if (expect(lx, "(") != 0)
		return -1;
	int nargs = 0, tokens_in_arg = 0, only_void = 1, depth = 0;
	for (;;) {
		if (lx->kind == TOK_END) {
			fail(lx, start_line, "unterminated argument list", NULL);
			return -1;
		}
		if (depth == 0 && (is_tok(lx, ",") || is_tok(lx, ")"))) {
			int closing = is_tok(lx, ")");
			if (tokens_in_arg == 0 && (!closing || nargs > 0)) {
				fail(lx, lx->tok_line, "empty argument type in probe declaration", NULL);
				return -1;
			}
			if (tokens_in_arg > 0) {
				if (nargs < PR_CATALOGUE_MAX_ARGS)
					sizes[nargs] = type_width(&type);
				nargs++;
			}
			memset(&type, 0, sizeof type);
			tokens_in_arg = 0;
			next(lx);
			if (closing)
				break;
			continue;
		}
		if (is_tok(lx, "("))
			depth++;
		else if (is_tok(lx, ")"))
			depth--;
		else if (is_tok(lx, ";") || is_tok(lx, "{") || is_tok(lx, "}")) {
			char got[64];
			describe_tok(lx, got, sizeof got);
			fail(lx, lx->tok_line, "unexpected in argument list:", got);
			return -1;
		}
		if (!is_tok(lx, "void"))
			only_void = 0;
		if (depth == 0)
			note_type_token(lx, &type);
		tokens_in_arg++;
		next(lx);
	}
	/* "(void)" declares no arguments, as in C. */
	if (nargs == 1 && only_void)
		nargs = 0;
	return nargs;
}

static int add_probe(pr_catalogue_t *c, const char *provider, char *name, int nargs, const int *sizes, int line)
{
	pr_catalogue_probe_t *probes = realloc(c->probes, (c->count + 1) * sizeof *probes);
	char *prov = strdup(provider);
	if (!probes || !prov) {
		free(prov);
		if (probes)
			c->probes = probes;
		return -1;
	}
	c->probes = probes;
	probes[c->count].provider = prov;
	probes[c->count].name = name;
	probes[c->count].nargs = nargs;
	probes[c->count].line = line;
	memcpy(probes[c->count].arg_size, sizes, sizeof probes[c->count].arg_size);
	c->count++;
	return 0;
}

static int parse_provider(lexer_t *lx, pr_catalogue_t *c)
{
	next(lx); /* "provider" */
	if (lx->kind != TOK_IDENT) {
		char got[64];
		describe_tok(lx, got, sizeof got);
		fail(lx, lx->tok_line, "expected a provider name, found", got);
		return -1;
	}
	char *provider = tok_copy(lx);
	if (!provider) {
		fail(lx, lx->tok_line, "out of memory", NULL);
		return -1;
	}
	next(lx);
	int rc = -1;
	if (expect(lx, "{") != 0)
		goto out;
	while (!lx->failed && !is_tok(lx, "}")) {
		if (!is_tok(lx, "probe")) {
			char got[64];
			describe_tok(lx, got, sizeof got);
			fail(lx, lx->tok_line, "expected 'probe' or '}' in provider block, found", got);
			goto out;
		}
		next(lx);
		if (lx->kind != TOK_IDENT) {
			char got[64];
			describe_tok(lx, got, sizeof got);
			fail(lx, lx->tok_line, "expected a probe name, found", got);
			goto out;
		}
		int line = lx->tok_line;
		char *name = tok_copy(lx);
		if (!name) {
			fail(lx, line, "out of memory", NULL);
			goto out;
		}
		for (size_t i = 0; i < c->count; i++) {
			if (strcmp(c->probes[i].provider, provider) == 0 && strcmp(c->probes[i].name, name) == 0) {
				fail(lx, line, "probe declared twice:", name);
				free(name);
				goto out;
			}
		}
		next(lx);
		int sizes[PR_CATALOGUE_MAX_ARGS] = { 0 };
		int nargs = count_args(lx, sizes);
		if (nargs < 0 || expect(lx, ";") != 0) {
			free(name);
			goto out;
		}
		if (add_probe(c, provider, name, nargs, sizes, line) != 0) {
			free(name);
			fail(lx, line, "out of memory", NULL);
			goto out;
		}
	}
	if (lx->failed)
		goto out;
	next(lx); /* "}" */
	if (expect(lx, ";") != 0)
		goto out;
	rc = 0;
out:
	free(provider);
	return rc;
}

/* Anything else at top level (typedef, struct, inline, translator):
 * skip to the ';' that ends it, across balanced braces. */
static void skip_declaration(lexer_t *lx)
{
	int depth = 0, line = lx->tok_line;
	while (lx->kind != TOK_END) {
		if (is_tok(lx, "{"))
			depth++;
		else if (is_tok(lx, "}"))
			depth--;
		else if (is_tok(lx, ";") && depth <= 0) {
			next(lx);
			return;
		}
		next(lx);
	}
	fail(lx, line, "declaration without a closing ';'", NULL);
}

int pr_catalogue_parse(const char *text, size_t len, pr_catalogue_t *out, char *err, size_t errlen)
{
	lexer_t lx = { text, text + len, 1, TOK_END, text, 0, 1, err, errlen, 0 };
	int providers = 0;
	memset(out, 0, sizeof *out);
	next(&lx);
	while (!lx.failed && lx.kind != TOK_END) {
		if (is_tok(&lx, "provider")) {
			providers++;
			parse_provider(&lx, out);
		} else {
			skip_declaration(&lx);
		}
	}
	if (!lx.failed && providers == 0)
		fail(&lx, lx.line, "no 'provider NAME { ... };' block", NULL);
	if (!lx.failed && out->count == 0)
		fail(&lx, lx.line, "the provider declares no probes", NULL);
	if (lx.failed) {
		pr_catalogue_free(out);
		return -1;
	}
	return 0;
}

int pr_catalogue_load(const char *path, pr_catalogue_t *out, char *err, size_t errlen)
{
	struct stat st;
	memset(out, 0, sizeof *out);
	int fd = pr_open_regular(path, 0, &st, err, errlen);
	if (fd < 0)
		return -1;
	/* A provider file is small; refuse anything that is not. */
	enum { MAX_D_FILE = 4 * 1024 * 1024 };
	size_t len;
	char *text = pr_read_text_fd(fd, MAX_D_FILE, &len);
	if (!text) {
		snprintf(err, errlen, "%s", errno == EFBIG ? "larger than 4 MiB: not a provider file" : strerror(errno));
		return -1;
	}
	int rc = pr_catalogue_parse(text, len, out, err, errlen);
	free(text);
	return rc;
}

void pr_catalogue_free(pr_catalogue_t *c)
{
	for (size_t i = 0; i < c->count; i++) {
		free(c->probes[i].provider);
		free(c->probes[i].name);
	}
	free(c->probes);
	memset(c, 0, sizeof *c);
}

const pr_catalogue_probe_t *pr_catalogue_find(const pr_catalogue_t *cat, const char *provider, const char *name)
{
	for (size_t i = 0; i < cat->count; i++)
		if (strcmp(cat->probes[i].provider, provider) == 0 && (!name || strcmp(cat->probes[i].name, name) == 0))
			return &cat->probes[i];
	return NULL;
}
