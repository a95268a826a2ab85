// AppStoreSamples: the real Apple-signed Sandbox JWS (and the Xcode StoreKit
// testing ones) committed under Tests/TxReconTests/Fixtures/appstore/, with
// their provenance in PROVENANCE.json beside them.
//
// Located relative to this source file: `Bundle.module` is not available with
// FoundationEssentials. Reading a missing fixture stops the test run with the
// path, since every test that uses one would fail anyway.
import FoundationEssentials

/// One sample file: its name and its bytes exactly as stored.
package struct AppStoreSample: Sendable, CustomStringConvertible {
    package let name: String
    package let bytes: [UInt8]

    /// What the sample holds, from the file name's first part after the
    /// source: `signedTransactionInfo…`, `signedRenewalInfo`, `notification…`.
    package var isTransaction: Bool { name.contains("__signedTransactionInfo") || name.contains("signed-transaction") }
    package var isRenewalInfo: Bool { name.contains("__signedRenewalInfo") || name.contains("signed-renewal-info") }
    package var isNotification: Bool { name.contains("__notification_") }

    package var description: String { name }
}

package enum AppStoreSamples {
    /// `Tests/TxReconTests/Fixtures/appstore`.
    package static let directory: String = {
        var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(2)
        return components.joined(separator: "/") + "/TxReconTests/Fixtures/appstore"
    }()

    /// The 48 real Apple-signed Sandbox samples, sorted by name.
    package static func real() -> [AppStoreSample] {
        samples(in: directory + "/real")
    }

    /// The 3 StoreKit testing samples signed by Xcode (not chained to Apple's root).
    package static func xcode() -> [AppStoreSample] {
        samples(in: directory + "/real/xcode")
    }

    /// The sample named `name` among the real ones (or `xcode/NAME`).
    package static func named(_ name: String) -> AppStoreSample {
        AppStoreSample(name: name, bytes: read(directory + "/real/" + name))
    }

    private static func samples(in path: String) -> [AppStoreSample] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            fatalError("fixture directory \(path) is unreadable: \(error)")
        }
        return names.filter { $0.hasSuffix(".jws") }.sorted().map { AppStoreSample(name: $0, bytes: read(path + "/" + $0)) }
    }

    private static func read(_ path: String) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            fatalError("fixture \(path) is missing; it is committed under Tests/TxReconTests/Fixtures/appstore")
        }
        return [UInt8](data)
    }
}
