/*
 * curlclient: the reference point of `make bench` (measurement 2), a plain
 * libcurl client posting the same bodies as txrecon over the same number of
 * keep-alive connections.
 *
 *   curlclient URL BODIES CONNECTIONS [SPOOL [read]]
 *
 * BODIES holds one request body per line, as txrecon would send them. Each
 * body is POSTed once with the headers txrecon sends (Content-Type,
 * User-Agent, Idempotency-Key taken from the body's "id"). CONNECTIONS
 * threads each own one easy handle for the whole run, so every thread keeps
 * one connection open, like txrecon's curl workers. The bodies are read
 * before the clock starts: only the HTTP exchanges are timed.
 *
 * With SPOOL, each thread also does what a spool daemon cannot avoid: after
 * the 2xx for body N (counting from 0) it renames SPOOL/new/c-NNNNNNN to
 * SPOOL/done/c-NNNNNNN (seven digits), one rename(2) per request, the files
 * made by the caller beforehand. That is the floor under txrecon's drain on
 * this file system: an exchange and a rename, nothing read, parsed or logged.
 *
 * With SPOOL and `read`, the per-file reference of issue 23's speed goal:
 * everything a spool delivery program must do per item, and nothing else
 * (no parsing, no scheduling, no logging). BODIES is not read (pass -): the
 * program lists SPOOL/new/ (readdir(3), as a spool daemon must), and each
 * thread takes the next name, opens the file, reads it whole, POSTs what it
 * read with the Idempotency-Key taken from its "id" and "versionToken", and
 * on a 2xx renames it into SPOOL/done/. Nothing is prepared before exec, so
 * the bench may time it from its exec to its last rename as it times the
 * daemon (bench/FINDINGS.md, "Both drains timed from exec").
 *
 * Prints one line on stdout:
 *   items=N errors=E seconds=S rate=R cpu_seconds=C process_cpu_seconds=P
 * (seconds and rate by the program's own clock, from its threads' start to
 * their end; cpu_seconds is the user+system time of that span, and
 * process_cpu_seconds that of the whole process, from exec). Exit status 0 when every answer was 2xx,
 * 1 when some were not, 2 on bad usage, an unreadable BODIES file or a
 * failed rename.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "spoolref.h"

struct body {
    char *text;
    size_t length;
    char idempotency_header[192];
};

struct run {
    const char *url;
    struct body *bodies;
    /* In `read` mode, the names listed in SPOOL/new/ (bodies is unused). */
    char **names;
    size_t count;
    const char *spool;
    int read_files;
    atomic_size_t next;
    atomic_size_t errors;
};

/* Discards the response body: the status code is all that matters. */
static size_t discard(char *data, size_t size, size_t count, void *context) {
    (void)data;
    (void)context;
    return size * count;
}

/* The Idempotency-Key txrecon would send for a body. */
static void make_idempotency_header(struct body *body) {
    idempotency_header(body->text, body->idempotency_header, sizeof body->idempotency_header);
}

/* SPOOL/new/NAME whole into *buffer (grown as needed, one byte kept for a
 * terminating NUL); its length. */
static size_t read_file(const char *spool, const char *name, char **buffer, size_t *capacity) {
    char path[4096];
    snprintf(path, sizeof path, "%s/new/%s", spool, name);
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        perror(path);
        exit(2);
    }
    size_t length = 0, count;
    for (;;) {
        if (length + 1 >= *capacity) {
            *capacity = *capacity ? *capacity * 2 : 8192;
            *buffer = realloc(*buffer, *capacity);
        }
        count = fread(*buffer + length, 1, *capacity - length - 1, file);
        if (count == 0) break;
        length += count;
    }
    fclose(file);
    (*buffer)[length] = '\0';
    return length;
}

