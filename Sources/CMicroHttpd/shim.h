#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

// MHD_start_daemon is variadic: one typed forward with the options the
// Express service sets. Threads: `threads` workers (a pool), each running the
// handlers of its connections; `address` chooses the interface (127.0.0.1).
// `policy` admits or refuses each new connection (on the thread that accepts
// it); `notify` hears of each connection's start and close (on its worker).
static inline struct MHD_Daemon *cmhd_start(const struct sockaddr *address, unsigned int threads,
                                            unsigned int connectionLimit, unsigned int perAddressLimit,
                                            size_t connectionMemoryLimit, unsigned int timeoutSeconds,
                                            MHD_AccessHandlerCallback handler, void *handlerContext,
                                            MHD_RequestCompletedCallback completed, void *completedContext,
                                            MHD_AcceptPolicyCallback policy, MHD_NotifyConnectionCallback notify,
                                            const char *certificate, const char *key) {
    if (certificate && key) {
        // HTTPS (libmicrohttpd on GnuTLS): the same options and the PEM certificate and key, copied by the library.
        return MHD_start_daemon(
            MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_TLS, 0, policy, handlerContext, handler,
            handlerContext, MHD_OPTION_SOCK_ADDR, address, MHD_OPTION_THREAD_POOL_SIZE, threads,
            MHD_OPTION_CONNECTION_LIMIT, connectionLimit, MHD_OPTION_PER_IP_CONNECTION_LIMIT, perAddressLimit,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connectionMemoryLimit, MHD_OPTION_CONNECTION_TIMEOUT, timeoutSeconds,
            MHD_OPTION_NOTIFY_COMPLETED, completed, completedContext, MHD_OPTION_NOTIFY_CONNECTION, notify,
            handlerContext, MHD_OPTION_HTTPS_MEM_CERT, certificate, MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_END);
    }
    return MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, policy, handlerContext, handler,
                            handlerContext, MHD_OPTION_SOCK_ADDR, address, MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_CONNECTION_LIMIT, connectionLimit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                            perAddressLimit, MHD_OPTION_CONNECTION_MEMORY_LIMIT, connectionMemoryLimit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeoutSeconds, MHD_OPTION_NOTIFY_COMPLETED, completed,
                            completedContext, MHD_OPTION_NOTIFY_CONNECTION, notify, handlerContext, MHD_OPTION_END);
}

// The client's address of a connection as text into `buffer` (empty if unknown).
// MHD_get_connection_info is variadic, hence this forward.
static inline void cmhd_client_address(struct MHD_Connection *connection, char *buffer, socklen_t size) {
    buffer[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr) return;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, buffer, size);
    } else if (address->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, buffer, size);
    }
}

// Text for an address an accept policy is given.
static inline void cmhd_address_text(const struct sockaddr *address, char *buffer, socklen_t size) {
    buffer[0] = 0;
    if (!address) return;
    if (address->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, buffer, size);
    } else if (address->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, buffer, size);
    }
}

// The socket of a connection (-1 if unknown).
static inline int cmhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

// The port the daemon listens on (after asking for port 0).
static inline unsigned short cmhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
