/*
 * labels.c -- escaping and the cardinality cap of label values.
 *
 * A probe's string arguments come from the traced service, so they may be
 * anything: bytes that are not UTF-8, quotes, newlines, very long, or a
 * new value on every request.  What reaches the exposition must stay
 * valid (promtool check metrics) and bounded (a scrape of a few thousand
 * series, whatever the service does), and a label's known values
 * (billing.d's "@@known") keep their series whatever else it sends.
 */
#include "labels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char bx_label_other[] = "other";

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none.
 * Rejects overlong forms, surrogates and code points past U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

void bx_label_sanitize(const char *src, size_t n, char *dst, size_t dstlen)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t len = strnlen(src, n), o = 0;

	if (dstlen == 0)
		return;
	for (size_t i = 0; i < len;) {
		size_t u = utf8_len(s + i, len - i);
		int plain = u > 1 || (u == 1 && s[i] >= 0x20 && s[i] != 0x7f && s[i] != '\\');
		if (plain) {
			if (o + u >= dstlen)
				break;
			memcpy(dst + o, s + i, u);
			o += u;
			i += u;
		} else {
			if (o + 4 >= dstlen)
				break;
			snprintf(dst + o, 5, "\\x%02x", s[i]);
			o += 4;
			i += 1;
		}
	}
	dst[o] = '\0';
}

char *bx_label_text(const char *text, size_t n, long long value, char buf[BX_LABEL_TEXT])
{
	if (text)
		bx_label_sanitize(text, n, buf, BX_LABEL_TEXT);
	else
		snprintf(buf, BX_LABEL_TEXT, "%d", (int)value);
	return buf;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* An open-addressing set of value hashes (0 marks a free slot), so a
 * service sending a new value per request costs O(1) per row. */
static int folded_insert(uint64_t *set, size_t cap, uint64_t h)
{
	for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
		if (set[i] == h)
			return 0;
		if (set[i] == 0) {
			set[i] = h;
			return 1;
		}
	}
}

static void note_folded(bx_label_slot_t *slot, const char *value)
{
	uint64_t h = fnv1a(value) | 1;

	if (2 * (slot->folded_count + 1) > slot->folded_cap) {
		size_t cap = slot->folded_cap ? slot->folded_cap * 2 : 128;
		uint64_t *set = calloc(cap, sizeof *set);
		if (!set)
			return; /* the count stays low; the exposition stays right */
		for (size_t i = 0; i < slot->folded_cap; i++)
			if (slot->folded[i])
				folded_insert(set, cap, slot->folded[i]);
		free(slot->folded);
		slot->folded = set;
		slot->folded_cap = cap;
	}
	slot->folded_count += (size_t)folded_insert(slot->folded, slot->folded_cap, h);
}

static int cmp_value(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

const char *bx_label_admit(bx_label_slot_t *slot, const char *const *known, size_t nknown, const char *value)
{
	const char *const *k = nknown ? bsearch(value, known, nknown, sizeof *known, cmp_value) : NULL;
	if (k)
		return *k;
	for (size_t i = 0; i < slot->count; i++)
		if (strcmp(slot->values[i], value) == 0)
			return slot->values[i];
	if (slot->count < BX_LABEL_CAP) {
		char *copy = strdup(value);
		if (copy) {
			slot->values[slot->count++] = copy;
			return copy;
		}
	}
	note_folded(slot, value);
	return BX_LABEL_OTHER;
}

void bx_label_slot_free(bx_label_slot_t *slot)
{
	for (size_t i = 0; i < slot->count; i++)
		free(slot->values[i]);
	free(slot->folded);
	memset(slot, 0, sizeof *slot);
}
