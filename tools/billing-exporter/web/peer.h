/*
 * peer.h -- who is on the other end of an HTTP connection, as the kernel
 * says: a client on this host (loopback or any of the host's addresses) is
 * the local user that owns its socket (the kernel's record of the socket,
 * asked over NETLINK_SOCK_DIAG: SO_PEERCRED knows nothing of TCP), whatever
 * address it connects from; a remote client is its address (an IPv6
 * client its /64, which one host is usually given whole).  The connection limits and the budget of
 * failed logins count per peer.
 */
#ifndef BX_PEER_H
#define BX_PEER_H

#include <stdint.h>

typedef struct bx_peer {
	unsigned char kind;     /* BX_PEER_* */
	unsigned char addr[16]; /* BX_PEER_V4: 4 bytes; BX_PEER_V6: the /64 */
	uint32_t uid;           /* BX_PEER_LOCAL_USER */
} bx_peer_t;

enum { BX_PEER_UNKNOWN = 0,
       BX_PEER_V4,
       BX_PEER_V6,
       BX_PEER_LOCAL_USER };

/* The peer of connected TCP socket fd.  0, or -1 when the kernel cannot
 * say (the client already gone: its end closed, which the kernel reports
 * with uid 0; or a loopback client whose socket is not found): such a
 * connection is refused rather than counted as nobody, or as root. */
int bx_peer_of(int fd, bx_peer_t *p);

int bx_peer_same(const bx_peer_t *a, const bx_peer_t *b);

/* --- connections per peer (conn_limits.c) -------------------------------- */

#define BX_CONN_RESERVE_DIVISOR 8 /* the reserve: total / 8 */
#define BX_CONN_QUIET_PEER 4      /* a peer with fewer may use the reserve */

typedef struct bx_conn_limits bx_conn_limits_t;

/* NULL when out of memory. */
bx_conn_limits_t *bx_conn_limits_new(unsigned total, unsigned per_peer);
/* 1: p's new connection is taken and counted until released; 0: refused. */
int bx_conn_limits_admit(bx_conn_limits_t *l, const bx_peer_t *p);
void bx_conn_limits_release(bx_conn_limits_t *l, const bx_peer_t *p);
void bx_conn_limits_free(bx_conn_limits_t *l);

/* --- failed logins per peer (auth_budget.c) ------------------------------ */

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

#endif /* BX_PEER_H */
