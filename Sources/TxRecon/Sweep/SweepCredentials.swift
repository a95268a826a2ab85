// SweepCredentials: what `txrecon sweep` needs before its first request, read
// and checked once: BundleID=, IssuerID= and KeyID= under [Sweep], and the
// In-App Purchase key from PrivateKeyFile= or, when that is unset, from the
// systemd credential `appstore-key` in $CREDENTIALS_DIRECTORY.
//
// The key file goes through `SecretFile` (a regular file readable by its
// owner alone: group txrecon holds the producers); its bytes are wiped from memory
// once OpenSSL holds the key. Every problem is a `ConfigurationError` naming
// the configuration file, line and key (exit status 78), and the key file's
// path, never its content. Blocks on disk I/O: call it on the sweep's thread.
import Glibc

package enum SweepCredentials {
    /// The systemd credential (`LoadCredential=appstore-key:…`) that holds
    /// the key when PrivateKeyFile= is unset.
    static let keyCredentialName = "appstore-key"

    /// The token issuer `configuration` describes; `environment` is the
    /// process environment, consulted for `CREDENTIALS_DIRECTORY`.
    static func load(
        for configuration: Configuration, environment: [String: String]
    ) throws(ConfigurationError) -> APITokenIssuer {
        let sweep = configuration.sweep
        let bundleID = try required(sweep.bundleID, "BundleID", "the app's bundle identifier", configuration)
        let issuerID = try required(sweep.issuerID, "IssuerID", "the issuer id App Store Connect shows with "
            + "the In-App Purchase keys", configuration)
        let keyID = try required(sweep.keyID, "KeyID", "the id of the In-App Purchase key", configuration)
        let (path, pem) = try keyBytes(configuration, environment: environment)
        var bytes = pem
        defer {
            bytes.withUnsafeMutableBytes { buffer in
                if let base = buffer.baseAddress { explicit_bzero(base, buffer.count) }
            }
        }
        do {
            let key = try ES256PrivateKey(pem: bytes)
            return APITokenIssuer(issuerID: issuerID, keyID: keyID, bundleID: bundleID, key: key)
        } catch {
            throw configuration.problem(key: "Sweep.PrivateKeyFile", "\(path) \(error)")
        }
    }

    /// What `check-config` checks of the sweep's key: with `PrivateKeyFile=`
    /// set, the file as `load` reads it (and the ids beside it). The
    /// credential `appstore-key` exists only inside the sweep's unit, so
    /// without the key it is not checked.
    package static func checkKeyFile(of configuration: Configuration) throws(ConfigurationError) {
        guard configuration.sweep.privateKeyFile != nil else { return }
        _ = try load(for: configuration, environment: [:])
    }

    private static func required(
        _ value: String?, _ name: String, _ meaning: String, _ configuration: Configuration
    ) throws(ConfigurationError) -> String {
        guard let value else {
            throw configuration.problem(
                key: "Sweep.\(name)",
                "is required by txrecon sweep; set \(name)= under [Sweep] to \(meaning)")
        }
        return value
    }

    /// The key file's path and content.
    private static func keyBytes(
        _ configuration: Configuration, environment: [String: String]
    ) throws(ConfigurationError) -> (path: String, bytes: [UInt8]) {
        let key = "Sweep.PrivateKeyFile"
        if let path = configuration.sweep.privateKeyFile {
            do {
                // Its owner's alone: the commands run as txrecon, and group
                // txrecon holds the producers.
                return (path, try SecretFile.read(path, groupMayRead: false))
            } catch {
                throw configuration.problem(key: key, error.message(path: path))
            }
        }
        let remedy = "set PrivateKeyFile= under [Sweep] to the .p8 file, or pass it as the systemd credential "
            + "\(keyCredentialName) (LoadCredential=\(keyCredentialName):/etc/txrecon/appstore-key.p8)"
        guard let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty else {
            throw configuration.problem(key: key, "is not set and there is no systemd credential directory; \(remedy)")
        }
        let path = "\(directory)/\(keyCredentialName)"
        do {
            return (path, try SecretFile.read(path))
        } catch .unreadable(.missing), .empty {
            // An empty credential is txrecon-sweep.service's SetCredential=
            // fallback: the key file was not there when the unit started.
            throw configuration.problem(key: key, "is not set and the systemd credential \(keyCredentialName) "
                + "is missing or empty; \(remedy)")
        } catch {
            throw configuration.problem(key: key, "is not set, and the systemd credential \(keyCredentialName) "
                + "cannot be used: \(error.message(path: path))")
        }
    }
}

extension Configuration {
    /// A problem placed on the assignment of `key` (`Section.Key`), or on the
    /// configuration file as a whole when the key was not assigned.
    func problem(key: String, _ message: String) -> ConfigurationError {
        let origin = origins[key]
        return ConfigurationError(file: origin?.file ?? path, line: origin?.line, key: key, message: message)
    }
}
