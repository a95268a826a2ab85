/* CCrypto: OpenSSL's libcrypto for Swift: HMAC-SHA256 and SHA-256 for
 * webhook signatures, ES256 signing of App Store Server API tokens with a
 * PEM private key, ECDSA P-256 and X.509 chain validation for App Store
 * signed data, PKCS#7 for StoreKit 1 receipts. The STACK_OF(X509) accessors and the RFC 2253 name-printing
 * flags are macros, which Swift cannot use, so this header gives them typed
 * wrappers. No logic lives here. */
#ifndef TXRECON_CCRYPTO_SHIM_H
#define TXRECON_CCRYPTO_SHIM_H
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

/* The certificates a PKCS#7 SignedData carries (p7->d.sign->cert, a
 * union member behind a macro-tested type); NULL for any other type. */
static inline STACK_OF(X509) *txr_PKCS7_certificates(PKCS7 *p7) {
    return PKCS7_type_is_signed(p7) ? p7->d.sign->cert : NULL;
}
static inline STACK_OF(X509) *txr_sk_X509_new_null(void) {
    return sk_X509_new_null();
}
static inline int txr_sk_X509_push(STACK_OF(X509) *stack, X509 *certificate) {
    return sk_X509_push(stack, certificate);
}
static inline void txr_sk_X509_free(STACK_OF(X509) *stack) {
    sk_X509_free(stack);
}
static inline int txr_sk_X509_num(const STACK_OF(X509) *stack) {
    return sk_X509_num(stack);
}
static inline X509 *txr_sk_X509_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}
static inline unsigned long txr_XN_FLAG_RFC2253(void) {
    return XN_FLAG_RFC2253;
}
#endif
