// BackendSecrets+Loading: reads the bearer token and the webhook signing
// secret a loaded `Configuration` names, once, at start-up and on reload.
//
// The token comes from BearerTokenFile=, else from the systemd credential
// `backend-token` (`NAME-token` for the destination NAME) in $CREDENTIALS_DIRECTORY when that file exists and is not
// empty (the unit sets an empty fallback for a missing token file); the
// signing secret from SigningSecretFile=, a Standard Webhooks `whsec_…`
// secret. Throws a `ConfigurationError` naming the configuration file, line
// and key that pointed at a bad secret file (see `SecretFile` for the
// checks), never the secret itself. Blocks on disk I/O, like the loader.
import FoundationEssentials

extension BackendSecrets {
    /// The systemd credential (`LoadCredential=backend-token:…`) that holds
    /// the token when BearerTokenFile= is unset.
    package static let tokenCredentialName = "backend-token"
    /// The prefix of a Standard Webhooks secret; base64 follows.
    static let signingSecretPrefix = "whsec_"
    /// The shortest signing key accepted, bytes, as the Standard Webhooks
    /// specification requires.
    static let minimumSigningKeyLength = 24
    /// The largest CAFile= taken, bytes: curl refuses a larger blob
    /// (CURL_MAX_INPUT_LENGTH), so a larger bundle could pass the loader
    /// and then fail every attempt. The system's whole bundle is about 0.2 MB.
    static let maximumCABundleSize = 8_000_000

    /// The secrets `configuration` names; `environment` is the process
    /// environment, consulted for `CREDENTIALS_DIRECTORY`; `credential` the
    /// credential's name there (`NAME-token` for a further destination).
    package static func load(
        for configuration: Configuration, environment: [String: String], credential: String = BackendSecrets.tokenCredentialName
    ) throws(ConfigurationError) -> BackendSecrets {
        var secrets = BackendSecrets(
            bearerToken: try bearerToken(for: configuration, environment: environment, credential: credential),
            webhookSigningKey: try signingKey(for: configuration))
        secrets.tls = try checkTLSFiles(configuration)
        let clientKeyLines = secrets.tls.key.map(TLSFiles.bodyLines(ofPEM:)) ?? []
        secrets.redactable = [secrets.bearerToken].compactMap { $0 } + configuration.backend.urlQuerySecrets
            + clientKeyLines
        if let key = secrets.webhookSigningKey {
            let encoded = Data(key).base64EncodedString()
            secrets.redactable += [signingSecretPrefix + encoded, encoded]
        }
        return secrets
    }

    /// A further destination's secrets, its token credential `NAME-token`.
    package static func load(for destination: Destination,
                            environment: [String: String]) throws(ConfigurationError) -> BackendSecrets {
        try load(for: destination.settings, environment: environment, credential: destination.tokenCredential)
    }

    /// Parses CAFile=, ClientCertificateFile= and ClientKeyFile= as curl
    /// and libnats will use them, and checks the key's permissions as a
    /// secret file's; returns what they hold, the bytes curl and libnats
    /// are given (neither opens the files).
    private static func checkTLSFiles(_ configuration: Configuration) throws(ConfigurationError) -> TLSMaterial {
        let backend = configuration.backend
        var material = TLSMaterial()
        if let path = backend.caFile {
            let key = "Backend.CAFile"
            let bytes: [UInt8]
            do {
                bytes = try RegularFile.read(path, limit: maximumCABundleSize).bytes
            } catch {
                throw configurationError(configuration, key: key, message: "\(path) \(error)")
            }
            guard TLSFiles.certificateCount(inPEM: bytes) != nil else {
                throw configurationError(configuration, key: key,
                                         message: "\(path) holds no PEM certificates OpenSSL can read (or something "
                                            + "else besides); CAFile= takes a PEM bundle of CA certificates")
            }
            material.trustedCertificates = bytes
        }
        guard let certificatePath = backend.clientCertificateFile, let keyPath = backend.clientKeyFile else {
            return material
        }
        let certificate: [UInt8]
        do {
            certificate = try RegularFile.read(certificatePath, limit: 1 << 20).bytes
        } catch {
            throw configurationError(configuration, key: "Backend.ClientCertificateFile", message: "\(certificatePath) \(error)")
        }
        let keyBytes: [UInt8]
        do {
            keyBytes = try SecretFile.read(keyPath)
        } catch {
            throw configurationError(configuration, key: "Backend.ClientKeyFile", message: error.message(path: keyPath))
        }
        do throws(TLSFiles.IdentityProblem) {
            try TLSFiles.checkIdentity(certificatePEM: certificate, keyPEM: keyBytes)
        } catch {
            switch error {
            case .certificateUnreadable:
                throw configurationError(configuration, key: "Backend.ClientCertificateFile",
                                         message: "\(certificatePath) holds no PEM certificate OpenSSL can read")
            case .keyUnreadable:
                throw configurationError(configuration, key: "Backend.ClientKeyFile",
                                         message: "\(keyPath) holds no PEM private key OpenSSL can read without a "
                                            + "passphrase; a service has no one to ask for it")
            case .mismatch:
                throw configurationError(configuration, key: "Backend.ClientKeyFile",
                                         message: "\(keyPath) is not the key of the certificate in \(certificatePath)")
            }
        }
        material.certificate = certificate
        material.key = keyBytes
        return material
    }

