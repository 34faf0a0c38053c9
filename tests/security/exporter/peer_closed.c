/*
 * peer_closed.c -- who the exporter says a loopback client is
 * (tools/billing-exporter/web/peer.c) when the client sends and closes its
 * socket before the exporter asks the kernel: the kernel then holds the
 * client's end as a timewait mini-socket and reports it with uid 0 and
 * inode 0.  Such a client is unknown (bx_peer_of() -1: the connection is
 * refused), never uid 0: root's budget of failed logins is root's own.
 * A client whose socket is open is its owner, this program's uid.
 * Looked up at once, the closed end is still an orphaned socket in
 * FIN-WAIT-1 (the kernel keeps its uid, not its inode); DELACK_WAIT_MS
 * later the server's delayed ACK has made it the timewait mini-socket,
 * reported as uid 0: both are unknown.
 *
 *   peer_closed    exit 0 when every answer is right, 1 naming the first wrong one
 *
 * Run by test_peer_unknown.py as the unprivileged test user, on 127.0.0.1
 * and ::1, CONNECTIONS times each, half of the closed ones looked up at
 * once and half after DELACK_WAIT_MS.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "peer.h"

#define CONNECTIONS 20
#define DELACK_WAIT_MS 250 /* past TCP_DELACK_MAX, 200 ms */

static int listener(int family, struct sockaddr_storage *sa, socklen_t *len)
{
	memset(sa, 0, sizeof *sa);
	sa->ss_family = (sa_family_t)family;
	if (family == AF_INET) {
		((struct sockaddr_in *)sa)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)sa)->sin6_addr = in6addr_loopback;
		*len = sizeof(struct sockaddr_in6);
	}
	int fd = socket(family, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, *len) != 0 || listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)sa, len) != 0) {
		perror("peer_closed: listening socket");
		return -1;
	}
	return fd;
}

/* What bx_peer_of() says of one connection whose client closed (or not)
 * before the server accepted it: 1 when right, 0 when wrong (printed). */
static int one(int lfd, const struct sockaddr_storage *sa, socklen_t len, int close_first, const char *where, int i)
{
	int c = socket(sa->ss_family, SOCK_STREAM, 0);
	static const char request[] = "GET /metrics HTTP/1.1\r\nAuthorization: Basic Zm9vOmJhcg==\r\n\r\n";
	if (c < 0 || connect(c, (const struct sockaddr *)sa, len) != 0 ||
	    send(c, request, sizeof request - 1, 0) != (ssize_t)sizeof request - 1) {
		perror("peer_closed: client");
		return 0;
	}
	if (close_first) {
		close(c);
		/* every other connection: the lookup after the server's
		 * delayed ACK of the client's FIN, as a loaded server makes it */
		if (i % 2)
			nanosleep(&(struct timespec){ 0, DELACK_WAIT_MS * 1000000L }, NULL);
	}
	int s = accept(lfd, NULL, NULL);
	if (s < 0) {
		perror("peer_closed: accept");
		return 0;
	}
	bx_peer_t p;
	int rc = bx_peer_of(s, &p);
	close(s);
	if (!close_first)
		close(c);
	int right = close_first ? rc == -1 : rc == 0 && p.kind == BX_PEER_LOCAL_USER && p.uid == (uint32_t)getuid();
	if (!right)
		printf("wrong: %s, connection %d, client %s before the lookup: bx_peer_of %d, kind %d, uid %u "
		       "(want %s)\n",
		       where, i, close_first ? "closed" : "open", rc, p.kind, (unsigned)p.uid,
		       close_first ? "-1: unknown" : "0: this uid");
	return right;
}

int main(void)
{
	static const struct {
		int family;
		const char *where;
	} on[] = { { AF_INET, "127.0.0.1" }, { AF_INET6, "::1" } };
	int wrong = 0;
	for (size_t f = 0; f < sizeof on / sizeof on[0]; f++) {
		struct sockaddr_storage sa;
		socklen_t len;
		int lfd = listener(on[f].family, &sa, &len);
		if (lfd < 0)
			return 2;
		int refused = 0, known = 0;
		for (int i = 0; i < CONNECTIONS; i++) {
			known += one(lfd, &sa, len, 0, on[f].where, i);
			refused += one(lfd, &sa, len, 1, on[f].where, i);
		}
		close(lfd);
		printf("%s: %d of %d open clients named as uid %u; %d of %d clients closed before the lookup "
		       "unknown (refused)\n",
		       on[f].where, known, CONNECTIONS, (unsigned)getuid(), refused, CONNECTIONS);
		wrong += 2 * CONNECTIONS - known - refused;
	}
	return wrong ? 1 : 0;
}
