/*
 * doctor_result.h -- one line of `billing-probes doctor`: a status, a
 * one-line finding and, when not OK, the fix.  Every check fills one.
 */
#ifndef BP_DOCTOR_RESULT_H
#define BP_DOCTOR_RESULT_H

#include <stdio.h>

typedef enum { BP_OK,
	       BP_WARN,
	       BP_FAIL } bp_status_t;

typedef struct bp_check_result {
	const char *name;
	bp_status_t status;
	char finding[512];
	char fix[512];
} bp_check_result_t;

static inline void bp_result_set(bp_check_result_t *r, bp_status_t s, const char *finding, const char *fix)
{
	r->status = s;
	snprintf(r->finding, sizeof r->finding, "%s", finding);
	snprintf(r->fix, sizeof r->fix, "%s", fix ? fix : "");
}

#endif /* BP_DOCTOR_RESULT_H */
