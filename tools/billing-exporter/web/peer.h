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

#endif /* BX_PEER_H */
