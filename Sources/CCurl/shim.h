/* CCurl: libcurl for Swift. curl_easy_setopt and curl_easy_getinfo are
 * variadic, which Swift cannot call, so this header gives them typed
 * wrappers, one per argument type. No logic lives here. */
#ifndef TXRECON_CCURL_SHIM_H
#define TXRECON_CCURL_SHIM_H
#include <curl/curl.h>

static inline CURLcode txr_curl_setopt_long(CURL *h, CURLoption o, long v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode txr_curl_setopt_string(CURL *h, CURLoption o, const char *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode txr_curl_setopt_pointer(CURL *h, CURLoption o, void *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode txr_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode txr_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v) {
    return curl_easy_setopt(h, o, v);
}
/* A blob option (CURLOPT_*_BLOB) with bytes curl copies at once
 * (CURL_BLOB_COPY), so the caller's buffer need not outlive the call. */
static inline CURLcode txr_curl_setopt_blob(CURL *h, CURLoption o, const void *data, size_t length) {
    struct curl_blob blob = { (void *)data, length, CURL_BLOB_COPY };
    return curl_easy_setopt(h, o, &blob);
}
typedef size_t (*txr_curl_data_callback)(char *, size_t, size_t, void *);
static inline CURLcode txr_curl_setopt_data_callback(CURL *h, CURLoption o, txr_curl_data_callback v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode txr_curl_getinfo_long(CURL *h, CURLINFO i, long *v) {
    return curl_easy_getinfo(h, i, v);
}
/* curl_multi_setopt is variadic as well: the multi interface's socket and
 * timer callbacks (with their data pointer), and its long options. */
typedef int (*txr_curl_socket_callback)(CURL *, curl_socket_t, int, void *, void *);
static inline CURLMcode txr_curl_multi_setopt_socket(CURLM *m, txr_curl_socket_callback f, void *data) {
    CURLMcode code = curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, f);
    return code != CURLM_OK ? code : curl_multi_setopt(m, CURLMOPT_SOCKETDATA, data);
}
typedef int (*txr_curl_timer_callback)(CURLM *, long, void *);
static inline CURLMcode txr_curl_multi_setopt_timer(CURLM *m, txr_curl_timer_callback f, void *data) {
    CURLMcode code = curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, f);
    return code != CURLM_OK ? code : curl_multi_setopt(m, CURLMOPT_TIMERDATA, data);
}
static inline CURLMcode txr_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}
/* curl_version_info's argument is a macro (CURLVERSION_NOW), which Swift
 * does not import. */
static inline curl_version_info_data *txr_curl_version_info(void) {
    return curl_version_info(CURLVERSION_NOW);
}
static inline CURLcode txr_curl_getinfo_pointer(CURL *h, CURLINFO i, void **v) {
    return curl_easy_getinfo(h, i, v);
}
#endif
