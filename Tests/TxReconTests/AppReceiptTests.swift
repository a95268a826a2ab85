// The receipt reader against the real receipts in Fixtures/receipts (eight
// signed by Apple, three by Xcode), whose decode by an independent reference
// decoder is in EXPECTED.json there (see PROVENANCE.md), and against bytes
// that are not a receipt.
import FoundationEssentials
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct AppReceiptTests {
    static let names = ReceiptSamples.names

    /// An expected date: `…Z` as RFC3339Timestamp writes it, else as given.
    static func normalized(_ text: String) -> String {
        text.hasSuffix("Z") ? String(text.dropLast()) + ".000Z" : text
    }

    static func formatted(_ milliseconds: Int64?) -> String {
        milliseconds.map { RFC3339Timestamp.format(millisecondsSince1970: $0) } ?? ""
    }

    @Test(arguments: names)
    func everyRealReceiptReadsAsTheReferenceDecoderReadIt(name: String) throws {
        let expected = try ReceiptSamples.expected(name)
        let receipt = try AppReceipt(der: try ReceiptSamples.der(name))
        #expect(receipt.receiptType == expected["receipt_type_0"]?.stringValue)
        #expect(receipt.bundleId == expected["bundle_id_2"]?.stringValue)
        #expect(receipt.appVersion == expected["app_version_3"]?.stringValue)
        #expect(receipt.originalAppVersion == expected["original_app_version_19"]?.stringValue)
        let created = try #require(expected["receipt_creation_date_12"]?.stringValue)
        if created.hasSuffix("Z") { #expect(Self.formatted(receipt.creationDate) == Self.normalized(created)) }
        let entries = try #require(expected["in_app"]?.arrayValue)
        #expect(receipt.inAppPurchases.count == entries.count)
        #expect(receipt.inAppPurchases.count == Int(expected["in_app_count"]?.int64Value ?? -1))
        for (purchase, entry) in zip(receipt.inAppPurchases, entries) {
            #expect(purchase.quantity == entry["1701"]?.int64Value)
            #expect(purchase.productId == entry["1702"]?.stringValue)
            #expect(purchase.transactionId == entry["1703"]?.stringValue)
            #expect(purchase.originalTransactionId == entry["1705"]?.stringValue)
            for (date, type) in [(purchase.purchaseDate, "1704"), (purchase.originalPurchaseDate, "1706"),
                                 (purchase.expiresDate, "1708"), (purchase.cancellationDate, "1712")] {
                guard let text = entry[type]?.stringValue, text.hasSuffix("Z") || text.isEmpty else { continue }
                #expect(Self.formatted(date) == (text.isEmpty ? "" : Self.normalized(text)), "\(type) of \(name)")
            }
            #expect(purchase.webOrderLineItemId == entry["1711"]?.int64Value)
            #expect(purchase.isTrialPeriod == entry["1713"]?.int64Value.map { $0 != 0 })
            #expect(purchase.isInIntroOfferPeriod == entry["1719"]?.int64Value.map { $0 != 0 })
        }
    }

    @Test func xcodesIndefiniteLengthContainerAndOffsetDatesAreRead() throws {
        let receipt = try AppReceipt(der: try ReceiptSamples.der("xcode-tpinappreceipt-1.receipt"))
        #expect(receipt.receiptType == "Xcode")
        // 2020-07-22T18:33:15+0100 is 17:33:15 UTC.
        #expect(Self.formatted(receipt.creationDate) == "2020-07-22T17:33:15.000Z")
        #expect(receipt.inAppPurchases.first?.productId == "CYCLEMAPS_PREMIUM")
    }

    @Test func receiptDatesOfEveryShapeAreRead() {
        #expect(ReceiptDate.milliseconds("1970-01-01T00:00:00Z") == 0)
        #expect(ReceiptDate.milliseconds("2023-08-28T10:24:05Z") == 1_693_218_245_000)
        #expect(ReceiptDate.milliseconds("2023-08-28T12:24:05+0200") == 1_693_218_245_000)
        #expect(ReceiptDate.milliseconds("2023-08-28T09:24:05-01:00") == 1_693_218_245_000)
        #expect(ReceiptDate.milliseconds("2023-08-28T10:24:05.25Z") == 1_693_218_245_250)
        #expect(ReceiptDate.milliseconds("1969-12-31T23:59:59Z") == -1000)
        for text in ["", "2023-08-28", "2023-13-01T00:00:00Z", "2023-08-28T10:24:05", "2023-08-28T10:24:05+1", "x023-08-28T10:24:05Z"] {
            #expect(ReceiptDate.milliseconds(text) == nil, "\(text)")
        }
    }

    @Test func theSignedPayloadIsTheAttributeSetTheSignatureCovers() throws {
        let der = try ReceiptSamples.der("sandbox-tpinappreceipt-1.receipt")
        let receipt = try AppReceipt(der: der)
        #expect(receipt.payload.first == DERElement.set)
        #expect(der.firstRange(of: receipt.payload) != nil)
    }

    @Test func bytesThatAreNotAReceiptAreRefusedWithWhereAndWhy() throws {
        let der = try ReceiptSamples.der("sandbox-tpinappreceipt-1.receipt")
        for (bytes, problem) in [
            ([UInt8](), "an element is missing"),
            (Array(der.prefix(der.count / 2)), "where"),
            (der + [0], "bytes after the receipt"),
            ([0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF], "a length of 4294967295 bytes where 0 are left"),
            ([0x30, 0x84, 0xFF, 0xFF], "the length runs past the end"),
            ([0x30, 0x85, 1, 1, 1, 1, 1], "a length of 5 bytes"),
            ([0x04, 0x80, 0, 0], "an indefinite length on a primitive element"),
            ([0x30, 0x03, 0x02, 0x01, 0x00], "not a PKCS#7 SignedData"),
        ] as [([UInt8], String)] {
            #expect {
                try AppReceipt(der: bytes)
            } throws: { error in
                (error as? DERError)?.problem.contains(problem) == true
            }
        }
        // A thousand nested indefinite-length sequences stop at the depth limit.
        let deep = Array(repeating: [0x30, 0x80] as [UInt8], count: 1000).flatMap { $0 } + Array(repeating: 0, count: 2000)
        #expect {
            try AppReceipt(der: deep)
        } throws: { error in
            (error as? DERError)?.problem.contains("nesting deeper than") == true
        }
    }

    @Test func anIntegerTooLargeOrNegativeIsRefused() throws {
        let reader = DERReader([0x02, 0x09, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x01, 0xFF, 0x02, 0x08, 0x7F, 1, 1, 1, 1, 1, 1, 1])
        #expect(throws: DERError.self) { try reader.integer(of: try reader.element(at: 0, limit: 11)) }
        #expect(throws: DERError.self) { try reader.integer(of: try reader.element(at: 11, limit: 14)) }
        #expect(try reader.integer(of: try reader.element(at: 14, limit: 24)) == 0x7F01_0101_0101_0101)
    }
}
