// ReceiptSamples: the real StoreKit 1 receipts committed under
// Tests/TxReconTests/Fixtures/receipts/ (eight signed by Apple, three by
// Xcode), with their provenance in PROVENANCE.md and an independent decode
// of each in EXPECTED.json. Each `.receipt` file is the standard base64 of
// the receipt, as an app uploads it. A missing fixture stops the test run.
import FoundationEssentials
import TxRecon

package enum ReceiptSamples {
    /// `Tests/TxReconTests/Fixtures/receipts`.
    package static let directory: String = {
        var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(2)
        return components.joined(separator: "/") + "/TxReconTests/Fixtures/receipts"
    }()

    /// The receipt root txrecon ships: `Config/AppleIncRootCertificate.cer`.
    package static let shippedRoot: String = {
        var components = directory.split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(4)
        return components.joined(separator: "/") + "/Config/AppleIncRootCertificate.cer"
    }()

    /// Every receipt's file name, sorted.
    package static let names: [String] = [
        "production-appreceiptvalidator-1.receipt", "production-appreceiptvalidator-2.receipt",
        "sandbox-app-store-server-library-rust-1.receipt", "sandbox-appreceiptvalidator-1.receipt",
        "sandbox-appreceiptvalidator-2.receipt", "sandbox-revenuecat-1.receipt", "sandbox-tpinappreceipt-1.receipt",
        "sandbox-tpinappreceipt-2.receipt", "xcode-app-store-server-library-1.receipt",
        "xcode-app-store-server-library-2.receipt", "xcode-tpinappreceipt-1.receipt",
    ]

    /// The file as uploaded: base64 text.
    package static func base64(_ name: String) -> String {
        String(decoding: read(directory + "/" + name), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The receipt's bytes.
    package static func der(_ name: String) throws -> [UInt8] {
        guard let data = Data(base64Encoded: base64(name)) else { fatalError("\(name) is not base64") }
        return Array(data)
    }

    /// The reference decoder's view of `name`.
    package static func expected(_ name: String) throws -> JSONValue {
        try require(JSONValue.parse(read(directory + "/EXPECTED.json"))[name])
    }

    private static func read(_ path: String) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { fatalError("missing fixture \(path)") }
        return Array(data)
    }
}

private func require<T>(_ value: T?) throws -> T {
    guard let value else { throw MissingValue() }
    return value
}

private struct MissingValue: Error {}
