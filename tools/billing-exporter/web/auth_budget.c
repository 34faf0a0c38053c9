/*
 * auth_budget.c -- how many wrong passwords each peer (peer.h) may have
 * checked: BX_AUTH_FAILURE_BURST at once, then one more every
 * BX_AUTH_FAILURE_REFILL_SECONDS; beyond that a new password from it is
 * answered 429 without bcrypt.  A peer with no failure left to refill
 * and no check under way is "clean": its check runs in a bcrypt slot of
 * its own, so a correct first login never queues behind a flood of
 * wrong ones from someone else.
 *
 * A token bucket per peer: a check is charged when it starts and
 * refunded when the password was right, so concurrent guesses cannot
 * overdraw.
 */
#include "peer.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct bucket {
	bx_peer_t peer;
	int used;
	double tokens;  /* checks it may start; BURST when it never failed */
	double updated; /* tokens counted at this time */
	unsigned in_flight;
} bucket_t;

struct bx_auth_budget {
	pthread_mutex_t lock;
	bucket_t buckets[BX_AUTH_PEERS];
};

bx_auth_budget_t *bx_auth_budget_new(void)
{
	bx_auth_budget_t *b = calloc(1, sizeof *b);
	if (b)
		pthread_mutex_init(&b->lock, NULL);
	return b;
}

static void refill(bucket_t *e, double now)
{
	if (now > e->updated)
		e->tokens += (now - e->updated) / BX_AUTH_FAILURE_REFILL_SECONDS;
	if (e->tokens > BX_AUTH_FAILURE_BURST)
		e->tokens = BX_AUTH_FAILURE_BURST;
	e->updated = now;
}

/* p's bucket, else a new one in place of an unused one or of the one
 * quiet longest (none while every bucket has a check under way). */
static bucket_t *bucket_of(bx_auth_budget_t *b, const bx_peer_t *p, double now)
{
	bucket_t *spare = NULL;
	for (size_t i = 0; i < BX_AUTH_PEERS; i++) {
		bucket_t *e = &b->buckets[i];
		if (e->used && bx_peer_same(&e->peer, p))
			return e;
		if (!e->used) {
			if (!spare || spare->used)
				spare = e;
		} else if (!e->in_flight && (!spare || (spare->used && e->updated < spare->updated)))
			spare = e;
	}
	if (spare) {
		spare->peer = *p;
		spare->used = 1;
		spare->tokens = BX_AUTH_FAILURE_BURST;
		spare->updated = now;
		spare->in_flight = 0;
	}
	return spare;
}

int bx_auth_budget_take(bx_auth_budget_t *b, const bx_peer_t *p, double now)
{
	pthread_mutex_lock(&b->lock);
	bucket_t *e = bucket_of(b, p, now);
	int slot = BX_BUDGET_SPENT;
	if (e) {
		refill(e, now);
		if (e->tokens >= 1) {
			slot = e->tokens >= BX_AUTH_FAILURE_BURST && !e->in_flight ? BX_BUDGET_CLEAN : BX_BUDGET_SUSPECT;
			e->tokens -= 1;
			e->in_flight++;
		}
	}
	pthread_mutex_unlock(&b->lock);
	return slot;
}

void bx_auth_budget_done(bx_auth_budget_t *b, const bx_peer_t *p, int ok)
{
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < BX_AUTH_PEERS; i++) {
		bucket_t *e = &b->buckets[i];
		if (e->used && e->in_flight && bx_peer_same(&e->peer, p)) {
			e->in_flight--;
			if (ok && e->tokens + 1 <= BX_AUTH_FAILURE_BURST)
				e->tokens += 1;
			break;
		}
	}
	pthread_mutex_unlock(&b->lock);
}

void bx_auth_budget_free(bx_auth_budget_t *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b);
}
