/*
 * conn_limits.c -- which HTTP connections the exporter takes: at most
 * per_peer from one peer (peer.h: a remote address, or a local user
 * whatever loopback addresses it uses), and the last eighth of the total
 * kept for peers holding fewer than BX_CONN_QUIET_PEER connections (a
 * health check, a Prometheus scrape), so one flooding peer can take
 * neither the whole server nor that reserve.
 *
 * A peer's entry lives while it holds a connection, so the table never
 * holds more entries than the total.
 */
#include "peer.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct held {
	bx_peer_t peer;
	unsigned count; /* 0: a free entry */
} held_t;

struct bx_conn_limits {
	pthread_mutex_t lock;
	unsigned total, per_peer, in_use;
	held_t *held; /* total entries */
};

bx_conn_limits_t *bx_conn_limits_new(unsigned total, unsigned per_peer)
{
	bx_conn_limits_t *l = calloc(1, sizeof *l);
	if (!l || !(l->held = calloc(total ? total : 1, sizeof *l->held))) {
		free(l);
		return NULL;
	}
	pthread_mutex_init(&l->lock, NULL);
	l->total = total;
	l->per_peer = per_peer;
	return l;
}

static held_t *find(bx_conn_limits_t *l, const bx_peer_t *p, held_t **free_entry)
{
	for (unsigned i = 0; i < l->total; i++) {
		if (l->held[i].count && bx_peer_same(&l->held[i].peer, p))
			return &l->held[i];
		if (!l->held[i].count && free_entry && !*free_entry)
			*free_entry = &l->held[i];
	}
	return NULL;
}

int bx_conn_limits_admit(bx_conn_limits_t *l, const bx_peer_t *p)
{
	pthread_mutex_lock(&l->lock);
	held_t *spare = NULL, *e = find(l, p, &spare);
	unsigned mine = e ? e->count : 0;
	unsigned shared = l->total - l->total / BX_CONN_RESERVE_DIVISOR;
	int ok = (mine < l->per_peer && l->in_use < shared) || (mine < BX_CONN_QUIET_PEER && l->in_use < l->total);
	if (ok && !e) {
		e = spare; /* there is one: fewer than total are in use */
		e->peer = *p;
	}
	if (ok) {
		e->count++;
		l->in_use++;
	}
	pthread_mutex_unlock(&l->lock);
	return ok;
}

void bx_conn_limits_release(bx_conn_limits_t *l, const bx_peer_t *p)
{
	pthread_mutex_lock(&l->lock);
	held_t *e = find(l, p, NULL);
	if (e) {
		e->count--;
		l->in_use--;
	}
	pthread_mutex_unlock(&l->lock);
}

void bx_conn_limits_free(bx_conn_limits_t *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	free(l->held);
	free(l);
}
