// The Carrier network's framing under toxcore: see cshim_toxcore.h. The
// Swift side holds the same rules as pure code with its tests against real
// captures (CarrierWire's CarrierFraming); this is their form at the socket.
#include "cshim_toxcore.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

// ---- toxcore 0.2.18's private types, as its headers define them ----
// (tox_private.h: Tox_System; crypto_core.h: Random; network.h: Network).
// Only this layout is mirrored: cshim_carrier_system() refuses any other
// toxcore version.

typedef struct Network_Addr {
    struct sockaddr_storage addr;
    size_t size;
} Network_Addr;

typedef struct Net_Funcs {
    int (*close)(void *obj, int sock);
    int (*accept)(void *obj, int sock);
    int (*bind)(void *obj, int sock, const Network_Addr *addr);
    int (*listen)(void *obj, int sock, int backlog);
    int (*recvbuf)(void *obj, int sock);
    int (*recv)(void *obj, int sock, uint8_t *buf, size_t len);
    int (*recvfrom)(void *obj, int sock, uint8_t *buf, size_t len, Network_Addr *addr);
    int (*send)(void *obj, int sock, const uint8_t *buf, size_t len);
    int (*sendto)(void *obj, int sock, const uint8_t *buf, size_t len, const Network_Addr *addr);
    int (*socket)(void *obj, int domain, int type, int proto);
    int (*socket_nonblock)(void *obj, int sock, bool nonblock);
    int (*getsockopt)(void *obj, int sock, int level, int optname, void *optval, size_t *optlen);
    int (*setsockopt)(void *obj, int sock, int level, int optname, const void *optval, size_t optlen);
    void *getaddrinfo;  // not called by 0.2.18
    void *freeaddrinfo;
} Net_Funcs;

typedef struct Net {
    const Net_Funcs *funcs;
    void *obj;
} Net;

typedef struct Rand_Funcs {
    void (*random_bytes)(void *obj, uint8_t *bytes, size_t length);
    uint32_t (*random_uniform)(void *obj, uint32_t upper_bound);
} Rand_Funcs;

typedef struct Rand {
    const Rand_Funcs *funcs;
    void *obj;
} Rand;

struct Tox_System {
    void *mono_time_callback;  // NULL: toxcore's own clock
    void *mono_time_user_data;
    const Rand *rng;
    const Net *ns;
};

// ---- the framing ----

static const uint8_t magic[4] = {0x69, 0x76, 0x65, 0x67};
enum { CLIENT_HANDSHAKE = 128, SERVER_HANDSHAKE = 96, MAX_DATAGRAM = 65536 };
enum { PENDING_LIMIT = 256 * 1024, CLEAN_LIMIT = 256 * 1024 };

// One direction of a TCP relay stream: bytes passed as they are, then frames.
typedef struct Stream {
    size_t pass_through;
    size_t body_left;
    int length_bytes;   // of the current frame's u16 seen (0..1)
    uint8_t first_length_byte;
    int magic_seen;     // deframing: magic bytes matched so far
} Stream;

typedef struct Socket_State {
    bool stream;      // a TCP data socket (client or accepted)
    bool listener;
    bool refused;     // a frame came without the magic: the stream reads as closed
    Stream out;
    Stream in;
    uint8_t *pending;  // framed bytes toxcore handed over that the socket did not take yet
    size_t pending_len;
    uint8_t *clean;    // deframed bytes toxcore has not read yet
    size_t clean_len;
} Socket_State;

