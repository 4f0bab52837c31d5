/*
 * ToxAV, the call stack that ships with c-toxcore, as the reference for
 * scripts/bench_calls.py: two of these processes befriend each other over a
 * local toxcore network, then the caller places calls that the callee
 * answers at once; both stream a 48 kHz stereo tone (20 ms frames) and
 * 640x480 I420 pictures at 30 fps, and report when each call's first audio
 * and video frame was decoded. Loops at ToxAV's default intervals: one
 * thread runs tox_iterate, one toxav_iterate, each sleeping the interval the
 * library asks for.
 *
 * Usage: toxav_bench caller|callee HOST PORT DHT_KEY_HEX CALLS SECONDS
 * stdout: {"address":HEX} first; then reads the other side's address (hex)
 * on stdin, and the caller a line before each call; then one JSON line per
 * call (Unix ms): the caller's
 * {"dial","answered","firstAudio","firstVideo"}, the callee's
 * {"incoming","answered","firstAudio","firstVideo"}. Logs go to stderr.
 *
 * The callee stops sending before the caller hangs up: ToxAV can deadlock
 * when a hang-up arrives while the other side is inside a send.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <math.h>

#include <tox/tox.h>
#include <tox/toxav.h>

static Tox *tox;
static ToxAV *av;
static bool caller;
static volatile bool running = true;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
/* Guarded by lock. */
static bool incoming, in_call, sending, finished;
static uint32_t peer;
static double t_incoming, t_answered, t_audio, t_video;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms) {
    if (ms <= 0) return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

static void on_friend_request(Tox *t, const uint8_t *key, const uint8_t *msg, size_t len, void *user) {
    (void)msg, (void)len, (void)user;
    tox_friend_add_norequest(t, key, NULL);
}

static void on_call(ToxAV *a, uint32_t friend_number, bool audio, bool video, void *user) {
    (void)a, (void)audio, (void)video, (void)user;
    pthread_mutex_lock(&lock);
    peer = friend_number;
    incoming = true;
    t_incoming = now_ms();
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

static void on_call_state(ToxAV *a, uint32_t friend_number, uint32_t state, void *user) {
    (void)a, (void)friend_number, (void)user;
    pthread_mutex_lock(&lock);
    if (state & (TOXAV_FRIEND_CALL_STATE_FINISHED | TOXAV_FRIEND_CALL_STATE_ERROR)) {
        finished = true;
        sending = false;
    } else if (caller && t_answered == 0 && (state & TOXAV_FRIEND_CALL_STATE_ACCEPTING_A)) {
        t_answered = now_ms();
        sending = true;
    }
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

static void on_audio(ToxAV *a, uint32_t fn, const int16_t *pcm, size_t samples, uint8_t channels, uint32_t rate,
                     void *user) {
    (void)a, (void)fn, (void)pcm, (void)samples, (void)channels, (void)rate, (void)user;
    pthread_mutex_lock(&lock);
    if (t_audio == 0) t_audio = now_ms();
    pthread_mutex_unlock(&lock);
}

static void on_video(ToxAV *a, uint32_t fn, uint16_t w, uint16_t h, const uint8_t *y, const uint8_t *u,
                     const uint8_t *v, int32_t ys, int32_t us, int32_t vs, void *user) {
    (void)a, (void)fn, (void)w, (void)h, (void)y, (void)u, (void)v, (void)ys, (void)us, (void)vs, (void)user;
    pthread_mutex_lock(&lock);
    if (t_video == 0) t_video = now_ms();
    pthread_mutex_unlock(&lock);
}

static void *tox_loop(void *arg) {
    (void)arg;
    while (running) {
        tox_iterate(tox, NULL);
        sleep_ms(tox_iteration_interval(tox));
    }
    return NULL;
}

static void *av_loop(void *arg) {
    (void)arg;
    while (running) {
        toxav_iterate(av);
        sleep_ms(toxav_iteration_interval(av));
    }
    return NULL;
}

/* A tone and a moving picture, each frame on time while `sending`. */
static void *media_loop(void *arg) {
    (void)arg;
    enum { W = 640, H = 480, SAMPLES = 960 };
    static int16_t pcm[SAMPLES * 2];
    static uint8_t y[W * H], u[W * H / 4], v[W * H / 4];
    memset(u, 128, sizeof u);
    memset(v, 128, sizeof v);
    uint64_t sample = 0, frame = 0;
    double next_audio = 0, next_video = 0;
    while (running) {
        pthread_mutex_lock(&lock);
        bool on = sending && in_call;
        uint32_t fn = peer;
        pthread_mutex_unlock(&lock);
        double now = now_ms();
        if (!on) {
            next_audio = next_video = 0;
            sleep_ms(1);
            continue;
        }
        if (next_audio == 0) next_audio = next_video = now;
        if (now >= next_audio) {
            for (int i = 0; i < SAMPLES; i++, sample++) {
                pcm[2 * i] = (int16_t)(8000 * sin(2 * M_PI * 440 * sample / 48000.0));
                pcm[2 * i + 1] = (int16_t)(8000 * sin(2 * M_PI * 660 * sample / 48000.0));
            }
            toxav_audio_send_frame(av, fn, pcm, SAMPLES, 2, 48000, NULL);
            next_audio += 20;
        }
        if (now >= next_video) {
            for (int row = 0; row < H; row++) memset(y + row * W, (int)((row + frame * 4) & 0xff), W);
            frame++;
            toxav_video_send_frame(av, fn, W, H, y, u, v, NULL);
            next_video += 1000.0 / 30;
        }
        double wait = fmin(next_audio, next_video) - now_ms();
        sleep_ms(wait > 0 ? wait : 0);
    }
    return NULL;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool from_hex(const char *text, uint8_t *out, size_t size) {
    if (strlen(text) < size * 2) return false;
    for (size_t i = 0; i < size; i++) {
        int high = hex_value(text[2 * i]), low = hex_value(text[2 * i + 1]);
        if (high < 0 || low < 0) return false;
        out[i] = (uint8_t)(high << 4 | low);
    }
    return true;
}

/* Waits on `changed` until `ready()` or `ms` pass; returns ready(). */
static bool wait_for(bool (*ready)(void), double ms) {
    double deadline = now_ms() + ms;
    pthread_mutex_lock(&lock);
    while (!ready() && now_ms() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 5 * 1000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&changed, &lock, &ts);
    }
    bool result = ready();
    pthread_mutex_unlock(&lock);
    return result;
}

static bool got_incoming(void) { return incoming; }
static bool got_finished(void) { return finished; }
static bool got_frames(void) { return t_audio != 0 && t_video != 0; }
static bool got_answer(void) { return t_answered != 0 || finished; }

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: toxav_bench caller|callee HOST PORT DHT_KEY_HEX CALLS SECONDS\n");
        return 2;
    }
    caller = strcmp(argv[1], "caller") == 0;
    uint8_t dht_key[TOX_PUBLIC_KEY_SIZE];
    if (!from_hex(argv[4], dht_key, sizeof dht_key)) {
        fprintf(stderr, "DHT_KEY_HEX: 64 hex digits\n");
        return 2;
    }
    int calls = atoi(argv[5]);
    double seconds = atof(argv[6]);

    struct Tox_Options *options = tox_options_new(NULL);
    tox_options_set_ipv6_enabled(options, false);
    tox_options_set_local_discovery_enabled(options, false);
    tox_options_set_experimental_thread_safety(options, true);
    tox = tox_new(options, NULL);
    tox_options_free(options);
    av = tox ? toxav_new(tox, NULL) : NULL;
    if (!av) {
        fprintf(stderr, "cannot start toxcore/toxav\n");
        return 1;
    }
    tox_bootstrap(tox, argv[2], (uint16_t)atoi(argv[3]), dht_key, NULL);
    tox_add_tcp_relay(tox, argv[2], (uint16_t)atoi(argv[3]), dht_key, NULL);
    tox_callback_friend_request(tox, on_friend_request);
    toxav_callback_call(av, on_call, NULL);
    toxav_callback_call_state(av, on_call_state, NULL);
    toxav_callback_audio_receive_frame(av, on_audio, NULL);
    toxav_callback_video_receive_frame(av, on_video, NULL);

    uint8_t address[TOX_ADDRESS_SIZE];
    tox_self_get_address(tox, address);
    printf("{\"address\":\"");
    for (size_t i = 0; i < sizeof address; i++) printf("%02X", address[i]);
    printf("\"}\n");
    fflush(stdout);

    pthread_t threads[3];
    pthread_create(&threads[0], NULL, tox_loop, NULL);
    pthread_create(&threads[1], NULL, av_loop, NULL);
    pthread_create(&threads[2], NULL, media_loop, NULL);

    char line[256];
    if (!fgets(line, sizeof line, stdin)) return 1;
    uint8_t other[TOX_ADDRESS_SIZE];
    if (!from_hex(line, other, sizeof other)) {
        fprintf(stderr, "the other side's address: %d hex digits\n", (int)(TOX_ADDRESS_SIZE * 2));
        return 2;
    }
    if (caller) {
        uint32_t fn = tox_friend_add(tox, other, (const uint8_t *)"bench", 5, NULL);
        pthread_mutex_lock(&lock);
        peer = fn;
        pthread_mutex_unlock(&lock);
    }
    /* The friend link up (the callee learns the friend number from the request). */
    double deadline = now_ms() + 120000;
    while (now_ms() < deadline && (tox_self_get_friend_list_size(tox) == 0 ||
                                   tox_friend_get_connection_status(tox, caller ? peer : 0, NULL) ==
                                       TOX_CONNECTION_NONE))
        sleep_ms(10);
    if (now_ms() >= deadline) {
        fprintf(stderr, "the friend did not come online\n");
        return 1;
    }
    fprintf(stderr, "%s: friend online\n", argv[1]);
    sleep_ms(3000); /* the direct UDP link replaces the first TCP relay */

    for (int i = 0; i < calls; i++) {
        pthread_mutex_lock(&lock);
        incoming = finished = sending = false;
        t_incoming = t_answered = t_audio = t_video = 0;
        uint32_t fn = peer;
        pthread_mutex_unlock(&lock);
        if (caller) {
            /* Each call when the script says (it alternates with the other stack's calls). */
            if (!fgets(line, sizeof line, stdin)) break;
            double dial = now_ms();
            pthread_mutex_lock(&lock);
            in_call = true;
            pthread_mutex_unlock(&lock);
            if (!toxav_call(av, fn, 64, 2000, NULL)) fprintf(stderr, "toxav_call failed\n");
            wait_for(got_answer, 10000);
            wait_for(got_frames, 10000);
            sleep_ms(seconds * 1000 + 500); /* the callee stops sending first */
            pthread_mutex_lock(&lock);
            sending = false;
            pthread_mutex_unlock(&lock);
            sleep_ms(50); /* the media thread is out of its send */
            toxav_call_control(av, fn, TOXAV_CALL_CONTROL_CANCEL, NULL);
            pthread_mutex_lock(&lock);
            in_call = false;
            printf("{\"call\":%d,\"dial\":%.1f,\"answered\":%.1f,\"firstAudio\":%.1f,\"firstVideo\":%.1f}\n", i, dial,
                   t_answered, t_audio, t_video);
            pthread_mutex_unlock(&lock);
        } else {
            if (!wait_for(got_incoming, 60000)) break;
            pthread_mutex_lock(&lock);
            fn = peer;
            pthread_mutex_unlock(&lock);
            toxav_answer(av, fn, 64, 2000, NULL);
            pthread_mutex_lock(&lock);
            t_answered = now_ms();
            in_call = sending = true;
            pthread_mutex_unlock(&lock);
            wait_for(got_frames, 10000);
            sleep_ms(seconds * 1000);
            pthread_mutex_lock(&lock);
            sending = false;
            pthread_mutex_unlock(&lock);
            wait_for(got_finished, 10000);
            pthread_mutex_lock(&lock);
            in_call = false;
            printf("{\"call\":%d,\"incoming\":%.1f,\"answered\":%.1f,\"firstAudio\":%.1f,\"firstVideo\":%.1f}\n", i,
                   t_incoming, t_answered, t_audio, t_video);
            pthread_mutex_unlock(&lock);
        }
        fflush(stdout);
    }
    running = false;
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    toxav_kill(av);
    tox_kill(tox);
    return 0;
}