static void *post_bodies(void *argument) {
    struct run *run = argument;
    CURL *handle = curl_easy_init();
    if (handle == NULL) {
        fprintf(stderr, "curlclient: curl_easy_init failed\n");
        exit(2);
    }
    curl_easy_setopt(handle, CURLOPT_URL, run->url);
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(handle, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, discard);
    char *file_body = NULL;
    size_t file_capacity = 0;
    for (;;) {
        size_t index = atomic_fetch_add(&run->next, 1);
        if (index >= run->count) break;
        struct body file = {0};
        struct body *body = run->read_files ? &file : &run->bodies[index];
        char name[32];
        if (run->read_files) {
            file.length = read_file(run->spool, run->names[index], &file_body, &file_capacity);
            file.text = file_body;
            make_idempotency_header(&file);
        } else if (run->spool != NULL) {
            snprintf(name, sizeof name, "c-%07zu", index);
        }
        struct curl_slist *headers = NULL;
        headers = curl_slist_append(headers, "Content-Type: application/json");
        headers = curl_slist_append(headers, "User-Agent: curlclient/1");
        headers = curl_slist_append(headers, body->idempotency_header);
        headers = curl_slist_append(headers, "Expect:");
        curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(handle, CURLOPT_POSTFIELDS, body->text);
        curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->length);
        long status = 0;
        CURLcode code = curl_easy_perform(handle);
        if (code == CURLE_OK) curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
        if (code != CURLE_OK || status < 200 || status > 299) {
            if (atomic_fetch_add(&run->errors, 1) == 0) {
                fprintf(stderr, "curlclient: %s: %s, HTTP status %ld\n", run->url, curl_easy_strerror(code), status);
            }
        }
        curl_slist_free_all(headers);
        if (run->spool != NULL && code == CURLE_OK && status >= 200 && status <= 299) finish(run->spool, run->read_files ? run->names[index] : name);
    }
    free(file_body);
    curl_easy_cleanup(handle);
    return NULL;
}

/* Reads BODIES into memory, one body per line; returns the number read. */
static size_t read_bodies(const char *path, struct body **bodies) {
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        perror(path);
        exit(2);
    }
    size_t capacity = 1024, count = 0;
    *bodies = malloc(capacity * sizeof **bodies);
    char *line = NULL;
    size_t line_capacity = 0;
    ssize_t length;
    while ((length = getline(&line, &line_capacity, file)) > 0) {
        if (line[length - 1] == '\n') line[--length] = '\0';
        if (length == 0) continue;
        if (count == capacity) {
            capacity *= 2;
            *bodies = realloc(*bodies, capacity * sizeof **bodies);
        }
        (*bodies)[count].text = strndup(line, (size_t)length);
        (*bodies)[count].length = (size_t)length;
        make_idempotency_header(&(*bodies)[count]);
        count++;
    }
    free(line);
    fclose(file);
    return count;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 6 || atoi(argv[3]) < 1 || (argc == 6 && strcmp(argv[5], "read") != 0)) {
        fprintf(stderr, "usage: curlclient URL BODIES CONNECTIONS [SPOOL [read]]\n");
        return 2;
    }
    struct run run = {.url = argv[1], .spool = argc >= 5 ? argv[4] : NULL, .read_files = argc == 6};
    run.count = run.read_files ? list_new(run.spool, &run.names) : read_bodies(argv[2], &run.bodies);
    int connections = atoi(argv[3]);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    pthread_t *threads = calloc((size_t)connections, sizeof *threads);
    double cpu_start = cpu_seconds(), start = seconds_now();
    for (int i = 0; i < connections; i++) pthread_create(&threads[i], NULL, post_bodies, &run);
    for (int i = 0; i < connections; i++) pthread_join(threads[i], NULL);
    double elapsed = seconds_now() - start, cpu = cpu_seconds() - cpu_start;

    size_t errors = atomic_load(&run.errors);
    printf("items=%zu errors=%zu seconds=%.6f rate=%.1f cpu_seconds=%.6f process_cpu_seconds=%.6f\n", run.count,
           errors, elapsed, (double)run.count / elapsed, cpu, cpu_seconds());
    curl_global_cleanup();
    return errors == 0 ? 0 : 1;
}