    private static func bearerToken(
        for configuration: Configuration, environment: [String: String], credential: String
    ) throws(ConfigurationError) -> String? {
        let key = "Backend.BearerTokenFile"
        let bytes: [UInt8]
        if let path = configuration.backend.bearerTokenFile {
            do {
                bytes = try SecretFile.read(path)
            } catch {
                throw configurationError(configuration, key: key, message: error.message(path: path))
            }
        } else if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            let path = "\(directory)/\(credential)"
            do {
                bytes = try SecretFile.read(path)
            } catch .unreadable(.missing) {
                return nil
            } catch .empty {
                // The unit's fallback (SetCredential=backend-token:\n) for a
                // missing /etc/txrecon/backend-token: no token configured.
                return nil
            } catch {
                throw configurationError(
                    configuration, key: key,
                    message: "is not set, and the systemd credential \(credential) cannot be used: "
                        + error.message(path: path))
            }
        } else {
            return nil
        }
        // The token goes into an HTTP header line: anything but visible
        // ASCII could end the header or inject another one.
        guard bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw configurationError(
                configuration, key: key,
                message: "the token file holds a space, a control character, a second line or non-ASCII text; "
                    + "it must hold the token alone on one line")
        }
        if let tooShort = SecretFile.tokenTooShort(bytes) {
            throw configurationError(configuration, key: key, message: tooShort)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func signingKey(for configuration: Configuration) throws(ConfigurationError) -> [UInt8]? {
        let key = "Backend.SigningSecretFile"
        guard let path = configuration.backend.signingSecretFile else { return nil }
        let bytes: [UInt8]
        do {
            bytes = try SecretFile.read(path)
        } catch {
            throw configurationError(configuration, key: key, message: error.message(path: path))
        }
        let expected = "it must hold a Standard Webhooks secret: \(signingSecretPrefix) followed by "
            + "the standard base64 of at least \(minimumSigningKeyLength) random bytes"
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix(signingSecretPrefix) else {
            throw configurationError(
                configuration, key: key, message: "\(path) does not start with \(signingSecretPrefix); \(expected)")
        }
        guard let decoded = Data(base64Encoded: String(text.dropFirst(signingSecretPrefix.count))) else {
            throw configurationError(
                configuration, key: key,
                message: "\(path): the text after \(signingSecretPrefix) is not standard base64; \(expected)")
        }
        guard decoded.count >= minimumSigningKeyLength else {
            throw configurationError(
                configuration, key: key,
                message: "\(path): the key is shorter than \(minimumSigningKeyLength) bytes; \(expected)")
        }
        return Array(decoded)
    }

    /// An error placed on the assignment of `key`, or on the configuration
    /// file as a whole when the key was not assigned.
    private static func configurationError(
        _ configuration: Configuration, key: String, message: String
    ) -> ConfigurationError {
        let origin = configuration.origins[key]
        return ConfigurationError(
            file: origin?.file ?? configuration.path, line: origin?.line, key: key, message: message)
    }
}
