// InputDecoderFuzzer: the libFuzzer entry point for the intake decoder
// (`make fuzz`). Built with `swiftc -sanitize=fuzzer,address` straight from
// the decoder's source files (Makefile, FUZZ_SOURCES), not through SwiftPM:
// SwiftPM cannot build one target with the fuzzer's own main.
//
// Every input goes through all six formats' decoding, with envelopes
// accepted and refused, and through the receipt reader as raw DER. Beyond "does not crash", it checks what must hold
// for any input the decoder accepts: the key survives its file-name
// encoding (the spool's names), and the item's version and key are stable
// when the same bytes are decoded again. A failed check traps, which
// libFuzzer reports as a crash with the input saved.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInputDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let accepting = try? InputDecoder(acceptEnvelopes: true).decode(bytes)
    let refusing = try? InputDecoder(acceptEnvelopes: false).decode(bytes)
    if case let .item(item)? = accepting {
        precondition(ItemKey(fileName: item.key.fileName) == item.key, "key \(item.key) does not survive its file name")
        precondition(!item.key.fileName.contains("."), "key \(item.key) encodes to a name with a dot")
        guard case let .item(again)? = try? InputDecoder(acceptEnvelopes: true).decode(bytes) else {
            preconditionFailure("decoding the same bytes twice disagrees")
        }
        precondition(again.key == item.key && again.version == item.version, "decoding is not deterministic")
        if item.kind != .envelope {
            guard case .item? = refusing else { preconditionFailure("an App Store item depends on AcceptEnvelopes=") }
        }
    }
    if let receipt = try? AppReceipt(der: bytes) {
        precondition(receipt.inAppPurchases.count <= AppReceipt.maximumPurchases, "more purchases than the limit")
    }
    if let value = try? JSONValue.parse(bytes) {
        precondition((try? JSONValue.parse(value.serialized)) == value, "JSON does not survive serialization")
    }
    return 0
}
