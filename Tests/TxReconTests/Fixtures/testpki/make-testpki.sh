#!/bin/bash
# make-testpki.sh: the test PKI of the verification tests, shaped like Apple's
# App Store signing PKI, made with the openssl command line. Run it from any
# directory; it rewrites the files beside it, which are committed (the keys
# are test keys and sign nothing but test data).
#
#   root            P-384, self-signed CA                     2020-01-01 .. 2045-01-01
#   intermediate    P-384, CA pathlen 0, OID 1.2.840.113635.100.6.2.1, by root
#   leaf            P-256, OID 1.2.840.113635.100.6.11.1, by intermediate
#                                                              2024-01-01 .. 2026-01-01
# and the forgeries the tests need, each otherwise like the above:
#   leaf-no-oid                 leaf without its OID
#   intermediate-no-oid         intermediate without its OID, and leaf-under-intermediate-no-oid
#   intermediate-not-ca         intermediate with CA:FALSE, and leaf-under-intermediate-not-ca
#   lookalike-root              same subject as root, another key; lookalike-intermediate
#                               and leaf-under-lookalike chain to it
#   leaf-p384                   a leaf whose key is on P-384, not P-256
#   leaf-from-root              a leaf issued by the root directly (a path of two)
# Every leaf shares leaf.key, so one key signs every test JWS.
set -euo pipefail
cd "$(dirname "$0")"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

ROOT_SUBJECT="/C=US/O=txrecon tests/OU=Test Certification Authority/CN=txrecon Test Root CA - G3"
INTERMEDIATE_SUBJECT="/C=US/O=txrecon tests/OU=G6/CN=txrecon Test Worldwide Developer Relations CA"
LEAF_SUBJECT="/C=US/O=txrecon tests/OU=Worldwide Developer Relations/CN=txrecon Test App Store Receipt Signing"

cat > "$WORK/extensions.cnf" <<'CNF'
[ca]
default_ca = test_ca
[test_ca]
database = $ENV::WORK/index.txt
serial = $ENV::WORK/serial
new_certs_dir = $ENV::WORK
default_md = sha384
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
[intermediate_not_ca]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
1.2.840.113635.100.6.2.1 = ASN1:NULL
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

key() { openssl genpkey -algorithm EC -pkeyopt "ec_paramgen_curve:$2" -pkeyopt ec_param_enc:named_curve -out "$1"; }

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

CA_START=20200101000000Z CA_END=20450101000000Z
INTERMEDIATE_END=20400101000000Z
LEAF_START=20240101000000Z LEAF_END=20260101000000Z

key root.key P-384
key intermediate.key P-384
key leaf.key P-256
key lookalike-root.key P-384
key leaf-p384.key P-384

issue root root.key "$ROOT_SUBJECT" root self $CA_START $CA_END
issue intermediate intermediate.key "$INTERMEDIATE_SUBJECT" intermediate root $CA_START $INTERMEDIATE_END
issue leaf leaf.key "$LEAF_SUBJECT" leaf intermediate $LEAF_START $LEAF_END

issue leaf-no-oid leaf.key "$LEAF_SUBJECT" leaf_no_oid intermediate $LEAF_START $LEAF_END
issue leaf-p384 leaf-p384.key "$LEAF_SUBJECT" leaf intermediate $LEAF_START $LEAF_END
issue leaf-from-root leaf.key "$LEAF_SUBJECT" leaf root $LEAF_START $LEAF_END

issue intermediate-no-oid intermediate.key "$INTERMEDIATE_SUBJECT" intermediate_no_oid root $CA_START $INTERMEDIATE_END
cp intermediate.key intermediate-no-oid.key
issue leaf-under-intermediate-no-oid leaf.key "$LEAF_SUBJECT" leaf intermediate-no-oid $LEAF_START $LEAF_END

issue intermediate-not-ca intermediate.key "$INTERMEDIATE_SUBJECT" intermediate_not_ca root $CA_START $INTERMEDIATE_END
cp intermediate.key intermediate-not-ca.key
issue leaf-under-intermediate-not-ca leaf.key "$LEAF_SUBJECT" leaf intermediate-not-ca $LEAF_START $LEAF_END

issue lookalike-root lookalike-root.key "$ROOT_SUBJECT" root self $CA_START $CA_END
issue lookalike-intermediate intermediate.key "$INTERMEDIATE_SUBJECT" intermediate lookalike-root $CA_START $INTERMEDIATE_END
cp intermediate.key lookalike-intermediate.key
issue leaf-under-lookalike leaf.key "$LEAF_SUBJECT" leaf lookalike-intermediate $LEAF_START $LEAF_END

rm intermediate-no-oid.key intermediate-not-ca.key lookalike-intermediate.key leaf-p384.key
# The intermediates' and roots' keys are needed only to issue; the tests sign with leaf.key.
rm root.key intermediate.key lookalike-root.key

openssl verify -x509_strict -attime 1735689600 -CAfile root.pem -untrusted intermediate.pem leaf.pem
