/*
 * receiptgen: StoreKit 1 receipt uploads for the receipt drain of
 * `make bench`, signed by the bench's receipt PKI (bench/receipt_pki.py),
 * shaped like Apple's: a PKCS#7 SignedData without signed attributes
 * (RSA-2048, SHA-256), carrying leaf, intermediate and root, whose content
 * is Apple's attribute set.
 *
 *   receiptgen LEAF_KEY LEAF_CERT INTERMEDIATE_CERT ROOT_CERT BUNDLE_ID
 *              DIRECTORY PREFIX COUNT FIRST_TRANSACTION_ID [PURCHASES]
 *
 * Writes COUNT files DIRECTORY/PREFIX-NNNNNNN (7 digits, from 0), each
 * {"receipt":"<base64>","orderID":"bench-N","applicationUsername":"user-N"}
 * as a StoreKit 1 app uploads it (input format 6): a ProductionSandbox
 * receipt for BUNDLE_ID created now, with one in-app purchase whose
 * transaction id is FIRST_TRANSACTION_ID + N, purchased now. With
 * PURCHASES (default 1) above 1, each receipt holds that many purchases,
 * transaction ids FIRST_TRANSACTION_ID + N * PURCHASES + 0, 1, …, each
 * entry with Apple's further attributes so that it is as large as Apple
 * writes one (about 420 bytes): 5,000 make an upload of about 2.8 MB, a
 * customer's long history.
 *
 * Files are created with O_EXCL. Diagnostics on stderr; exit status 0 on
 * success, 1 on any failure, 2 on bad usage.
 */
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void fail(const char *what) {
    fprintf(stderr, "receiptgen: %s\n", what);
    exit(1);
}

/* A growing byte buffer. */
struct buffer {
    unsigned char *bytes;
    size_t length, capacity;
};

static void append(struct buffer *buffer, const void *bytes, size_t length) {
    if (buffer->length + length > buffer->capacity) {
        buffer->capacity = (buffer->length + length) * 2 + 64;
        buffer->bytes = realloc(buffer->bytes, buffer->capacity);
        if (!buffer->bytes) fail("out of memory");
    }
    memcpy(buffer->bytes + buffer->length, bytes, length);
    buffer->length += length;
}

/* TAG, a DER length, then the contents. */
static void tlv(struct buffer *out, unsigned char tag, const struct buffer *contents) {
    unsigned char header[6] = {tag};
    size_t used = 1, length = contents->length;
    if (length < 0x80) {
        header[used++] = (unsigned char)length;
    } else if (length < 0x100) {
        header[used++] = 0x81;
        header[used++] = (unsigned char)length;
    } else if (length < 0x10000) {
        header[used++] = 0x82;
        header[used++] = (unsigned char)(length >> 8);
        header[used++] = (unsigned char)length;
    } else {
        header[used++] = 0x83;
        header[used++] = (unsigned char)(length >> 16);
        header[used++] = (unsigned char)(length >> 8);
        header[used++] = (unsigned char)length;
    }
    append(out, header, used);
    append(out, contents->bytes, contents->length);
}

static void integer(struct buffer *out, long value) {
    unsigned char bytes[9];
    size_t used = 0;
    do {
        memmove(bytes + 1, bytes, used++);
        bytes[0] = (unsigned char)(value & 0xFF);
        value >>= 8;
    } while (value > 0);
    if (bytes[0] & 0x80) {
        memmove(bytes + 1, bytes, used++);
        bytes[0] = 0;
    }
    struct buffer contents = {bytes, used, used};
    tlv(out, 0x02, &contents);
}

/* SEQUENCE { type, 1, OCTET STRING { value } } */
static void attribute(struct buffer *out, long type, const struct buffer *value) {
    struct buffer sequence = {0}, octets = {0};
    tlv(&octets, 0x04, value);
    integer(&sequence, type);
    integer(&sequence, 1);
    append(&sequence, octets.bytes, octets.length);
    tlv(out, 0x30, &sequence);
    free(sequence.bytes);
    free(octets.bytes);
}

static void string_attribute(struct buffer *out, long type, unsigned char tag, const char *text) {
    struct buffer value = {0}, contents = {(unsigned char *)text, strlen(text), strlen(text)};
    tlv(&value, tag, &contents);
    attribute(out, type, &value);
    free(value.bytes);
}

static void integer_attribute(struct buffer *out, long type, long number) {
    struct buffer value = {0};
    integer(&value, number);
    attribute(out, type, &value);
    free(value.bytes);
}

static X509 *read_certificate(const char *path) {
    FILE *file = fopen(path, "r");
    if (!file) fail("cannot open a certificate");
    X509 *certificate = PEM_read_X509(file, NULL, NULL, NULL);
    fclose(file);
    if (!certificate) fail("cannot read a certificate");
    return certificate;
}

