// InputDecoderFuzzer: the libFuzzer entry point for the intake decoder
// (`make fuzz`). Built with `swiftc -sanitize=fuzzer,address` straight from
// the decoder's source files (Makefile, FUZZ_SOURCES), not through SwiftPM:
// SwiftPM cannot build one target with the fuzzer's own main.
//
// Every input goes through all six formats' decoding, with envelopes
// accepted and refused, and through the receipt reader as raw DER. Beyond "does not crash", it checks what must hold
// for any input the decoder accepts: the key survives its file-name
// encoding (the spool's names), the item's version and key are stable
// when the same bytes are decoded again, and JSON parsed with an envelope's
// payload set aside agrees with a plain parse. A failed check traps, which
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
    let plain = Result { () throws(JSONError) in try JSONValue.parse(bytes) }
    if case let .success(value) = plain {
        precondition((try? JSONValue.parse(value.serialized)) == value, "JSON does not survive serialization")
    }
    checkSettingAside(bytes, agreesWith: plain)
    return 0
}

/// Parsing with "payload" set aside (an envelope's payload, checked and not
/// built) accepts and refuses what a plain parse does, with the same error,
/// and the value left plus the member put back is the plain parse's value.
func checkSettingAside(_ bytes: [UInt8], agreesWith plain: Result<JSONValue, JSONError>) {
    let aside = Result { () throws(JSONError) in try JSONValue.parse(bytes, settingAside: "payload") }
    switch (plain, aside) {
    case let (.failure(expected), .failure(error)):
        precondition(error == expected, "setting aside fails otherwise: \(error) against \(expected)")
    case let (.success(value), .success((rest, setAside))):
        guard let setAside else { return precondition(rest == value, "nothing set aside, yet another value") }
        guard case var .object(members) = rest, let payload = try? JSONValue.parse(bytes[setAside.range]) else {
            preconditionFailure("a set-aside member that does not parse alone")
        }
        members.insert(("payload", payload), at: setAside.position)
        precondition(JSONValue.object(members) == value, "setting aside changes the value")
    default:
        preconditionFailure("setting aside accepts what a plain parse refuses, or the reverse")
    }
}
