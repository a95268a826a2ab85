"""receipt_pki.py: the test PKI and StoreKit 1 receipt uploads for the
receipt drain of bench/bench.py (measurement 1, format 6).

Mimics Apple's receipt signers: RSA-2048 throughout, an intermediate (CA,
carrying 1.2.840.113635.100.6.2.1) and a leaf (carrying
1.2.840.113635.100.6.11.1), made with the openssl command line; the uploads
are signed by bench/receiptgen.c with the leaf's key. All receipts share
one leaf, so a daemon that caches verified signers validates the chain once
and checks one RSA signature per receipt.

Touches only its own directory. Raises SystemExit when openssl or the
compiler fails (the benchmark cannot continue without its inputs).
"""

import os
import subprocess
import time

from appstore_pki import EXTENSIONS


class ReceiptPKI:
    bundle_id = "com.example.txrecon.bench"
    environment = "Sandbox"

    def __init__(self, directory, tools):
        self.dir = directory
        self.tools = tools
        self.root_certificate = os.path.join(directory, "root.pem")
        self.receiptgen = None
        self.batches = 0

    def path(self, name):
        return os.path.join(self.dir, name)

    def openssl(self, *arguments):
        completed = subprocess.run(["openssl", *arguments], capture_output=True, text=True)
        if completed.returncode != 0:
            raise SystemExit(f"bench: openssl {arguments[0]} failed: {completed.stderr.strip()}")

    def create(self):
        """Keys and certificates (valid from now for ten years), receiptgen built."""
        os.makedirs(self.dir, exist_ok=True)
        with open(self.path("extensions.cnf"), "w") as out:
            out.write(EXTENSIONS)
        self.openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.path("root.key"),
                     "-out", self.root_certificate, "-days", "3650", "-sha256",
                     "-subj", "/CN=txrecon bench Receipt Root CA/O=txrecon bench",
                     "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        self.issue("intermediate", "/CN=txrecon bench WWDR-like Intermediate/O=txrecon bench",
                   self.root_certificate, self.path("root.key"))
        self.issue("leaf", "/CN=txrecon bench Receipt Signing/O=txrecon bench",
                   self.path("intermediate.pem"), self.path("intermediate.key"))
        self.openssl("verify", "-CAfile", self.root_certificate, "-untrusted", self.path("intermediate.pem"),
                     self.path("leaf.pem"))
        # As for the JWS: receipts created in the second the certificates
        # were made would each pay a full chain validation.
        time.sleep(2)
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "receiptgen.c")
        self.receiptgen = os.path.join(self.tools, "receiptgen")
        if not os.path.exists(self.receiptgen) or os.path.getmtime(self.receiptgen) < os.path.getmtime(source):
            completed = subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-o", self.receiptgen, source, "-lcrypto"],
                                       capture_output=True, text=True)
            if completed.returncode != 0:
                raise SystemExit(f"bench: building receiptgen failed:\n{completed.stderr}")

    def issue(self, name, subject, ca_certificate, ca_key):
        """An RSA key and its certificate, signed by the CA, with the
        extensions of section `name` in extensions.cnf."""
        self.openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", self.path(name + ".key"),
                     "-out", self.path(name + ".csr"), "-subj", subject)
        self.openssl("x509", "-req", "-in", self.path(name + ".csr"), "-CA", ca_certificate, "-CAkey", ca_key,
                     "-CAcreateserial", "-days", "3650", "-sha256", "-extfile", self.path("extensions.cnf"),
                     "-extensions", name, "-out", self.path(name + ".pem"))

    def fill(self, directory, names, purchases=1):
        """Writes one receipt upload per name (names as bench.keys() makes
        them: PREFIX-NNNNNNN from 0) into `directory`, each receipt holding
        `purchases` purchases (more than one: as large as Apple's entries)."""
        prefix = names[0].rsplit("-", 1)[0]
        self.batches += 1
        first_transaction = 3000000000000000 + self.batches * 100000000
        completed = subprocess.run([self.receiptgen, self.path("leaf.key"), self.path("leaf.pem"),
                                    self.path("intermediate.pem"), self.root_certificate, self.bundle_id,
                                    directory, prefix, str(len(names)), str(first_transaction), str(purchases)],
                                   capture_output=True, text=True)
        if completed.returncode != 0:
            raise SystemExit(f"bench: receiptgen failed: {completed.stderr.strip()}")
