/* CCrypto: OpenSSL's libcrypto (HMAC-SHA256 for webhook signatures, SHA-256,
 * ES256 signing of App Store Server API tokens with a PEM private key, and
 * later ECDSA and X.509 for App Store verification). No logic lives here. */
#ifndef TXRECON_CCRYPTO_SHIM_H
#define TXRECON_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#endif
