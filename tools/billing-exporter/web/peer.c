/*
 * peer.c -- bx_peer_of(): the address of a remote client, the owning uid
 * of a loopback client's socket (peer.h says why).
 */
#include "peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* An IPv4 address as a v4 one, an IPv4-mapped IPv6 address included (a
 * dual-stack listener sees v4 clients so). */
static int as_v4(const struct sockaddr_storage *sa, struct in_addr *v4, uint16_t *port)
{
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
		*v4 = s->sin_addr;
		*port = s->sin_port;
		return 1;
	}
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
	if (sa->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		memcpy(&v4->s_addr, s6->sin6_addr.s6_addr + 12, 4);
		*port = s6->sin6_port;
		return 1;
	}
	return 0;
}

/* The uid owning the client's end of a connection on this host: the
 * socket whose own address is peer and whose remote address is local.
 * FOUND with *uid; GONE when the kernel holds that end but no socket owns
 * it any more (the client closed it: a timewait mini-socket, which the
 * kernel reports with uid 0 and inode 0, or an orphan), so its owner is
 * unknown, never root; NOT_FOUND when the kernel has no such end (a remote
 * client). */
enum { FOUND,
       GONE,
       NOT_FOUND };
static int owner_uid(int family, const void *peer, uint16_t peer_port, const void *local, uint16_t local_port,
                     size_t addr_len, uint32_t *uid)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg;
	memset(&msg, 0, sizeof msg);
	msg.nlh.nlmsg_len = sizeof msg;
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST;
	msg.req.sdiag_family = (unsigned char)family;
	msg.req.sdiag_protocol = IPPROTO_TCP;
	msg.req.idiag_states = ~0u;
	msg.req.id.idiag_sport = peer_port;
	msg.req.id.idiag_dport = local_port;
	memcpy(msg.req.id.idiag_src, peer, addr_len);
	memcpy(msg.req.id.idiag_dst, local, addr_len);
	msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

	int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (s < 0)
		return NOT_FOUND;
	struct timeval tv = { 1, 0 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	long buf[2048 / sizeof(long)];
	ssize_t got = -1;
	if (sendto(s, &msg, sizeof msg, 0, (struct sockaddr *)&kernel, sizeof kernel) == (ssize_t)sizeof msg)
		got = recv(s, buf, sizeof buf, 0);
	close(s);
	if (got < (ssize_t)sizeof(struct nlmsghdr))
		return NOT_FOUND;
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
	if (!NLMSG_OK(h, (size_t)got) || h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
		return NOT_FOUND;
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	if (m->idiag_inode == 0)
		return GONE;
	*uid = m->idiag_uid;
	return FOUND;
}

int bx_peer_of(int fd, bx_peer_t *p)
{
	struct sockaddr_storage peer, local;
	socklen_t pl = sizeof peer, ll = sizeof local;
	memset(p, 0, sizeof *p);
	if (getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 || getsockname(fd, (struct sockaddr *)&local, &ll) != 0)
		return -1;
	/* A client on this host is its socket's owner, whichever of the
	 * host's addresses it connects from: the kernel finds its end of the
	 * connection only then. */
	p->kind = BX_PEER_LOCAL_USER;
	struct in_addr pv4, lv4;
	uint16_t pport, lport;
	if (as_v4(&peer, &pv4, &pport) && as_v4(&local, &lv4, &lport)) {
		int owner = owner_uid(AF_INET, &pv4.s_addr, pport, &lv4.s_addr, lport, 4, &p->uid);
		if (owner != NOT_FOUND)
			return owner == FOUND ? 0 : -1;
		if ((ntohl(pv4.s_addr) >> 24) == 127)
			return -1;
		p->kind = BX_PEER_V4;
		memcpy(p->addr, &pv4.s_addr, 4);
		return 0;
	}
	if (peer.ss_family != AF_INET6 || local.ss_family != AF_INET6)
		return -1;
	const struct sockaddr_in6 *p6 = (const struct sockaddr_in6 *)&peer, *l6 = (const struct sockaddr_in6 *)&local;
	int owner = owner_uid(AF_INET6, p6->sin6_addr.s6_addr, p6->sin6_port, l6->sin6_addr.s6_addr,
	                      l6->sin6_port, 16, &p->uid);
	if (owner != NOT_FOUND)
		return owner == FOUND ? 0 : -1;
	if (IN6_IS_ADDR_LOOPBACK(&p6->sin6_addr))
		return -1;
	p->kind = BX_PEER_V6;
	memcpy(p->addr, p6->sin6_addr.s6_addr, 8);
	return 0;
}

int bx_peer_same(const bx_peer_t *a, const bx_peer_t *b)
{
	if (a->kind != b->kind)
		return 0;
	if (a->kind == BX_PEER_LOCAL_USER)
		return a->uid == b->uid;
	return memcmp(a->addr, b->addr, sizeof a->addr) == 0;
}
