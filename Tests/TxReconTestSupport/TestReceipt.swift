// TestReceipt: StoreKit 1 receipts made for the tests, signed by the test
// PKI under Tests/TxReconTests/Fixtures/receiptpki (made by
// make-receiptpki.sh there, shaped like Apple's receipt signers) the way
// Apple signs them: a PKCS#7 SignedData without signed attributes, carrying
// leaf, intermediate and root. The payload is Apple's attribute set, written
// here in DER; `purchases` and the other members say what it holds.
import CCrypto
import FoundationEssentials
import TxRecon

package enum TestReceipt {
    /// `Tests/TxReconTests/Fixtures/receiptpki`.
    package static let directory: String = {
        var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(2)
        return components.joined(separator: "/") + "/TxReconTests/Fixtures/receiptpki"
    }()

    /// The path of `NAME.pem`.
    package static func path(_ name: String) -> String { directory + "/" + name + ".pem" }

    /// Inside the leaf's validity (2024-01-01 .. 2026-01-01).
    package static let creationDate = "2025-06-01T12:00:00Z"

    /// One in-app purchase entry.
    package struct Purchase: Sendable {
        package var transactionId: String
        package var productId = "com.example.app.premium"
        package var originalTransactionId: String?
        package var purchaseDate = "2025-05-01T10:00:00Z"
        package var expiresDate = ""
        package var cancellationDate = ""
        package var quantity: Int64 = 1
        /// Apple's further attributes too (1707, 1709 to 1711, 1713 to
        /// 1719), so that the entry is as large as Apple writes it: about
        /// 420 bytes, 560 in base64.
        package var appleSized = false

        package init(transactionId: String, purchaseDate: String = "2025-05-01T10:00:00Z", cancellationDate: String = "") {
            self.transactionId = transactionId
            self.purchaseDate = purchaseDate
            self.cancellationDate = cancellationDate
        }
    }

    /// `count` purchases as large as Apple writes them, with transaction
    /// ids from 3000000000000000 up, bought a minute apart: a customer's
    /// long history (5,000 make a receipt of about 2.1 MB, 2.8 MB in base64).
    package static func purchases(_ count: Int) -> [Purchase] {
        let start = Date(timeIntervalSince1970: 1_704_067_200) // 2024-01-01T00:00:00Z
        return (0..<count).map { index in
            var purchase = Purchase(transactionId: String(3_000_000_000_000_000 + index),
                                    purchaseDate: (start + TimeInterval(index * 60)).formatted(.iso8601))
            purchase.productId = "com.example.app.subscription.premium.annual"
            purchase.expiresDate = (start + TimeInterval(index * 60 + 31_536_000)).formatted(.iso8601)
            purchase.appleSized = true
            return purchase
        }
    }

    /// Apple's attribute set: a SET of SEQUENCE { type, version, OCTET STRING value }.
    package static func payload(bundleId: String = "com.example.app", receiptType: String = "ProductionSandbox",
                                creationDate: String = TestReceipt.creationDate,
                                purchases: [Purchase]) -> [UInt8] {
        var attributes = [
            attribute(0, utf8(receiptType)), attribute(2, utf8(bundleId)), attribute(3, utf8("42")),
            attribute(12, ia5(creationDate)), attribute(19, utf8("1.0")),
        ]
        for purchase in purchases {
            var fields = [
                attribute(1701, integer(purchase.quantity)), attribute(1702, utf8(purchase.productId)),
                attribute(1703, utf8(purchase.transactionId)), attribute(1704, ia5(purchase.purchaseDate)),
                attribute(1705, utf8(purchase.originalTransactionId ?? purchase.transactionId)),
                attribute(1706, ia5(purchase.purchaseDate)), attribute(1708, ia5(purchase.expiresDate)),
                attribute(1712, ia5(purchase.cancellationDate)),
            ]
            if purchase.appleSized {
                fields += [
                    attribute(1707, integer(3)), attribute(1709, ia5("")), attribute(1710, integer(0)),
                    attribute(1711, integer(1_000_000_048_877_195)), attribute(1713, integer(0)),
                    attribute(1714, ia5("")), attribute(1715, ia5("")), attribute(1716, ia5("")),
                    attribute(1717, ia5("")), attribute(1718, ia5("")), attribute(1719, integer(0)),
                ]
            }
            let entry = der(0x31, fields.flatMap { $0 })
            attributes.append(attribute(17, entry))
        }
        return der(0x31, attributes.flatMap { $0 })
    }

    /// `payload` signed by `chain`'s leaf (with leaf.key), carrying the chain.
    package static func sign(_ payload: [UInt8], chain: [String] = ["leaf", "intermediate", "root"]) -> [UInt8] {
        let certificates = chain.map { certificate(path($0)) }
        guard let key = privateKey(directory + "/leaf.key"), let stack = txr_sk_X509_new_null() else {
            fatalError("cannot load the receipt test PKI from \(directory)")
        }
        defer {
            EVP_PKEY_free(key)
            txr_sk_X509_free(stack)
            certificates.forEach { X509_free($0) }
        }
        for certificate in certificates.dropFirst() { _ = txr_sk_X509_push(stack, certificate) }
        let signed: UnsafeMutablePointer<PKCS7>? = payload.withUnsafeBytes { buffer in
            guard let input = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(input) }
            return PKCS7_sign(certificates[0], key, stack, input, PKCS7_BINARY | PKCS7_NOATTR | PKCS7_NOSMIMECAP)
        }
        guard let p7 = signed else { fatalError("PKCS7_sign failed") }
        defer { PKCS7_free(p7) }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_PKCS7(p7, &output)
        guard length > 0, let output else { fatalError("i2d_PKCS7 failed") }
        defer { CRYPTO_free(output, #file, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// A signed receipt as an app uploads it: `{"receipt": "<base64>", …context}`.
    package static func upload(_ receipt: [UInt8], context: [(String, JSONValue)] = []) -> [UInt8] {
        JSONValue.object([("receipt", .string(Data(receipt).base64EncodedString()))] + context).serialized
    }

    // MARK: DER

    package static func der(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        var length: [UInt8]
        if contents.count < 0x80 {
            length = [UInt8(contents.count)]
        } else {
            var bytes: [UInt8] = []
            var remaining = contents.count
            while remaining > 0 {
                bytes.insert(UInt8(remaining & 0xFF), at: 0)
                remaining >>= 8
            }
            length = [0x80 | UInt8(bytes.count)] + bytes
        }
        return [tag] + length + contents
    }

    package static func integer(_ value: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        var remaining = value
        repeat {
            bytes.insert(UInt8(remaining & 0xFF), at: 0)
            remaining >>= 8
        } while remaining > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return der(0x02, bytes)
    }

    static func utf8(_ text: String) -> [UInt8] { der(0x0C, Array(text.utf8)) }
    static func ia5(_ text: String) -> [UInt8] { der(0x16, Array(text.utf8)) }

    package static func attribute(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
        der(0x30, integer(type) + integer(1) + der(0x04, value))
    }

    private static func certificate(_ path: String) -> OpaquePointer {
        guard let bio = BIO_new_file(path, "r"), let certificate = PEM_read_bio_X509(bio, nil, nil, nil) else {
            fatalError("cannot read \(path)")
        }
        BIO_free(bio)
        return certificate
    }

    private static func privateKey(_ path: String) -> OpaquePointer? {
        guard let bio = BIO_new_file(path, "r") else { return nil }
        defer { BIO_free(bio) }
        return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
    }
}
