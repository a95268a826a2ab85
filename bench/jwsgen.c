/*
 * jwsgen: App Store-style signed transactions for the JWS drain of
 * `make bench`, signed by the bench's test PKI (bench/appstore_pki.py).
 *
 *   jwsgen LEAF_KEY LEAF_CERT INTERMEDIATE_CERT ROOT_CERT BUNDLE_ID ENVIRONMENT
 *          DIRECTORY PREFIX COUNT FIRST_TRANSACTION_ID
 *
 * Writes COUNT files DIRECTORY/PREFIX-NNNNNNN (7 digits, from 0), each
 * {"signedTransactionInfo":"<JWS>"} as an app would upload it (input
 * format 3). Every JWS is a compact ES256 JWS whose header carries x5c with
 * the leaf, intermediate and root certificates (standard base64 DER), and
 * whose payload is a JWSTransactionDecodedPayload with a distinct
 * transactionId (FIRST_TRANSACTION_ID + N), the given bundleId and
 * environment, and signedDate = now (the test certificates were made before).
 * The signature is JOSE's raw r||s, 64 bytes, over "header.payload".
 *
 * Files are created with O_EXCL. Diagnostics on stderr; exit status 0 on
 * success, 1 on any failure (unreadable key or certificate, failed write),
 * 2 on bad usage.
 */
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static void fail(const char *what) {
    fprintf(stderr, "jwsgen: %s\n", what);
    exit(1);
}

/* Base64 of `length` bytes into `out` (NUL-terminated); url: base64url
 * without padding, else standard base64 with padding. Returns the length. */
static size_t base64(const unsigned char *data, size_t length, char *out, int url) {
    const char *alphabet = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                               : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t written = 0, i = 0;
    for (; i + 2 < length; i += 3) {
        unsigned value = (unsigned)data[i] << 16 | (unsigned)data[i + 1] << 8 | data[i + 2];
        out[written++] = alphabet[value >> 18 & 63];
        out[written++] = alphabet[value >> 12 & 63];
        out[written++] = alphabet[value >> 6 & 63];
        out[written++] = alphabet[value & 63];
    }
    if (i < length) {
        unsigned value = (unsigned)data[i] << 16 | (i + 1 < length ? (unsigned)data[i + 1] << 8 : 0);
        out[written++] = alphabet[value >> 18 & 63];
        out[written++] = alphabet[value >> 12 & 63];
        if (i + 1 < length) out[written++] = alphabet[value >> 6 & 63];
        else if (!url) out[written++] = '=';
        if (!url) out[written++] = '=';
    }
    out[written] = '\0';
    return written;
}

/* The certificate in `path` (PEM) as standard base64 DER, malloc'd. */
static char *certificate_base64(const char *path) {
    FILE *file = fopen(path, "r");
    if (file == NULL) fail(path);
    X509 *certificate = PEM_read_X509(file, NULL, NULL, NULL);
    fclose(file);
    if (certificate == NULL) fail("not a PEM certificate");
    unsigned char *der = NULL;
    int length = i2d_X509(certificate, &der);
    if (length <= 0) fail("cannot encode a certificate");
    char *text = malloc((size_t)length * 4 / 3 + 8);
    base64(der, (size_t)length, text, 0);
    OPENSSL_free(der);
    X509_free(certificate);
    return text;
}

/* ES256 over `input`: the JOSE signature r||s as base64url into `out`. */
static void sign(EVP_PKEY *key, const char *input, size_t length, char *out) {
    unsigned char der[128];
    size_t der_length = sizeof der;
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (EVP_DigestSignInit(context, NULL, EVP_sha256(), NULL, key) != 1
        || EVP_DigestSign(context, der, &der_length, (const unsigned char *)input, length) != 1) {
        fail("signing failed");
    }
    EVP_MD_CTX_free(context);
    const unsigned char *cursor = der;
    ECDSA_SIG *signature = d2i_ECDSA_SIG(NULL, &cursor, (long)der_length);
    if (signature == NULL) fail("cannot decode the signature");
    unsigned char raw[64];
    if (BN_bn2binpad(ECDSA_SIG_get0_r(signature), raw, 32) != 32
        || BN_bn2binpad(ECDSA_SIG_get0_s(signature), raw + 32, 32) != 32) {
        fail("signature component too large");
    }
    ECDSA_SIG_free(signature);
    base64(raw, sizeof raw, out, 1);
}

