/*
 * curlmulti: the single-threaded reference of issue 44's speed goal.
 *
 *   curlmulti URL SPOOL CONNECTIONS
 *
 * Does per file what any spool delivery program must, and nothing else, on
 * one thread: lists SPOOL/new/ (readdir(3)), opens each file and reads it
 * whole, POSTs what it read with the headers txrecon sends (Content-Type,
 * User-Agent, an Idempotency-Key taken from the file's "id" and
 * "versionToken") over CONNECTIONS keep-alive connections driven by
 * libcurl's multi interface, and on a 2xx renames the file into
 * SPOOL/done/. At most CONNECTIONS requests are in flight, one per easy
 * handle; each handle keeps its connection for the whole run (the multi
 * handle's connection cache is capped at CONNECTIONS). A file is read only
 * when a handle is free to send it, as a daemon with a bounded number of
 * deliveries in flight would.
 *
 * Beside bench/curlclient.c's `read` mode (the same work with one blocking
 * thread per connection, txrecon's shape before issue 44), this is what
 * the work costs when one thread does it all: no thread hand-over, no
 * lock, one poll for every connection.
 *
 * Prints one line on stdout, as curlclient does:
 *   items=N errors=E seconds=S rate=R cpu_seconds=C process_cpu_seconds=P
 * (seconds and rate by the program's own clock, from the first request to
 * the last answer; cpu_seconds is the user+system time of that span, and
 * process_cpu_seconds that of the whole process, from exec). Exit status 0
 * when every answer was 2xx, 1 when some were not, 2 on bad usage, an
 * unreadable file or a failed rename.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spoolref.h"

/* One connection's easy handle and what it is sending. */
struct slot {
    CURL *handle;
    struct curl_slist *headers;
    char *body;
    size_t capacity;
    size_t name;  /* index into names[] of the file in flight */
    char idempotency_header[192];
};

static const char *spool;
static char **names;

/* Discards the response body: the status code is all that matters. */
static size_t discard(char *data, size_t size, size_t count, void *context) {
    (void)data;
    (void)context;
    return size * count;
}

/* SPOOL/new/NAME whole into the slot's buffer (open, fstat, read); its length. */
static size_t read_file(struct slot *slot, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/new/%s", spool, name);
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    struct stat status;
    if (descriptor < 0 || fstat(descriptor, &status) != 0) {
        perror(path);
        exit(2);
    }
    size_t wanted = (size_t)status.st_size + 1;
    if (wanted > slot->capacity) {
        slot->capacity = wanted > 8192 ? wanted : 8192;
        slot->body = realloc(slot->body, slot->capacity);
    }
    size_t length = 0;
    for (;;) {
        ssize_t count = read(descriptor, slot->body + length, slot->capacity - length - 1);
        if (count < 0) {
            perror(path);
            exit(2);
        }
        if (count == 0) break;
        length += (size_t)count;
        if (length + 1 == slot->capacity) {
            slot->capacity *= 2;
            slot->body = realloc(slot->body, slot->capacity);
        }
    }
    close(descriptor);
    slot->body[length] = '\0';
    return length;
}

/* Reads file `index` into the slot and adds its request to the multi handle. */
static void send_file(CURLM *multi, struct slot *slot, size_t index) {
    slot->name = index;
    size_t length = read_file(slot, names[index]);
    idempotency_header(slot->body, slot->idempotency_header, sizeof slot->idempotency_header);
    slot->headers = curl_slist_append(NULL, "Content-Type: application/json");
    slot->headers = curl_slist_append(slot->headers, "User-Agent: curlmulti/1");
    slot->headers = curl_slist_append(slot->headers, slot->idempotency_header);
    slot->headers = curl_slist_append(slot->headers, "Expect:");
    curl_easy_setopt(slot->handle, CURLOPT_HTTPHEADER, slot->headers);
    curl_easy_setopt(slot->handle, CURLOPT_POSTFIELDS, slot->body);
    curl_easy_setopt(slot->handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)length);
    curl_multi_add_handle(multi, slot->handle);
}

int main(int argc, char **argv) {
    if (argc != 4 || atoi(argv[3]) < 1) {
        fprintf(stderr, "usage: curlmulti URL SPOOL CONNECTIONS\n");
        return 2;
    }
    const char *url = argv[1];
    spool = argv[2];
    size_t connections = (size_t)atoi(argv[3]);
    size_t count = list_new(spool, &names);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)connections);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)connections);
    struct slot *slots = calloc(connections, sizeof *slots);
    for (size_t i = 0; i < connections; i++) {
        slots[i].handle = curl_easy_init();
        curl_easy_setopt(slots[i].handle, CURLOPT_URL, url);
        curl_easy_setopt(slots[i].handle, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(slots[i].handle, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(slots[i].handle, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(slots[i].handle, CURLOPT_PRIVATE, &slots[i]);
    }

    double cpu_start = cpu_seconds(), start = seconds_now();
    size_t next = 0, running = 0, errors = 0;
    for (size_t i = 0; i < connections && next < count; i++, running++) send_file(multi, &slots[i], next++);
    while (running > 0) {
        int active = 0;
        curl_multi_perform(multi, &active);
        CURLMsg *message;
        int queued;
        while ((message = curl_multi_info_read(multi, &queued)) != NULL) {
            if (message->msg != CURLMSG_DONE) continue;
            struct slot *slot;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&slot);
            CURLcode code = message->data.result;
            long status = 0;
            if (code == CURLE_OK) curl_easy_getinfo(slot->handle, CURLINFO_RESPONSE_CODE, &status);
            curl_multi_remove_handle(multi, slot->handle);
            curl_slist_free_all(slot->headers);
            slot->headers = NULL;
            running--;
            if (code == CURLE_OK && status >= 200 && status <= 299) {
                finish(spool, names[slot->name]);
            } else if (errors++ == 0) {
                fprintf(stderr, "curlmulti: %s: %s, HTTP status %ld\n", url, curl_easy_strerror(code), status);
            }
            if (next < count) {
                send_file(multi, slot, next++);
                running++;
            }
        }
        if (running > 0) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    double elapsed = seconds_now() - start, cpu = cpu_seconds() - cpu_start;

    printf("items=%zu errors=%zu seconds=%.6f rate=%.1f cpu_seconds=%.6f process_cpu_seconds=%.6f\n", count, errors,
           elapsed, (double)count / elapsed, cpu, cpu_seconds());
    for (size_t i = 0; i < connections; i++) {
        curl_easy_cleanup(slots[i].handle);
        free(slots[i].body);
    }
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return errors == 0 ? 0 : 1;
}
