/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_accept: the plain-text gRPC port's own listener (see the header).
 *
 * One thread waits in epoll on the listening socket, an eventfd (stop) and
 * the connections that have not sent the HTTP/2 preface yet (edge
 * triggered: a partial preface waits for more bytes instead of spinning).
 * The waiting connections are a small array scanned for deadlines; the
 * handed-over ones are an array of (fd, inode) pruned with fstat when the
 * cap is reached and once a second, since gRPC closes them without telling.
 */
/* accept4 and SOCK_NONBLOCK/SOCK_CLOEXEC are Linux (GNU) extensions. */
#define _GNU_SOURCE
#include "gb_rpc_accept.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gb_clock.h"
#include "gb_log.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define PREFACE_LEN 24
#define MAX_WAITING 1024 /* connections waiting for their preface at once */
#define BACKOFF_MIN_MS 10
#define BACKOFF_MAX_MS 1000
#define PRUNE_MS 1000

struct waiting {
  int fd;
  int64_t deadline_ms;
};

struct handed {
  int fd;
  ino_t ino;
};

struct gb_rpc_accept {
  struct gb_rpc_accept_config cfg;
  int lfd, efd, ep;
  pthread_t thread;
  int running;
  struct waiting wait[MAX_WAITING];
  size_t n_wait;
  struct handed *hand;
  size_t n_hand, cap_hand;
  int listening;           /* the listening socket is in the epoll set */
  int64_t resume_ms;       /* when paused: when to try again */
  int backoff_ms;
  int64_t pruned_ms;
  atomic_uint_fast64_t accepted, handed_n, dropped, backoffs, at_cap;
  atomic_size_t open;
};

/* ---- listening ---------------------------------------------------- */

static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len, int *port) {
  const char *colon = strrchr(addr, ':');
  if (!colon)
    return 1;
  char host[64];
  size_t hl = (size_t)(colon - addr);
  const char *h = addr;
  if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
    h++;
    hl -= 2;
  }
  if (hl == 0 || hl >= sizeof(host))
    return 1;
  memcpy(host, h, hl);
  host[hl] = '\0';
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (end == colon + 1 || *end || p < 0 || p > 65535)
    return 1;
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in *sin = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)p);
    *len = sizeof(*sin);
  } else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons((uint16_t)p);
    *len = sizeof(*sin6);
  } else {
    return 1;
  }
  *port = (int)p;
  return 0;
}

int gb_rpc_accept_listen(const char *addr, int *fd, int *port, struct gc_diags *d) {
  struct sockaddr_storage ss;
  socklen_t len = 0;
  if (parse_addr(addr, &ss, &len, port))
    return 1;
  int s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) {
    gc_diags_addf(d, "grpc: cannot create a socket for %s: %s", addr, strerror(errno));
    return GC_EIO;
  }
  int one = 1, zero = 0;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (ss.ss_family == AF_INET6) /* "[::]" takes IPv4 too, as gRPC's own listener does */
    setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  if (bind(s, (struct sockaddr *)&ss, len) != 0 || listen(s, SOMAXCONN) != 0) {
    gc_diags_addf(d, "grpc: cannot listen on %s: %s", addr, strerror(errno));
    close(s);
    return GC_EIO;
  }
  struct sockaddr_storage bound;
  socklen_t blen = sizeof(bound);
  if (getsockname(s, (struct sockaddr *)&bound, &blen) == 0)
    *port = ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
                                             : ((struct sockaddr_in6 *)&bound)->sin6_port);
  *fd = s;
  return 0;
}

/* ---- the connections ---------------------------------------------- */

static void drop_waiting(struct gb_rpc_accept *a, size_t i) {
  epoll_ctl(a->ep, EPOLL_CTL_DEL, a->wait[i].fd, NULL);
  close(a->wait[i].fd);
  a->wait[i] = a->wait[--a->n_wait];
  atomic_fetch_add(&a->dropped, 1);
}

/* Forgets handed-over connections whose descriptor gRPC has closed (or
 * that now names another file). */