enum { MAX_SOCKETS = 65536 };
static Socket_State *sockets[MAX_SOCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cshim_framing_stats stats;

static Socket_State *state_of(int sock) {
    return sock >= 0 && sock < MAX_SOCKETS ? sockets[sock] : NULL;
}

static void forget(int sock) {
    Socket_State *state = state_of(sock);
    if (!state) return;
    free(state->pending);
    free(state->clean);
    free(state);
    sockets[sock] = NULL;
}

static Socket_State *track(int sock) {
    if (sock < 0 || sock >= MAX_SOCKETS) return NULL;
    forget(sock);
    Socket_State *state = calloc(1, sizeof(Socket_State));
    sockets[sock] = state;
    return state;
}

// toxcore's outgoing bytes -> the wire's (into `out`, which has room for 2x + 8).
static size_t frame(Stream *s, const uint8_t *in, size_t len, uint8_t *out) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        const uint8_t byte = in[i];
        if (s->pass_through > 0) {
            s->pass_through--;
        } else if (s->body_left > 0) {
            s->body_left--;
        } else {
            if (s->length_bytes == 0) {
                memcpy(out + n, magic, 4);
                n += 4;
                s->first_length_byte = byte;
                s->length_bytes = 1;
            } else {
                s->body_left = (size_t)s->first_length_byte << 8 | byte;
                s->length_bytes = 0;
                stats.frames_sent++;
            }
        }
        out[n++] = byte;
    }
    return n;
}

// The wire's bytes -> toxcore's (into `out`, room for len); -1 on a frame without the magic.
static long deframe(Stream *s, const uint8_t *in, size_t len, uint8_t *out) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        const uint8_t byte = in[i];
        if (s->pass_through > 0) {
            s->pass_through--;
            out[n++] = byte;
        } else if (s->body_left > 0) {
            s->body_left--;
            out[n++] = byte;
        } else if (s->magic_seen < 4) {
            if (byte != magic[s->magic_seen]) return -1;
            s->magic_seen++;
        } else if (s->length_bytes == 0) {
            s->first_length_byte = byte;
            s->length_bytes = 1;
            out[n++] = byte;
        } else {
            s->body_left = (size_t)s->first_length_byte << 8 | byte;
            s->length_bytes = 0;
            s->magic_seen = 0;
            stats.frames_received++;
            out[n++] = byte;
        }
    }
    return (long)n;
}

