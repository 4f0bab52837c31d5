#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

// MHD_start_daemon is variadic: one typed forward with the options the
// Express service sets. Threads: `threads` workers (a pool), each running the
// handlers of its connections; `address` chooses the interface (127.0.0.1).
static inline struct MHD_Daemon *cmhd_start(const struct sockaddr *address, unsigned int threads,
                                            unsigned int connectionLimit, unsigned int perAddressLimit,
                                            size_t connectionMemoryLimit, unsigned int timeoutSeconds,
                                            MHD_AccessHandlerCallback handler, void *handlerContext,
                                            MHD_RequestCompletedCallback completed, void *completedContext) {
    return MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, handler,
                            handlerContext, MHD_OPTION_SOCK_ADDR, address, MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_CONNECTION_LIMIT, connectionLimit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                            perAddressLimit, MHD_OPTION_CONNECTION_MEMORY_LIMIT, connectionMemoryLimit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeoutSeconds, MHD_OPTION_NOTIFY_COMPLETED, completed,
                            completedContext, MHD_OPTION_END);
}

// The port the daemon listens on (after asking for port 0).
static inline unsigned short cmhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