int main(int argc, char **argv) {
    if (argc != 11) {
        fprintf(stderr, "usage: jwsgen LEAF_KEY LEAF_CERT INTERMEDIATE_CERT ROOT_CERT BUNDLE_ID ENVIRONMENT "
                        "DIRECTORY PREFIX COUNT FIRST_TRANSACTION_ID\n");
        return 2;
    }
    const char *bundle_id = argv[5], *environment = argv[6], *directory = argv[7], *prefix = argv[8];
    long count = atol(argv[9]);
    long long first_transaction = atoll(argv[10]);

    FILE *key_file = fopen(argv[1], "r");
    if (key_file == NULL) fail(argv[1]);
    EVP_PKEY *key = PEM_read_PrivateKey(key_file, NULL, NULL, NULL);
    fclose(key_file);
    if (key == NULL) fail("not a PEM private key");

    char *leaf = certificate_base64(argv[2]), *intermediate = certificate_base64(argv[3]);
    char *root = certificate_base64(argv[4]);
    size_t header_capacity = strlen(leaf) + strlen(intermediate) + strlen(root) + 64;
    char *header = malloc(header_capacity);
    snprintf(header, header_capacity, "{\"alg\":\"ES256\",\"x5c\":[\"%s\",\"%s\",\"%s\"]}", leaf, intermediate, root);
    char *header_b64 = malloc(strlen(header) * 4 / 3 + 8);
    size_t header_b64_length = base64((unsigned char *)header, strlen(header), header_b64, 1);

    struct timeval now;
    gettimeofday(&now, NULL);
    long long signed_date = (long long)now.tv_sec * 1000;
    long long purchase = signed_date - 3600000;

    char payload[2048], payload_b64[2900], signature_b64[96], path[4096];
    size_t input_capacity = header_b64_length + sizeof payload_b64 + 2;
    char *input = malloc(input_capacity);
    for (long index = 0; index < count; index++) {
        long long transaction = first_transaction + index;
        int payload_length = snprintf(payload, sizeof payload,
            "{\"transactionId\":\"%lld\",\"originalTransactionId\":\"%lld\",\"webOrderLineItemId\":\"%lld\","
            "\"bundleId\":\"%s\",\"productId\":\"com.example.pro.monthly\",\"subscriptionGroupIdentifier\":\"21000000\","
            "\"purchaseDate\":%lld,\"originalPurchaseDate\":%lld,\"expiresDate\":%lld,\"quantity\":1,"
            "\"type\":\"Auto-Renewable Subscription\",\"inAppOwnershipType\":\"PURCHASED\",\"signedDate\":%lld,"
            "\"environment\":\"%s\",\"transactionReason\":\"PURCHASE\",\"storefront\":\"USA\","
            "\"storefrontId\":\"143441\",\"price\":4990,\"currency\":\"USD\"}",
            transaction, transaction, transaction + 1000000, bundle_id, purchase, purchase,
            purchase + 30LL * 86400000, signed_date, environment);
        base64((unsigned char *)payload, (size_t)payload_length, payload_b64, 1);
        int input_length = snprintf(input, input_capacity, "%s.%s", header_b64, payload_b64);
        sign(key, input, (size_t)input_length, signature_b64);

        snprintf(path, sizeof path, "%s/%s-%07ld", directory, prefix, index);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0640);
        if (fd < 0) fail(path);
        FILE *out = fdopen(fd, "w");
        if (fprintf(out, "{\"signedTransactionInfo\":\"%s.%s\"}", input, signature_b64) < 0 || fclose(out) != 0) {
            fail(path);
        }
    }
    EVP_PKEY_free(key);
    return 0;
}
