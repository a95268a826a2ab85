/* CMicroHTTPD: GNU libmicrohttpd for Swift, for `txrecon receive`.
 * MHD_start_daemon and MHD_get_connection_info are variadic, which Swift
 * cannot call, so this header gives them typed wrappers. No logic lives here. */
#ifndef TXRECON_CMICROHTTPD_SHIM_H
#define TXRECON_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* MHD_start_daemon with the accept policy `policy` and every option in
 * `options` (MHD_OPTION_END-terminated). */
static inline struct MHD_Daemon *txr_mhd_start(unsigned int flags, MHD_AcceptPolicyCallback policy,
                                               MHD_AccessHandlerCallback handler, void *context,
                                               const struct MHD_OptionItem *options) {
    return MHD_start_daemon(flags, 0, policy, context, handler, context, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/* The client's address; NULL when libmicrohttpd has none. */
static inline const struct sockaddr *txr_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

/* The status of the answer queued on the connection; 0 when none is. */
static inline unsigned int txr_mhd_http_status(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_HTTP_STATUS);
    return info ? info->http_status : 0;
}

/* The connection's socket; -1 when libmicrohttpd has none. */
static inline int txr_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}
#endif
