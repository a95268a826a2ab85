/*
 * spoolref.h: what the bench's reference programs (curlclient.c, curlmulti.c)
 * do alike with a spool and a clock: list new/, finish a file into done/,
 * take the Idempotency-Key txrecon would send from a file's "id" and
 * "versionToken", and read the clocks they report. Static functions only,
 * included by each program.
 */
#ifndef TXRECON_BENCH_SPOOLREF_H
#define TXRECON_BENCH_SPOOLREF_H
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* The names in SPOOL/new/ (but . and ..) into *names; returns how many. */
static size_t list_new(const char *spool, char ***names) {
    char path[4096];
    snprintf(path, sizeof path, "%s/new", spool);
    DIR *directory = opendir(path);
    if (directory == NULL) {
        perror(path);
        exit(2);
    }
    size_t capacity = 1024, count = 0;
    *names = malloc(capacity * sizeof **names);
    struct dirent *entry;
    while ((entry = readdir(directory)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        if (count == capacity) {
            capacity *= 2;
            *names = realloc(*names, capacity * sizeof **names);
        }
        (*names)[count++] = strdup(entry->d_name);
    }
    closedir(directory);
    return count;
}

/* SPOOL/new/NAME -> SPOOL/done/NAME, as txrecon finishes a delivered item. */
static void finish(const char *spool, const char *name) {
    char from[4096], to[4096];
    snprintf(from, sizeof from, "%s/new/%s", spool, name);
    snprintf(to, sizeof to, "%s/done/%s", spool, name);
    if (rename(from, to) != 0) {
        perror(from);
        exit(2);
    }
}

/* "Idempotency-Key: ID:VERSIONTOKEN" from `text`'s "id" and "versionToken"
 * into `header` ("Idempotency-Key: unknown" when either is missing). */
static void idempotency_header(const char *text, char *header, size_t size) {
    const char *id = strstr(text, "\"id\":\"");
    const char *version = strstr(text, "\"versionToken\":\"");
    if (id == NULL || version == NULL) {
        snprintf(header, size, "Idempotency-Key: unknown");
        return;
    }
    id += 6;
    version += 16;
    int id_length = (int)(strchr(id, '"') - id);
    int version_length = (int)(strchr(version, '"') - version);
    snprintf(header, size, "Idempotency-Key: %.*s:%.*s", id_length, id, version_length, version);
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* User and system CPU of the whole process so far. */
static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
         + (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}
#endif