static void prune(struct gb_rpc_accept *a, int64_t now) {
  size_t k = 0;
  for (size_t i = 0; i < a->n_hand; i++) {
    struct stat st;
    if (fstat(a->hand[i].fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == a->hand[i].ino)
      a->hand[k++] = a->hand[i];
  }
  a->n_hand = k;
  a->pruned_ms = now;
  atomic_store(&a->open, a->n_wait + a->n_hand);
}

static int remember(struct gb_rpc_accept *a, int fd) {
  if (a->n_hand == a->cap_hand) {
    size_t cap = a->cap_hand ? 2 * a->cap_hand : 64;
    struct handed *h = realloc(a->hand, cap * sizeof(*h));
    if (!h)
      return GC_ENOMEM;
    a->hand = h;
    a->cap_hand = cap;
  }
  struct stat st;
  if (fstat(fd, &st) != 0)
    return GC_EIO;
  a->hand[a->n_hand].fd = fd;
  a->hand[a->n_hand].ino = st.st_ino;
  a->n_hand++;
  return 0;
}

/* Looks at what a waiting connection sent: 1 handed over, 0 keep
 * waiting, -1 dropped. */
static int check_preface(struct gb_rpc_accept *a, size_t i) {
  char buf[PREFACE_LEN];
  ssize_t n = recv(a->wait[i].fd, buf, sizeof(buf), MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return 0;
  if (n <= 0 || memcmp(buf, PREFACE, (size_t)n)) {
    drop_waiting(a, i); /* closed, reset, or not HTTP/2 */
    return -1;
  }
  if (n < PREFACE_LEN)
    return 0;
  int fd = a->wait[i].fd;
  epoll_ctl(a->ep, EPOLL_CTL_DEL, fd, NULL);
  a->wait[i] = a->wait[--a->n_wait];
  if (remember(a, fd) < 0) {
    close(fd);
    atomic_fetch_add(&a->dropped, 1);
    return -1;
  }
  a->cfg.hand(a->cfg.arg, fd);
  atomic_fetch_add(&a->handed_n, 1);
  return 1;
}

static void set_listening(struct gb_rpc_accept *a, int on) {
  if (a->listening == on)
    return;
  struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.fd = a->lfd};
  epoll_ctl(a->ep, EPOLL_CTL_MOD, a->lfd, &ev);
  a->listening = on;
}

static void pause_for(struct gb_rpc_accept *a, int64_t now, int ms) {
  set_listening(a, 0);
  a->resume_ms = now + ms;
}

/* Accepts what the backlog holds, within the cap. */
static void accept_some(struct gb_rpc_accept *a, int64_t now) {
  for (int k = 0; k < 64; k++) {
    if (a->n_wait + a->n_hand >= (size_t)a->cfg.max_connections) {
      prune(a, now);
      if (a->n_wait + a->n_hand >= (size_t)a->cfg.max_connections || a->n_wait == MAX_WAITING) {
        atomic_fetch_add(&a->at_cap, 1);
        pause_for(a, now, 100);
        return;
      }
    }
    if (a->n_wait == MAX_WAITING) {
      pause_for(a, now, 100);
      return;
    }
    int fd = accept4(a->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        /* Out of descriptors: the connection waits in the backlog, and
         * accepting resumes once some are free (gRPC's own listener would
         * have stopped for good here). */
        if (atomic_fetch_add(&a->backoffs, 1) == 0 || a->backoff_ms == BACKOFF_MAX_MS)
          gb_log(GB_LOG_WARN, "grpc: out of descriptors, accepting paused", "error",
                 strerror(errno), NULL);
        a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : BACKOFF_MIN_MS;
        if (a->backoff_ms > BACKOFF_MAX_MS)
          a->backoff_ms = BACKOFF_MAX_MS;
        pause_for(a, now, a->backoff_ms);
      }
      return; /* EAGAIN: the backlog is empty; others: try on the next event */
    }
    a->backoff_ms = 0;
    atomic_fetch_add(&a->accepted, 1);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.fd = fd};
    if (epoll_ctl(a->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
      close(fd);
      atomic_fetch_add(&a->dropped, 1);
      continue;
    }
    a->wait[a->n_wait].fd = fd;
    a->wait[a->n_wait].deadline_ms = now + a->cfg.handshake_timeout_ms;
    a->n_wait++;
    check_preface(a, a->n_wait - 1); /* it may have come with the connection */
  }
}

