/* CCrypto: OpenSSL's libcrypto (HMAC-SHA256 for webhook signatures, SHA-256,
 * and later ECDSA and X.509 for App Store verification). No logic lives here. */
#ifndef TXRECON_CCRYPTO_SHIM_H
#define TXRECON_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#endif
