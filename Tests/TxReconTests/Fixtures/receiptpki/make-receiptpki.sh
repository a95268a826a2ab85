#!/bin/bash
# make-receiptpki.sh: the test PKI of the StoreKit 1 receipt tests, shaped
# like Apple's receipt signing PKI (RSA-2048 throughout, as every real
# receipt), made with the openssl command line. Run it from any directory; it
# rewrites the files beside it, which are committed (the keys are test keys
# and sign nothing but test data).
#
#   root                self-signed CA                            2006-01-01 .. 2035-01-01
#   intermediate        CA pathlen 0, OID 1.2.840.113635.100.6.2.1, by root
#                                                                  2020-01-01 .. 2030-01-01
#   leaf                OID 1.2.840.113635.100.6.11.1, by intermediate
#                                                                  2024-01-01 .. 2026-01-01
# and the forgeries the tests need, each otherwise like the above:
#   leaf-no-oid                      the leaf without its OID
#   intermediate-no-oid              an intermediate without its OID, and leaf-under-intermediate-no-oid
#   intermediate-expired             an intermediate valid 2010 .. 2015, and leaf-under-intermediate-expired
#                                    (valid 2024 .. 2026 itself)
#   other-root                       same subject as root, another key; other-intermediate and
#                                    leaf-under-other-root chain to it
# Every leaf shares leaf.key, so one key signs every test receipt.
set -euo pipefail
cd "$(dirname "$0")"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

ROOT_SUBJECT="/C=US/O=txrecon tests/OU=Test Certification Authority/CN=txrecon Test Root CA"
INTERMEDIATE_SUBJECT="/C=US/O=txrecon tests/OU=G5/CN=txrecon Test Worldwide Developer Relations CA"
LEAF_SUBJECT="/C=US/O=txrecon tests/OU=Worldwide Developer Relations/CN=txrecon Test Receipt Signing"

cat > "$WORK/extensions.cnf" <<'CNF'
[ca]
default_ca = test_ca
[test_ca]
database = $ENV::WORK/index.txt
serial = $ENV::WORK/serial
new_certs_dir = $ENV::WORK
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = none
[anything]
countryName = optional
organizationName = optional
organizationalUnitName = optional
commonName = supplied
[root]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[intermediate]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
1.2.840.113635.100.6.2.1 = ASN1:NULL
[intermediate_no_oid]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
[leaf]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
1.2.840.113635.100.6.11.1 = ASN1:NULL
[leaf_no_oid]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
CNF
export WORK

key() { openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2> /dev/null; }

# issue NAME KEY SUBJECT EXTENSIONS ISSUER START END: NAME.pem from a CSR for KEY,
# signed by ISSUER.pem/ISSUER.key ("self" for a self-signed root).
issue() {
    local name=$1 key=$2 subject=$3 extensions=$4 issuer=$5 start=$6 end=$7
    : > "$WORK/index.txt"
    openssl rand -hex 16 > "$WORK/serial"
    openssl req -new -key "$key" -subj "$subject" -out "$WORK/$name.csr"
    if [ "$issuer" = self ]; then
        openssl ca -batch -notext -config "$WORK/extensions.cnf" -selfsign -keyfile "$key" \
            -extensions "$extensions" -startdate "$start" -enddate "$end" \
            -in "$WORK/$name.csr" -out "$name.pem" 2> "$WORK/ca.log"
    else
        openssl ca -batch -notext -config "$WORK/extensions.cnf" -cert "$issuer.pem" -keyfile "$issuer.key" \
            -extensions "$extensions" -startdate "$start" -enddate "$end" \
            -in "$WORK/$name.csr" -out "$name.pem" 2> "$WORK/ca.log"
    fi || { cat "$WORK/ca.log" >&2; exit 1; }
}

CA_START=20060101000000Z CA_END=20350101000000Z
INTERMEDIATE_START=20200101000000Z INTERMEDIATE_END=20300101000000Z
LEAF_START=20240101000000Z LEAF_END=20260101000000Z

key root.key
key intermediate.key
key leaf.key
key other-root.key

issue root root.key "$ROOT_SUBJECT" root self $CA_START $CA_END
issue intermediate intermediate.key "$INTERMEDIATE_SUBJECT" intermediate root $INTERMEDIATE_START $INTERMEDIATE_END
issue leaf leaf.key "$LEAF_SUBJECT" leaf intermediate $LEAF_START $LEAF_END
issue leaf-no-oid leaf.key "$LEAF_SUBJECT" leaf_no_oid intermediate $LEAF_START $LEAF_END

issue intermediate-no-oid intermediate.key "$INTERMEDIATE_SUBJECT" intermediate_no_oid root $INTERMEDIATE_START $INTERMEDIATE_END
cp intermediate.key intermediate-no-oid.key
issue leaf-under-intermediate-no-oid leaf.key "$LEAF_SUBJECT" leaf intermediate-no-oid $LEAF_START $LEAF_END

issue intermediate-expired intermediate.key "$INTERMEDIATE_SUBJECT" intermediate root 20100101000000Z 20150101000000Z
cp intermediate.key intermediate-expired.key
issue leaf-under-intermediate-expired leaf.key "$LEAF_SUBJECT" leaf intermediate-expired $LEAF_START $LEAF_END

issue other-root other-root.key "$ROOT_SUBJECT" root self $CA_START $CA_END
issue other-intermediate intermediate.key "$INTERMEDIATE_SUBJECT" intermediate other-root $INTERMEDIATE_START $INTERMEDIATE_END
cp intermediate.key other-intermediate.key
issue leaf-under-other-root leaf.key "$LEAF_SUBJECT" leaf other-intermediate $LEAF_START $LEAF_END

rm intermediate-no-oid.key intermediate-expired.key other-intermediate.key
# The intermediates' and roots' keys are needed only to issue; the tests sign with leaf.key.
rm root.key intermediate.key other-root.key

openssl verify -attime 1735689600 -CAfile root.pem -untrusted intermediate.pem leaf.pem
