/*
 * conn_limits.h -- which HTTP connections the exporter takes: at most
 * per_peer from one peer (peer.h: a remote address, or a local user
 * whatever loopback addresses it uses), and the last eighth of the total
 * kept for peers holding fewer than BX_CONN_QUIET_PEER connections (a
 * health check, a Prometheus scrape), so one flooding peer can take
 * neither the whole server nor that reserve.
 */
#ifndef BX_CONN_LIMITS_H
#define BX_CONN_LIMITS_H

#include "peer.h"

#define BX_CONN_RESERVE_DIVISOR 8 /* the reserve: total / 8 */
#define BX_CONN_QUIET_PEER 4      /* a peer with fewer may use the reserve */

typedef struct bx_conn_limits bx_conn_limits_t;

/* NULL when out of memory. */
bx_conn_limits_t *bx_conn_limits_new(unsigned total, unsigned per_peer);
/* 1: p's new connection is taken and counted until released; 0: refused. */
int bx_conn_limits_admit(bx_conn_limits_t *l, const bx_peer_t *p);
void bx_conn_limits_release(bx_conn_limits_t *l, const bx_peer_t *p);
void bx_conn_limits_free(bx_conn_limits_t *l);

#endif /* BX_CONN_LIMITS_H */
