"""appstore_pki.py: the test PKI and signed transactions for the JWS drain
of bench/bench.py (measurement 1 under [Verification] Mode=appstore).

Mimics Apple's chain, as issue 3 describes it: a P-384 root, a P-384
intermediate (CA, carrying extension 1.2.840.113635.100.6.2.1) and a P-256
leaf (carrying 1.2.840.113635.100.6.11.1), made with the openssl command
line; the transactions are signed by bench/jwsgen.c with the leaf's key.
All transactions share one leaf, so a daemon that caches verified chains
verifies the chain once and one ES256 signature per item.

Touches only its own directory. Raises SystemExit when openssl or the
compiler fails (the benchmark cannot continue without its inputs).
"""

import os
import subprocess
import time

APPLE_INTERMEDIATE_OID = "1.2.840.113635.100.6.2.1"
APPLE_LEAF_OID = "1.2.840.113635.100.6.11.1"

EXTENSIONS = f"""
[intermediate]
basicConstraints = critical, CA:true, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
{APPLE_INTERMEDIATE_OID} = DER:05:00

[leaf]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
{APPLE_LEAF_OID} = DER:05:00
"""


class TestPKI:
    bundle_id = "com.example.txrecon.bench"
    environment = "Sandbox"

    def __init__(self, directory, tools):
        self.dir = directory
        self.tools = tools
        self.root_certificate = os.path.join(directory, "root.pem")
        self.jwsgen = None
        self.batches = 0

    def path(self, name):
        return os.path.join(self.dir, name)

    def openssl(self, *arguments):
        completed = subprocess.run(["openssl", *arguments], capture_output=True, text=True)
        if completed.returncode != 0:
            raise SystemExit(f"bench: openssl {arguments[0]} failed: {completed.stderr.strip()}")

    def create(self):
        """Keys and certificates (valid from now for ten years), jwsgen built."""
        os.makedirs(self.dir, exist_ok=True)
        with open(self.path("extensions.cnf"), "w") as out:
            out.write(EXTENSIONS)
        self.openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384", "-nodes",
                     "-keyout", self.path("root.key"), "-out", self.root_certificate, "-days", "3650", "-sha384",
                     "-subj", "/CN=txrecon bench Root CA/O=txrecon bench",
                     "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        self.issue("intermediate", "P-384", "/CN=txrecon bench WWDR-like Intermediate/O=txrecon bench",
                   self.root_certificate, self.path("root.key"))
        self.issue("leaf", "P-256", "/CN=txrecon bench StoreKit Signing/O=txrecon bench",
                   self.path("intermediate.pem"), self.path("intermediate.key"))
        self.openssl("verify", "-CAfile", self.root_certificate, "-untrusted", self.path("intermediate.pem"),
                     self.path("leaf.pem"))
        # jwsgen signs with signedDate = now. The daemon's chain cache leaves
        # the first and last second of a chain's validity to a fresh
        # validation, so transactions signed in the second the certificates
        # were made would each pay a full chain validation, which Apple's
        # months-old leaves never do. Two seconds put them past that edge.
        time.sleep(2)
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jwsgen.c")
        self.jwsgen = os.path.join(self.tools, "jwsgen")
        if not os.path.exists(self.jwsgen) or os.path.getmtime(self.jwsgen) < os.path.getmtime(source):
            completed = subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-o", self.jwsgen, source, "-lcrypto"],
                                       capture_output=True, text=True)
            if completed.returncode != 0:
                raise SystemExit(f"bench: building jwsgen failed:\n{completed.stderr}")

    def issue(self, name, curve, subject, ca_certificate, ca_key):
        """A key on `curve` and its certificate, signed by the CA, with the
        extensions of section `name` in extensions.cnf."""
        self.openssl("req", "-new", "-newkey", "ec", "-pkeyopt", f"ec_paramgen_curve:{curve}", "-nodes",
                     "-keyout", self.path(name + ".key"), "-out", self.path(name + ".csr"), "-subj", subject)
        self.openssl("x509", "-req", "-in", self.path(name + ".csr"), "-CA", ca_certificate, "-CAkey", ca_key,
                     "-CAcreateserial", "-days", "3650", "-sha384", "-extfile", self.path("extensions.cnf"),
                     "-extensions", name, "-out", self.path(name + ".pem"))

    def fill(self, directory, names):
        """Writes one signed transaction per name (names as bench.keys() makes
        them: PREFIX-NNNNNNN from 0) into `directory`."""
        prefix = names[0].rsplit("-", 1)[0]
        self.batches += 1
        first_transaction = 2000000000000000 + self.batches * 10000000
        completed = subprocess.run([self.jwsgen, self.path("leaf.key"), self.path("leaf.pem"),
                                    self.path("intermediate.pem"), self.root_certificate, self.bundle_id,
                                    self.environment, directory, prefix, str(len(names)), str(first_transaction)],
                                   capture_output=True, text=True)
        if completed.returncode != 0:
            raise SystemExit(f"bench: jwsgen failed: {completed.stderr.strip()}")