static int next_timeout(const struct gb_rpc_accept *a, int64_t now) {
  int64_t until = now + PRUNE_MS;
  if (!a->listening && a->resume_ms < until)
    until = a->resume_ms;
  for (size_t i = 0; i < a->n_wait; i++)
    if (a->wait[i].deadline_ms < until)
      until = a->wait[i].deadline_ms;
  return until <= now ? 0 : (int)(until - now);
}

static void *accept_main(void *arg) {
  struct gb_rpc_accept *a = arg;
  struct epoll_event evs[64];
  for (;;) {
    int n = epoll_wait(a->ep, evs, 64, next_timeout(a, gb_clock_ms()));
    int64_t now = gb_clock_ms();
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == a->efd)
        return NULL;
      if (fd == a->lfd)
        continue; /* accepted below */
      for (size_t w = 0; w < a->n_wait; w++)
        if (a->wait[w].fd == fd) {
          check_preface(a, w);
          break;
        }
    }
    for (size_t w = 0; w < a->n_wait;)
      if (a->wait[w].deadline_ms <= now)
        drop_waiting(a, w); /* no preface in time: as gRPC's handshake timeout */
      else
        w++;
    if (!a->listening && now >= a->resume_ms)
      set_listening(a, 1);
    if (a->listening)
      accept_some(a, now);
    if (now - a->pruned_ms >= PRUNE_MS)
      prune(a, now);
  }
}

/* ---- life ---------------------------------------------------------- */

static int default_cap(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
      rl.rlim_cur > 1000000)
    return 1000000;
  long cap = (long)rl.rlim_cur - GB_RPC_ACCEPT_RESERVE;
  return cap < 16 ? 16 : (int)cap;
}

int gb_rpc_accept_start(int listen_fd, const struct gb_rpc_accept_config *cfg,
                        struct gb_rpc_accept **out, struct gc_diags *d) {
  *out = NULL;
  if (!cfg->hand) {
    close(listen_fd);
    gc_diags_addf(d, "grpc: the acceptor needs a hand-over function");
    return GC_EUSAGE;
  }
  struct gb_rpc_accept *a = calloc(1, sizeof(*a));
  if (!a) {
    close(listen_fd);
    return GC_ENOMEM;
  }
  a->cfg = *cfg;
  if (a->cfg.max_connections <= 0)
    a->cfg.max_connections = default_cap();
  if (a->cfg.handshake_timeout_ms <= 0)
    a->cfg.handshake_timeout_ms = 10000;
  a->lfd = listen_fd;
  a->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  a->ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event le = {.events = EPOLLIN, .data.fd = a->lfd};
  struct epoll_event ee = {.events = EPOLLIN, .data.fd = a->efd};
  if (a->efd < 0 || a->ep < 0 || epoll_ctl(a->ep, EPOLL_CTL_ADD, a->lfd, &le) != 0 ||
      epoll_ctl(a->ep, EPOLL_CTL_ADD, a->efd, &ee) != 0) {
    gc_diags_addf(d, "grpc: cannot set up the acceptor: %s", strerror(errno));
    gb_rpc_accept_stop(a);
    return GC_EIO;
  }
  a->listening = 1;
  a->pruned_ms = gb_clock_ms();
  if (pthread_create(&a->thread, NULL, accept_main, a) != 0) {
    gc_diags_addf(d, "grpc: cannot start the acceptor thread");
    gb_rpc_accept_stop(a);
    return GC_ENOMEM;
  }
  a->running = 1;
  *out = a;
  return 0;
}

void gb_rpc_accept_stop(struct gb_rpc_accept *a) {
  if (!a)
    return;
  if (a->running) {
    uint64_t one = 1;
    if (write(a->efd, &one, sizeof(one)) < 0)
      gb_log(GB_LOG_WARN, "grpc: cannot wake the acceptor", "error", strerror(errno), NULL);
    pthread_join(a->thread, NULL);
  }
  while (a->n_wait)
    drop_waiting(a, 0);
  if (a->ep >= 0)
    close(a->ep);
  if (a->efd >= 0)
    close(a->efd);
  close(a->lfd);
  free(a->hand);
  free(a);
}
