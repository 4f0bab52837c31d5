/*
 * Raw c-toxcore, as the reference for how fast friends find each other
 * (Tests/Lab/lab_node.py, scripts/bench_lab.py): what any toxcore client
 * gets with the library's defaults (IPv6 off, as our node has it, since the
 * lab has no IPv6 routes), bootstrapping and taking the bootstrap node as a
 * TCP relay, and looping at tox_iteration_interval.
 *
 * Usage: tox_befriend listen HOST PORT DHT_KEY_HEX [udp|tcp]
 *          prints {"address":HEX}, then {"joinedMs":…} once on the network, and
 *          accepts every friend request until killed
 *        tox_befriend add HOST PORT DHT_KEY_HEX ADDRESS_HEX [udp|tcp]
 *          starts fresh, asks ADDRESS for friendship, and prints
 *          {"joinedMs":…,"connectedMs":…,"link":"udp"|"tcp"} (ms after the
 *          start) once the friend is connected; exits 1 after 120 s
 *        tox_befriend redial HOST PORT DHT_KEY_HEX ADDRESS_HEX SAVEFILE [udp|tcp]
 *          as add, but a returning friend: with SAVEFILE present it starts from
 *          that saved state (its identity and ADDRESS as a friend already),
 *          else it asks ADDRESS for friendship; once connected it stays 3 s
 *          (a short call), saves its state to SAVEFILE and stops with
 *          tox_kill, as a client run once per call does (scripts/redial.py)
 * "tcp" turns UDP off: the node reaches the network through TCP relays only.
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

static void friend_request(Tox *tox, const uint8_t *key, const uint8_t *message, size_t length, void *user) {
    (void)message; (void)length; (void)user;
    tox_friend_add_norequest(tox, key, NULL);
}

static TOX_CONNECTION friend_link = TOX_CONNECTION_NONE;

static void friend_connection(Tox *tox, uint32_t number, TOX_CONNECTION status, void *user) {
    (void)tox; (void)number; (void)user;
    friend_link = status;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: tox_befriend listen|add|redial HOST PORT DHT_KEY_HEX [ADDRESS_HEX [SAVEFILE]] "
                        "[udp|tcp]\n");
        return 2;
    }
    bool redial = strcmp(argv[1], "redial") == 0;
    bool adding = redial || strcmp(argv[1], "add") == 0;
    const char *savefile = redial && argc > 6 ? argv[6] : NULL;
    int mode_at = redial ? 7 : adding ? 6 : 5;
    const char *mode = argc > mode_at ? argv[mode_at] : "udp";
    if (redial && !savefile) {
        fprintf(stderr, "tox_befriend: redial needs a SAVEFILE\n");
        return 2;
    }
    uint8_t key[TOX_PUBLIC_KEY_SIZE];
    uint8_t address[TOX_ADDRESS_SIZE];
    if (!unhex(argv[4], key, sizeof key) || (adding && (argc < 6 || !unhex(argv[5], address, sizeof address)))) {
        fprintf(stderr, "tox_befriend: bad key or address\n");
        return 2;
    }
    double started = now_ms();
    struct Tox_Options *options = tox_options_new(NULL);
    tox_options_set_ipv6_enabled(options, false);
#ifdef NO_LOCAL_DISCOVERY
    /* scripts/redial.py: as our nodes run with --loopback, so neither side
     * finds the other by LAN broadcasts, which reach this machine's own ports. */
    tox_options_set_local_discovery_enabled(options, false);
#endif
    tox_options_set_udp_enabled(options, strcmp(mode, "tcp") != 0);
    static uint8_t saved[1 << 20];
    size_t saved_size = 0;
    FILE *in = savefile ? fopen(savefile, "rb") : NULL;
    if (in) {
        saved_size = fread(saved, 1, sizeof saved, in);
        fclose(in);
        tox_options_set_savedata_type(options, TOX_SAVEDATA_TYPE_TOX_SAVE);
        tox_options_set_savedata_data(options, saved, saved_size);
    }
    Tox *tox = tox_new(options, NULL);
    tox_options_free(options);
    if (!tox) {
        fprintf(stderr, "tox_befriend: tox_new failed\n");
        return 1;
    }
    uint16_t port = (uint16_t)atoi(argv[3]);
    tox_bootstrap(tox, argv[2], port, key, NULL);
    tox_add_tcp_relay(tox, argv[2], port, key, NULL);
    tox_callback_friend_request(tox, friend_request);
    tox_callback_friend_connection_status(tox, friend_connection);
    if (!adding) {
        uint8_t own[TOX_ADDRESS_SIZE];
        tox_self_get_address(tox, own);
        printf("{\"address\":\"");
        for (size_t i = 0; i < sizeof own; i++) printf("%02X", own[i]);
        printf("\"}\n");
        fflush(stdout);
    } else if (saved_size == 0) {
        static const uint8_t hello[] = "hello";
        if (tox_friend_add(tox, address, hello, sizeof hello - 1, NULL) == UINT32_MAX) {
            fprintf(stderr, "tox_befriend: tox_friend_add failed\n");
            return 1;
        }
    }
    double joined = 0;
    while (!adding || now_ms() - started < 120000) {
        tox_iterate(tox, NULL);
        if (joined == 0 && tox_self_get_connection_status(tox) != TOX_CONNECTION_NONE) {
            joined = now_ms() - started;
            if (!adding) {
                printf("{\"joinedMs\":%.1f}\n", joined);
                fflush(stdout);
            }
        }
        if (adding && friend_link != TOX_CONNECTION_NONE) {
            printf("{\"joinedMs\":%.1f,\"connectedMs\":%.1f,\"link\":\"%s\"}\n", joined, now_ms() - started,
                   friend_link == TOX_CONNECTION_UDP ? "udp" : "tcp");
            fflush(stdout);
            if (redial) {
                double connected = now_ms();
                while (now_ms() - connected < 3000) {
                    tox_iterate(tox, NULL);
                    usleep(tox_iteration_interval(tox) * 1000);
                }
                size_t size = tox_get_savedata_size(tox);
                uint8_t *data = malloc(size);
                FILE *out = data ? fopen(savefile, "wb") : NULL;
                if (out) {
                    tox_get_savedata(tox, data);
                    fwrite(data, 1, size, out);
                    fclose(out);
                }
                free(data);
            }
            tox_kill(tox);
            return 0;
        }
        usleep(tox_iteration_interval(tox) * 1000);
    }
    fprintf(stderr, "tox_befriend: no friend connection within 120 s\n");
    tox_kill(tox);
    return 1;
}
