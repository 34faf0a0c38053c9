/*
 * auth_budget.h -- how many wrong passwords each peer (peer.h) may have
 * checked: BX_AUTH_FAILURE_BURST at once, then one more every
 * BX_AUTH_FAILURE_REFILL_SECONDS; beyond that a new password from it is
 * answered 429 without bcrypt.  A peer with no failure left to refill
 * and no check under way is "clean": its check runs in a bcrypt slot of
 * its own, so a correct first login never queues behind a flood of
 * wrong ones from someone else.
 */
#ifndef BX_AUTH_BUDGET_H
#define BX_AUTH_BUDGET_H

#include "peer.h"

#define BX_AUTH_FAILURE_BURST 5
#define BX_AUTH_FAILURE_REFILL_SECONDS 5
#define BX_AUTH_PEERS 1024 /* peers remembered; the longest quiet is forgotten first */

typedef struct bx_auth_budget bx_auth_budget_t;

enum { BX_BUDGET_SPENT = 0,
       BX_BUDGET_CLEAN,
       BX_BUDGET_SUSPECT };

/* NULL when out of memory. */
bx_auth_budget_t *bx_auth_budget_new(void);
/* Before a bcrypt check for p at monotonic time now: BX_BUDGET_SPENT (no
 * check: 429), or the slot it runs in; then bx_auth_budget_done(). */
int bx_auth_budget_take(bx_auth_budget_t *b, const bx_peer_t *p, double now);
/* p's check ended: ok refunds what take charged. */
void bx_auth_budget_done(bx_auth_budget_t *b, const bx_peer_t *p, int ok);
void bx_auth_budget_free(bx_auth_budget_t *b);

#endif /* BX_AUTH_BUDGET_H */
