/*
 * Raw c-toxcore's file transfer, as the reference for files between friends
 * over the node (scripts/bench_friend_file.py): two processes on one
 * machine, the library's defaults (IPv6 off, as our node has it), each
 * chunk sent from the chunk-request callback, and the loop at
 * tox_iteration_interval, as a plain toxcore client does it.
 *
 * Usage: tox_file_bench recv [HOST PORT DHT_KEY_HEX]
 *          prints {"address":HEX,"dhtKey":HEX,"port":N}, accepts every friend
 *          request and every file, and prints {"received":BYTES,"ms":…} when
 *          a file has all its bytes (ms from the offer); runs until killed.
 *          With a node, joins the network through it (as the sender does)
 *        tox_file_bench send HOST PORT DHT_KEY_HEX ADDRESS_HEX BYTES RUNS
 *          joins through HOST:PORT, befriends ADDRESS, then sends a file of
 *          BYTES RUNS times, one after another on the same link; prints
 *          {"run":N,"link":"udp"|"tcp"} as each starts (how toxcore reaches
 *          the friend then) and exits when the last is sent (the receiver's
 *          lines are the measurement)
 *
 * Each side uses the node it joins through as a TCP relay too, as our nodes
 * do with --bootstrap: with both joining through `carrier node`, the two
 * find each other as ours do (the onion, then the DHT), and a new link may
 * come up over the node's relay first and move to UDP a moment later.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tox/tox.h>

#include "tox_raw_util.h"

static void print_hex(const uint8_t *bytes, size_t size) {
    for (size_t i = 0; i < size; i++) printf("%02X", bytes[i]);
}

/* The receiver's side. */
static uint64_t expected = 0, received = 0;
static double offered_at = 0;

static void friend_request(Tox *tox, const uint8_t *key, const uint8_t *message, size_t length, void *user) {
    (void)message; (void)length; (void)user;
    tox_friend_add_norequest(tox, key, NULL);
}

static void file_offer(Tox *tox, uint32_t friend, uint32_t file, uint32_t kind, uint64_t size, const uint8_t *name,
                       size_t name_length, void *user) {
    (void)kind; (void)name; (void)name_length; (void)user;
    expected = size;
    received = 0;
    offered_at = now_ms();
    tox_file_control(tox, friend, file, TOX_FILE_CONTROL_RESUME, NULL);
}

static void file_chunk(Tox *tox, uint32_t friend, uint32_t file, uint64_t position, const uint8_t *data,
                       size_t length, void *user) {
    (void)tox; (void)friend; (void)file; (void)position; (void)data; (void)user;
    received += length;
    if (length > 0 && received == expected) {
        printf("{\"received\":%llu,\"ms\":%.1f}\n", (unsigned long long)received, now_ms() - offered_at);
        fflush(stdout);
    }
}

/* The sender's side: the file is in memory, so reading costs nothing. */
static uint8_t *payload;
static bool file_done = false;

static void chunk_request(Tox *tox, uint32_t friend, uint32_t file, uint64_t position, size_t length, void *user) {
    (void)user;
    if (length == 0) {
        file_done = true;
        return;
    }
    tox_file_send_chunk(tox, friend, file, position, payload + position, length, NULL);
}

static TOX_CONNECTION friend_link = TOX_CONNECTION_NONE;

static void friend_connection(Tox *tox, uint32_t number, TOX_CONNECTION status, void *user) {
    (void)tox; (void)number; (void)user;
    friend_link = status;
}

static Tox *make_tox(void) {
    struct Tox_Options *options = tox_options_new(NULL);
    tox_options_set_ipv6_enabled(options, false);
    tox_options_set_local_discovery_enabled(options, false);
    Tox *tox = tox_new(options, NULL);
    tox_options_free(options);
    return tox;
}

/* Joins through a node: its DHT, and its TCP relay. */
static bool join(Tox *tox, const char *host, const char *port, const char *key_hex) {
    uint8_t key[TOX_PUBLIC_KEY_SIZE];
    if (!unhex(key_hex, key, sizeof key)) {
        fprintf(stderr, "tox_file_bench: bad key\n");
        return false;
    }
    tox_bootstrap(tox, host, (uint16_t)atoi(port), key, NULL);
    tox_add_tcp_relay(tox, host, (uint16_t)atoi(port), key, NULL);
    return true;
}

static void iterate(Tox *tox) {
    tox_iterate(tox, NULL);
    usleep(tox_iteration_interval(tox) * 1000);
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "recv") == 0) {
        Tox *tox = make_tox();
        if (!tox) return 1;
        if (argc >= 5 && !join(tox, argv[2], argv[3], argv[4])) return 2;
        tox_callback_friend_request(tox, friend_request);
        tox_callback_file_recv(tox, file_offer);
        tox_callback_file_recv_chunk(tox, file_chunk);
        uint8_t address[TOX_ADDRESS_SIZE], dht[TOX_PUBLIC_KEY_SIZE];
        tox_self_get_address(tox, address);
        tox_self_get_dht_id(tox, dht);
        printf("{\"address\":\"");
        print_hex(address, sizeof address);
        printf("\",\"dhtKey\":\"");
        print_hex(dht, sizeof dht);
        printf("\",\"port\":%u}\n", tox_self_get_udp_port(tox, NULL));
        fflush(stdout);
        for (;;) iterate(tox);
    }
    if (argc < 8 || strcmp(argv[1], "send") != 0) {
        fprintf(stderr, "usage: tox_file_bench recv [HOST PORT DHT_KEY_HEX] | send HOST PORT DHT_KEY_HEX ADDRESS_HEX BYTES RUNS\n");
        return 2;
    }
    uint8_t address[TOX_ADDRESS_SIZE];
    if (!unhex(argv[5], address, sizeof address)) {
        fprintf(stderr, "tox_file_bench: bad address\n");
        return 2;
    }
    uint64_t size = strtoull(argv[6], NULL, 10);
    int runs = atoi(argv[7]);
    payload = malloc(size);
    for (uint64_t i = 0; i < size; i++) payload[i] = (uint8_t)(i * 7);
    Tox *tox = make_tox();
    if (!tox) return 1;
    if (!join(tox, argv[2], argv[3], argv[4])) return 2;
    tox_callback_friend_connection_status(tox, friend_connection);
    tox_callback_file_chunk_request(tox, chunk_request);
    static const uint8_t hello[] = "hello";
    uint32_t friend = tox_friend_add(tox, address, hello, sizeof hello - 1, NULL);
    double started = now_ms();
    while (friend_link == TOX_CONNECTION_NONE) {
        if (now_ms() - started > 120000) {
            fprintf(stderr, "tox_file_bench: no friend connection within 120 s\n");
            return 1;
        }
        iterate(tox);
    }
    for (int run = 0; run < runs; run++) {
        file_done = false;
        printf("{\"run\":%d,\"link\":\"%s\"}\n", run, friend_link == TOX_CONNECTION_UDP ? "udp" : "tcp");
        fflush(stdout);
        static const uint8_t name[] = "bench.bin";
        if (tox_file_send(tox, friend, TOX_FILE_KIND_DATA, size, NULL, name, sizeof name - 1, NULL) == UINT32_MAX) {
            fprintf(stderr, "tox_file_bench: tox_file_send failed\n");
            return 1;
        }
        while (!file_done) iterate(tox);
    }
    /* Let the last packets reach the receiver before the process goes. */
    double finishing = now_ms();
    while (now_ms() - finishing < 2000) iterate(tox);
    tox_kill(tox);
    free(payload);
    return 0;
}
