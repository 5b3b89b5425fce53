/* A Siri-like exchange through the C ABI, as a C app would write it: a server thread, a
 * phone-like client with WiFi (127.0.0.1) and a cellular backup (127.0.0.2), six requests of
 * 2,000 bytes answered by 20,000 bytes; after the third, the app says WiFi is lost, and the
 * rest must be answered over cellular, every byte intact. Then the checks an app relies on:
 * events, statistics, errors for bad handles and NULL buffers, no handle left.
 *
 * Built and run by tests/c_abi.rs; exits 0 on success and prints one line per request. */
#include "mpudp.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define REQUESTS 6
#define REQ_BYTES 2000
#define RESP_BYTES 20000

static int failures = 0;
#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            char e_[256];                                                                     \
            mpu_last_error(e_, sizeof e_);                                                    \
            fprintf(stderr, "FAILED %s:%d: %s (last error: %s): ", __FILE__, __LINE__, #cond, e_); \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fprintf(stderr, "\n");                                                            \
            failures++;                                                                       \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static unsigned char byte_at(int request, size_t i) { return (unsigned char)(request * 31 + i * 7); }

static int read_exact(uint64_t conn, unsigned char *buf, size_t len) {
    size_t got = 0;
    while (got < len) {
        intptr_t n = mpu_read(conn, buf + got, len - got, 10000);
        if (n <= 0) return (int)(n == 0 ? MPU_ERR_CLOSED : n);
        got += (size_t)n;
    }
    return 0;
}

/* As read_exact, by polling with timeout 0 (an app's own loop): each call returns at once,
 * with bytes or MPU_ERR_WOULD_BLOCK. */
static int read_polling(uint64_t conn, unsigned char *buf, size_t len) {
    size_t got = 0;
    for (int polls = 0; got < len && polls < 100000; polls++) {
        intptr_t n = mpu_read(conn, buf + got, len - got, 0);
        if (n > 0) {
            got += (size_t)n;
        } else if (n == MPU_ERR_WOULD_BLOCK) {
            struct timespec pause = {0, 100000};
            nanosleep(&pause, NULL);
        } else {
            return (int)(n == 0 ? MPU_ERR_CLOSED : n);
        }
    }
    return got == len ? 0 : MPU_ERR_TIMEOUT;
}

struct server_args {
    uint64_t endpoint;
    int served;
};

/* Answers each request (a 4-byte number, then REQ_BYTES) with RESP_BYTES, until the end. */
static void *serve(void *p) {
    struct server_args *a = p;
    uint64_t conn = 0;
    if (mpu_accept(a->endpoint, 10000, &conn) != MPU_OK) return NULL;
    static unsigned char req[4 + REQ_BYTES], resp[RESP_BYTES];
    for (;;) {
        if (read_exact(conn, req, sizeof req) != 0) break;
        int r = req[0];
        for (size_t i = 0; i < RESP_BYTES; i++) resp[i] = byte_at(r, i);
        if (mpu_write(conn, resp, RESP_BYTES, 10000) != RESP_BYTES) break;
        a->served++;
    }
    mpu_shutdown(conn);
    mpu_wait_closed(conn, 5000, NULL);
    mpu_conn_free(conn);
    return NULL;
}

/* Data bytes the connection's subflows on local path `path` carried. */
static uint64_t data_on(uint64_t conn, uint32_t path) {
    uint64_t sum = 0;
    MpuSubflowStats sf;
    for (uint32_t i = 0; mpu_subflow_stats(conn, i, &sf) == MPU_OK; i++)
        if (sf.path == path) sum += sf.data_bytes_sent;
    return sum;
}

static int run(void) {
    CHECK(mpu_abi_version() == MPU_ABI_VERSION, "ABI %u", mpu_abi_version());
    uint8_t seed[32];
    memset(seed, 7, sizeof seed);

    uint64_t sopts = 0, server = 0;
    CHECK(mpu_options_new(MPU_PRESET_SERVER, &sopts) == MPU_OK, "server options");
    CHECK(mpu_options_identity_seed(sopts, seed) == MPU_OK, "identity");
    char key[128], addr[64];
    CHECK(mpu_options_public_key(sopts, key, sizeof key) == MPU_OK, "public key");
    CHECK(mpu_server_new(sopts, "127.0.0.1:0", &server) == MPU_OK, "server");
    CHECK(mpu_options_free(sopts) == MPU_OK, "options free");
    CHECK(mpu_options_free(sopts) == MPU_ERR_INVALID, "a second free is refused");
    CHECK(mpu_endpoint_local_addr(server, addr, sizeof addr) == MPU_OK, "local addr");

    struct server_args sa = {server, 0};
    pthread_t t;
    pthread_create(&t, NULL, serve, &sa);

    uint64_t copts = 0, client = 0, conn = 0;
    CHECK(mpu_options_new(MPU_PRESET_PHONE, &copts) == MPU_OK, "phone options");
    CHECK(mpu_options_server_key(copts, key) == MPU_OK, "server key");
    CHECK(mpu_options_server_key(copts, "not a key") == MPU_ERR_INVALID, "a bad key is refused");
    CHECK(mpu_options_add_address(copts, "127.0.0.1:0", "wifi", MPU_IFACE_WIFI, false) == MPU_OK, "wifi");
    CHECK(mpu_options_add_address(copts, "127.0.0.2:0", "cell", MPU_IFACE_CELLULAR, true) == MPU_OK, "cell");
    CHECK(mpu_options_add_address(copts, "nowhere", "x", MPU_IFACE_WIFI, false) == MPU_ERR_INVALID, "bad address");
    CHECK(mpu_client_new(copts, &client) == MPU_OK, "client");
    mpu_options_free(copts);
    CHECK(mpu_connect(client, addr, 5000, &conn) == MPU_OK, "connect to %s", addr);

    static unsigned char req[4 + REQ_BYTES], resp[RESP_BYTES];
    double worst_after = 0;
    for (int r = 1; r <= REQUESTS; r++) {
        if (r == 4) {
            /* MultiMob keeps cellular closed while WiFi is fine. */
            CHECK(data_on(conn, 1) == 0, "cellular unused before the failover: %llu bytes",
                  (unsigned long long)data_on(conn, 1));
            CHECK(mpu_path_set_up(client, "wifi", false) == MPU_OK, "wifi down");
        }
        memset(req, 0, sizeof req);
        req[0] = (unsigned char)r;
        double t0 = now_ms();
        CHECK(mpu_write(conn, req, sizeof req, 5000) == (intptr_t)sizeof req, "request %d", r);
        /* The last answer is read as an app's poll loop reads it. */
        int got = r == REQUESTS ? read_polling(conn, resp, RESP_BYTES) : read_exact(conn, resp, RESP_BYTES);
        CHECK(got == 0, "response %d", r);
        double ms = now_ms() - t0;
        for (size_t i = 0; i < RESP_BYTES; i++) CHECK(resp[i] == byte_at(r, i), "response %d byte %zu", r, i);
        if (r >= 4 && ms > worst_after) worst_after = ms;
        printf("request %d: %.2f ms%s\n", r, ms, r >= 4 ? " (WiFi down)" : "");
    }

    /* The cellular path (path 1) carried the answers after the failover. */
    MpuStats st;
    CHECK(mpu_conn_stats(conn, &st) == MPU_OK, "stats");
    CHECK(st.bytes_read == (uint64_t)REQUESTS * RESP_BYTES, "bytes read %llu", (unsigned long long)st.bytes_read);
    CHECK(data_on(conn, 1) > 0, "data on the cellular path after the failover");

    /* Events: connected first, then a subflow on the cellular path. */
    MpuEvent ev;
    int connected = 0, cell_subflow = 0;
    while (mpu_next_event(conn, 0, &ev) == MPU_OK) {
        printf("event %u path %d subflow %lld value %u at %.1f ms\n", ev.kind, ev.path, (long long)ev.subflow,
               ev.value, ev.at_us / 1e3);
        connected |= ev.kind == MPU_EVENT_CONNECTED;
        cell_subflow |= ev.kind == MPU_EVENT_SUBFLOW_ESTABLISHED && ev.path == 1;
    }
    CHECK(connected && cell_subflow, "events: connected %d, cellular subflow %d", connected, cell_subflow);

    /* Mistakes get codes, not crashes. */
    unsigned char b[8];
    CHECK(mpu_read(conn, NULL, 8, 0) == MPU_ERR_INVALID, "NULL buffer");
    CHECK(mpu_read(conn, b, sizeof b, 0) == MPU_ERR_WOULD_BLOCK, "nothing to read now");
    CHECK(mpu_read(999999, b, sizeof b, 0) == MPU_ERR_INVALID, "unknown handle");
    CHECK(mpu_read(client, b, sizeof b, 0) == MPU_ERR_INVALID, "an endpoint is not a connection");
    CHECK(mpu_accept(client, 0, &conn) == MPU_ERR_INVALID, "a client does not accept");
    CHECK(mpu_path_set_up(client, "nosuch", true) == MPU_ERR_NO_SUCH_INTERFACE, "unknown interface");
    char msg[256];
    CHECK(mpu_last_error(msg, sizeof msg) > 0 && strstr(msg, "nosuch") != NULL, "message: %s", msg);
    CHECK(mpu_path_set_up(client, "wifi", -1) == MPU_ERR_INVALID, "a flag is 0 or 1");

    /* A graceful end: our FIN, the server's, both closed. */
    CHECK(mpu_shutdown(conn) == MPU_OK, "shutdown");
    CHECK(mpu_read(conn, b, sizeof b, 5000) == 0, "end of stream");
    uint32_t reason = 99;
    CHECK(mpu_wait_closed(conn, 5000, &reason) == MPU_OK && reason == MPU_CLOSE_GRACEFUL, "closed %u", reason);
    pthread_join(t, NULL);
    CHECK(sa.served == REQUESTS, "served %d", sa.served);
    CHECK(mpu_conn_free(conn) == MPU_OK, "free");
    CHECK(mpu_conn_free(conn) == MPU_ERR_INVALID, "double free refused");
    mpu_endpoint_free(client);
    mpu_endpoint_free(server);
    CHECK(mpu_live_handles() == 0, "handles left: %llu", (unsigned long long)mpu_live_handles());
    printf("worst response after the failover: %.2f ms\n", worst_after);
    return 0;
}

int main(void) {
    int r = run();
    if (r == 0 && failures == 0) printf("ok\n");
    return r || failures;
}