// Sends what waits; false if the socket failed (errno set), true otherwise (even if some still waits).
static bool flush(int sock, Socket_State *state) {
    while (state->pending_len > 0) {
        const ssize_t sent = send(sock, state->pending, state->pending_len, MSG_NOSIGNAL);
        if (sent < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        memmove(state->pending, state->pending + sent, state->pending_len - (size_t)sent);
        state->pending_len -= (size_t)sent;
    }
    return true;
}

// Reads what the socket has and deframes it; false at the end of the stream or on an error.
static bool fill(int sock, Socket_State *state) {
    uint8_t raw[8192];
    while (state->clean_len < CLEAN_LIMIT) {
        const ssize_t got = recv(sock, raw, sizeof raw, MSG_NOSIGNAL);
        if (got == 0) return false;
        if (got < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        if (!state->clean) state->clean = malloc(CLEAN_LIMIT + sizeof raw);
        if (!state->clean) return false;
        const long clean = deframe(&state->in, raw, (size_t)got, state->clean + state->clean_len);
        if (clean < 0) {
            state->refused = true;
            stats.streams_refused++;
            return false;
        }
        state->clean_len += (size_t)clean;
    }
    return true;
}

// ---- the socket functions toxcore calls ----

static int carrier_close(void *obj, int sock) {
    (void)obj;
    pthread_mutex_lock(&lock);
    forget(sock);
    pthread_mutex_unlock(&lock);
    return close(sock);
}

static int carrier_accept(void *obj, int sock) {
    (void)obj;
    const int accepted = accept(sock, NULL, NULL);
    if (accepted >= 0) {
        pthread_mutex_lock(&lock);
        Socket_State *state = track(accepted);
        if (state) {
            // A relay's side: the client's handshake comes in, ours goes out.
            state->stream = true;
            state->in.pass_through = CLIENT_HANDSHAKE;
            state->out.pass_through = SERVER_HANDSHAKE;
        }
        pthread_mutex_unlock(&lock);
    }
    return accepted;
}

static int carrier_bind(void *obj, int sock, const Network_Addr *addr) {
    (void)obj;
    return bind(sock, (const struct sockaddr *)&addr->addr, (socklen_t)addr->size);
}

static int carrier_listen(void *obj, int sock, int backlog) {
    (void)obj;
    pthread_mutex_lock(&lock);
    Socket_State *state = state_of(sock);
    if (state) {
        state->stream = false;
        state->listener = true;
    }
    pthread_mutex_unlock(&lock);
    return listen(sock, backlog);
}

static int carrier_recvbuf(void *obj, int sock) {
    (void)obj;
    pthread_mutex_lock(&lock);
    Socket_State *state = state_of(sock);
    int count;
    if (state && state->stream) {
        flush(sock, state);  // framed bytes still waiting go out whenever toxcore looks
        if (!fill(sock, state) && state->clean_len == 0) {
            count = 0;
        } else {
            count = (int)state->clean_len;
        }
    } else {
        count = 0;
        if (ioctl(sock, FIONREAD, &count) != 0) count = 0;
    }
    pthread_mutex_unlock(&lock);
    return count;
}

static int carrier_recv(void *obj, int sock, uint8_t *buf, size_t len) {
    (void)obj;
    pthread_mutex_lock(&lock);
    Socket_State *state = state_of(sock);
    if (!state || !state->stream) {
        pthread_mutex_unlock(&lock);
        return (int)recv(sock, buf, len, MSG_NOSIGNAL);
    }
    bool open = true;
    if (state->clean_len == 0) open = fill(sock, state);
    int result;
    if (state->clean_len > 0) {
        const size_t n = len < state->clean_len ? len : state->clean_len;
        memcpy(buf, state->clean, n);
        memmove(state->clean, state->clean + n, state->clean_len - n);
        state->clean_len -= n;
        result = (int)n;
    } else if (!open) {
        result = 0;  // the end of the stream, or a stream that is not Carrier's
    } else {
        errno = EAGAIN;
        result = -1;
    }
    pthread_mutex_unlock(&lock);
    return result;
}

static int carrier_recvfrom(void *obj, int sock, uint8_t *buf, size_t len, Network_Addr *addr) {
    (void)obj;
    static __thread uint8_t datagram[MAX_DATAGRAM];
    const size_t room = len + 4 < sizeof datagram ? len + 4 : sizeof datagram;
    for (;;) {
        socklen_t size = (socklen_t)sizeof addr->addr;
        const ssize_t got = recvfrom(sock, datagram, room, 0, (struct sockaddr *)&addr->addr, &size);
        if (got < 0) return -1;
        addr->size = size;
        if (got <= 4 || memcmp(datagram, magic, 4) != 0) {
            __atomic_add_fetch(&stats.datagrams_dropped, 1, __ATOMIC_RELAXED);
            continue;  // not the Carrier network's: dropped, and the next one read
        }
        __atomic_add_fetch(&stats.datagrams_received, 1, __ATOMIC_RELAXED);
        memcpy(buf, datagram + 4, (size_t)got - 4);
        return (int)(got - 4);
    }
}

static int carrier_send(void *obj, int sock, const uint8_t *buf, size_t len) {
    (void)obj;
    pthread_mutex_lock(&lock);
    Socket_State *state = state_of(sock);
    if (!state || !state->stream) {
        pthread_mutex_unlock(&lock);
        return (int)send(sock, buf, len, MSG_NOSIGNAL);
    }
    // What waits goes first; while some still does, toxcore keeps its bytes (it tries again).
    if (!flush(sock, state)) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    if (state->pending_len > 0 || len * 2 + 8 > PENDING_LIMIT) {
        pthread_mutex_unlock(&lock);
        errno = EAGAIN;
        return -1;
    }
    if (!state->pending) state->pending = malloc(PENDING_LIMIT);
    if (!state->pending) {
        pthread_mutex_unlock(&lock);
        errno = ENOMEM;
        return -1;
    }
    state->pending_len = frame(&state->out, buf, len, state->pending);
    const bool ok = flush(sock, state);
    pthread_mutex_unlock(&lock);
    // Taken whole: the rest goes out on the next send or look at the socket.
    return ok ? (int)len : -1;
}

static int carrier_sendto(void *obj, int sock, const uint8_t *buf, size_t len, const Network_Addr *addr) {
    (void)obj;
    static __thread uint8_t datagram[MAX_DATAGRAM + 4];
    if (len > MAX_DATAGRAM) {
        errno = EMSGSIZE;
        return -1;
    }
    memcpy(datagram, magic, 4);
    memcpy(datagram + 4, buf, len);
    const ssize_t sent = sendto(sock, datagram, len + 4, 0, (const struct sockaddr *)&addr->addr,
                                (socklen_t)addr->size);
    if (sent < 0) return -1;
    __atomic_add_fetch(&stats.datagrams_sent, 1, __ATOMIC_RELAXED);
    return sent >= 4 ? (int)(sent - 4) : 0;
}

static int carrier_socket(void *obj, int domain, int type, int proto) {
    (void)obj;
    const int sock = socket(domain, type, proto);
    if (sock >= 0 && (type & 0xF) == SOCK_STREAM) {
        pthread_mutex_lock(&lock);
        Socket_State *state = track(sock);
        if (state) {
            // A client of a relay (listen() makes it a listener instead).
            state->stream = true;
            state->out.pass_through = CLIENT_HANDSHAKE;
            state->in.pass_through = SERVER_HANDSHAKE;
        }
        pthread_mutex_unlock(&lock);
    }
    return sock;
}

static int carrier_socket_nonblock(void *obj, int sock, bool nonblock) {
    (void)obj;
    const int flags = fcntl(sock, F_GETFL, 0);
    if (flags < 0) return -1;
    return fcntl(sock, F_SETFL, nonblock ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
}

static int carrier_getsockopt(void *obj, int sock, int level, int optname, void *optval, size_t *optlen) {
    (void)obj;
    socklen_t size = (socklen_t)*optlen;
    const int result = getsockopt(sock, level, optname, optval, &size);
    *optlen = size;
    return result;
}

static int carrier_setsockopt(void *obj, int sock, int level, int optname, const void *optval, size_t optlen) {
    (void)obj;
    return setsockopt(sock, level, optname, optval, (socklen_t)optlen);
}

static void random_bytes(void *obj, uint8_t *bytes, size_t length) {
    (void)obj;
    randombytes_buf(bytes, length);
}

static uint32_t random_uniform(void *obj, uint32_t upper_bound) {
    (void)obj;
    return upper_bound == 0 ? 0 : randombytes_uniform(upper_bound);
}

static const Net_Funcs carrier_network_funcs = {
    carrier_close, carrier_accept, carrier_bind, carrier_listen, carrier_recvbuf, carrier_recv,
    carrier_recvfrom, carrier_send, carrier_sendto, carrier_socket, carrier_socket_nonblock,
    carrier_getsockopt, carrier_setsockopt, NULL, NULL,
};
static const Net carrier_network = {&carrier_network_funcs, NULL};
static const Rand_Funcs carrier_random_funcs = {random_bytes, random_uniform};
static const Rand carrier_random = {&carrier_random_funcs, NULL};
static const struct Tox_System carrier_system = {NULL, NULL, &carrier_random, &carrier_network};

const Tox_System *cshim_carrier_system(void) {
    // The layout above is 0.2.18's: another toxcore gets no hooks rather than wrong ones.
    if (tox_version_major() != 0 || tox_version_minor() != 2 || tox_version_patch() != 18) return NULL;
    if (sodium_init() < 0) return NULL;
    return &carrier_system;
}

cshim_framing_stats cshim_framing_stats_get(void) {
    pthread_mutex_lock(&lock);
    cshim_framing_stats copy = stats;
    copy.datagrams_sent = __atomic_load_n(&stats.datagrams_sent, __ATOMIC_RELAXED);
    copy.datagrams_received = __atomic_load_n(&stats.datagrams_received, __ATOMIC_RELAXED);
    copy.datagrams_dropped = __atomic_load_n(&stats.datagrams_dropped, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&lock);
    return copy;
}