static size_t base64(const unsigned char *data, size_t length, char *out) {
    return (size_t)EVP_EncodeBlock((unsigned char *)out, data, (int)length);
}

int main(int argc, char **argv) {
    if (argc != 10 && argc != 11) {
        fprintf(stderr, "usage: receiptgen LEAF_KEY LEAF_CERT INTERMEDIATE_CERT ROOT_CERT BUNDLE_ID "
                        "DIRECTORY PREFIX COUNT FIRST_TRANSACTION_ID [PURCHASES]\n");
        return 2;
    }
    long purchases = argc == 11 ? atol(argv[10]) : 1;
    if (purchases < 1 || purchases > 100000) fail("PURCHASES must be 1 to 100000");
    FILE *key_file = fopen(argv[1], "r");
    if (!key_file) fail("cannot open the leaf key");
    EVP_PKEY *key = PEM_read_PrivateKey(key_file, NULL, NULL, NULL);
    fclose(key_file);
    if (!key) fail("cannot read the leaf key");
    X509 *leaf = read_certificate(argv[2]);
    STACK_OF(X509) *chain = sk_X509_new_null();
    sk_X509_push(chain, read_certificate(argv[3]));
    sk_X509_push(chain, read_certificate(argv[4]));
    const char *bundle = argv[5], *directory = argv[6], *prefix = argv[7];
    long count = atol(argv[8]);
    long long first = atoll(argv[9]);

    char now[32];
    time_t seconds = time(NULL);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime(&seconds));
    size_t capacity = 64 * 1024 + (size_t)purchases * 1024;
    char *text = malloc(capacity);
    if (!text) fail("out of memory");
    for (long index = 0; index < count; index++) {
        struct buffer attributes = {0}, payload = {0};
        string_attribute(&attributes, 0, 0x0C, "ProductionSandbox");
        string_attribute(&attributes, 2, 0x0C, bundle);
        string_attribute(&attributes, 3, 0x0C, "1.0");
        string_attribute(&attributes, 12, 0x16, now);
        for (long entry = 0; entry < purchases; entry++) {
            char transaction[32];
            snprintf(transaction, sizeof transaction, "%lld", first + index * purchases + entry);
            struct buffer purchase = {0}, purchase_set = {0};
            integer_attribute(&purchase, 1701, 1);
            string_attribute(&purchase, 1702, 0x0C, "com.example.txrecon.bench.premium");
            string_attribute(&purchase, 1703, 0x0C, transaction);
            string_attribute(&purchase, 1704, 0x16, now);
            string_attribute(&purchase, 1705, 0x0C, transaction);
            string_attribute(&purchase, 1706, 0x16, now);
            string_attribute(&purchase, 1708, 0x16, "");
            string_attribute(&purchase, 1712, 0x16, "");
            if (purchases > 1) {
                /* Apple's further attributes: an entry as large as a real one. */
                integer_attribute(&purchase, 1707, 3);
                string_attribute(&purchase, 1709, 0x16, "");
                integer_attribute(&purchase, 1710, 0);
                integer_attribute(&purchase, 1711, 1000000048877195L);
                integer_attribute(&purchase, 1713, 0);
                for (long type = 1714; type <= 1718; type++) string_attribute(&purchase, type, 0x16, "");
                integer_attribute(&purchase, 1719, 0);
            }
            tlv(&purchase_set, 0x31, &purchase);
            attribute(&attributes, 17, &purchase_set);
            free(purchase.bytes);
            free(purchase_set.bytes);
        }
        tlv(&payload, 0x31, &attributes);

        BIO *input = BIO_new_mem_buf(payload.bytes, (int)payload.length);
        PKCS7 *signed_data = PKCS7_sign(leaf, key, chain, input, PKCS7_BINARY | PKCS7_NOATTR | PKCS7_NOSMIMECAP);
        BIO_free(input);
        if (!signed_data) fail("PKCS7_sign failed");
        unsigned char *der = NULL;
        int der_length = i2d_PKCS7(signed_data, &der);
        PKCS7_free(signed_data);
        if (der_length <= 0) fail("i2d_PKCS7 failed");

        size_t used = (size_t)snprintf(text, 64, "{\"receipt\":\"");
        if ((size_t)der_length / 3 * 4 + 256 > capacity) fail("a receipt too large for the buffer");
        used += base64(der, (size_t)der_length, text + used);
        used += (size_t)snprintf(text + used, capacity - used,
                                 "\",\"orderID\":\"bench-%ld\",\"applicationUsername\":\"user-%ld\"}", index, index);
        OPENSSL_free(der);

        char path[4096];
        snprintf(path, sizeof path, "%s/%s-%07ld", directory, prefix, index);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0640);
        if (fd < 0 || write(fd, text, used) != (ssize_t)used || close(fd) != 0) fail("cannot write a file");
        free(attributes.bytes);
        free(payload.bytes);
    }
    return 0;
}
