// The Carrier network's framing under toxcore (wire notes 1.1), through the
// operating-system hooks Debian's toxcore 0.2.18 exports
// (tox_options_set_operating_system): our own socket functions add the
// magic 69 76 65 67 in front of every UDP datagram and of every TCP relay
// frame after the handshakes, and take it off what arrives (a datagram
// without it is dropped; a TCP stream without it is closed).
//
// Threads: toxcore calls these from whichever thread runs tox_iterate (the
// node's thread); the per-socket state is guarded by one mutex all the same.
#ifndef CSHIM_TOXCORE_H
#define CSHIM_TOXCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tox/tox.h>

// The system to give toxcore (tox_options_set_operating_system) for the
// Carrier framing. NULL if this toxcore is not the 0.2.18 whose private
// layout it mirrors (tox_version_is_compatible(0, 2, 18) and nothing newer).
const Tox_System *cshim_carrier_system(void);

// Counters, for tests and stats: datagrams sent and received with the
// magic, dropped without it, TCP frames framed and deframed, TCP streams
// closed for a frame without it.
typedef struct cshim_framing_stats {
    uint64_t datagrams_sent;
    uint64_t datagrams_received;
    uint64_t datagrams_dropped;
    uint64_t frames_sent;
    uint64_t frames_received;
    uint64_t streams_refused;
} cshim_framing_stats;

cshim_framing_stats cshim_framing_stats_get(void);

#endif
