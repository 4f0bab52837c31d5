/*
 * What the raw c-toxcore reference programs (tox_befriend.c, tox_file_bench.c)
 * share: a monotonic clock in ms and hex keys from the command line.
 */
#ifndef TOX_RAW_UTIL_H
#define TOX_RAW_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000.0 + t.tv_nsec / 1e6;
}

/* Exactly `size` bytes from 2 * size hex digits. */
static bool unhex(const char *text, uint8_t *out, size_t size) {
    if (strlen(text) != size * 2) return false;
    for (size_t i = 0; i < size; i++) {
        unsigned value;
        if (sscanf(text + 2 * i, "%2x", &value) != 1) return false;
        out[i] = (uint8_t)value;
    }
    return true;
}

#endif
