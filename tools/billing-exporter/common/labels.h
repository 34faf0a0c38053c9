/*
 * labels.h -- label values made safe for the exposition: escaped bytes and
 * a cap on distinct values per label.
 */
#ifndef BX_LABELS_H
#define BX_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "billing_metrics_layout.h"

/* At most this many distinct values per (map, label) besides its known
 * ones (billing.d's "@@label-values"); later ones are reported as
 * BX_LABEL_OTHER. */
#define BX_LABEL_CAP BX_LABEL_VALUES
/* The value shown for folded ones: one object, so a row's label can be
 * told folded by its address (a literal "other" sent by a service is a
 * value like any other). */
extern const char bx_label_other[];
#define BX_LABEL_OTHER bx_label_other

/* Write the bytes of src (up to its NUL or n bytes) into dst as a label
 * value that needs no further escaping except the exposition's own
 * (backslash, quote): valid UTF-8 printable text is kept; control bytes,
 * backslashes and bytes that are not valid UTF-8 become the four
 * characters \xNN.  dst receives at most dstlen - 1 bytes and a NUL. */
void bx_label_sanitize(const char *src, size_t n, char *dst, size_t dstlen);

/* A key field's value as label text in buf: a string field's n bytes
 * (text) sanitized, an int field's value (text NULL) in decimal. */
#define BX_LABEL_TEXT (4 * BX_LABEL_BYTES_MAX + 1)
char *bx_label_text(const char *text, size_t n, long long value, char buf[BX_LABEL_TEXT]);

/* The distinct values seen per label slot; one per map key field. */
typedef struct bx_label_slot {
	char *values[BX_LABEL_CAP];
	size_t count;
	uint64_t *folded; /* set of hashes of values folded into "other" */
	size_t folded_count, folded_cap;
} bx_label_slot_t;

/* The label value to show for value: itself when it is one of the
 * field's known values (known, sorted, nknown of them: billing.d's
 * "@@known"), which never take the slot's room; or when it is one of the
 * slot's first BX_LABEL_CAP other values (remembering it when there is
 * room); else BX_LABEL_OTHER, and the value counted as folded once.  A
 * known value is returned as the table's own string. */
const char *bx_label_admit(bx_label_slot_t *slot, const char *const *known, size_t nknown, const char *value);
void bx_label_slot_free(bx_label_slot_t *slot);

#endif /* BX_LABELS_H */
