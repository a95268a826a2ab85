// BackendSecrets: the secrets the backend requests carry, read once at start
// (and on reload) from BearerTokenFile=/SigningSecretFile= or the systemd
// credential `backend-token`. Their text never reaches a log line: the
// descriptions below are redacted on purpose.

/// Secrets for talking to the backend. Printing one shows only whether it is set.
package struct BackendSecrets: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Sent as `Authorization: Bearer <token>`; nil sends no Authorization header.
    package var bearerToken: String?
    /// The decoded key of a Standard Webhooks `whsec_…` secret; nil signs nothing.
    package var webhookSigningKey: [UInt8]?
    /// Every text of a secret that must never leave the process (the
    /// token, the signing secret as written, the query of URL=, the lines
    /// of the TLS client key), for SecretRedactor.
    package var redactable: [String] = []
    /// The PEM files CAFile=, ClientCertificateFile= and ClientKeyFile=
    /// name, as read and checked once at load; curl and libnats take them
    /// from here, never from the files.
    package var tls = TLSMaterial()

    /// PEM texts for a TLS connection; nil where the file is not configured.
    /// Printed, it says only which are there: the key stays unprinted.
    package struct TLSMaterial: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
        package var trustedCertificates: [UInt8]?
        package var certificate: [UInt8]?
        package var key: [UInt8]?

        package init() {}

        package var description: String {
            "TLSMaterial(trustedCertificates: \(trustedCertificates == nil ? "none" : "set"), "
                + "certificate: \(certificate == nil ? "none" : "set"), key: \(key == nil ? "none" : "<redacted>"))"
        }

        package var debugDescription: String { description }
    }

    package init(bearerToken: String? = nil, webhookSigningKey: [UInt8]? = nil) {
        self.bearerToken = bearerToken
        self.webhookSigningKey = webhookSigningKey
    }

    package var description: String {
        "BackendSecrets(bearerToken: \(bearerToken == nil ? "none" : "<redacted>"), "
            + "webhookSigningKey: \(webhookSigningKey == nil ? "none" : "<redacted>"))"
    }

    package var debugDescription: String { description }
}
