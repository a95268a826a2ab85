// StoredItemReader: an item file read back from queue/, hold/ or done/ (an
// attempt past intake's cached item: a retry, a restart, a replay; or the
// supersede rule's look at a stored snapshot) is decoded and verified again,
// under the policy intake verifies with now.
//
// Those files are the producer's own inode, moved and never copied, and
// their owner can still write them (by path, the state directories being
// open to group txrecon for `list` and `show`, or through a descriptor it
// kept). Without the check a producer could put an envelope or a forged JWS
// in place of a verified item after intake, and a forged version in done/KEY
// would make every genuine newer snapshot of the key look outdated. A file
// that no longer verifies has the lowest version (a new snapshot is newer:
// delivering too much is safe) and is not sent (the attempt holds it with
// the reason). Touches no files itself; reports nothing.

struct StoredItemReader: Sendable {
    let decoder: InputDecoder
    /// nil with Mode=none: nothing is signed.
    let policy: SignedDataPolicy?
    let verifiers: VerifierPool
    /// receipts/, which the parts of a receipt upload name.
    let receipts: ReceiptLibrary

    /// - Parameter acceptEnvelopes: AcceptEnvelopes=, as intake takes them.
    init(acceptEnvelopes: Bool, policy: SignedDataPolicy?, verifiers: VerifierPool = VerifierPool(),
         receipts: ReceiptLibrary) {
        decoder = InputDecoder(acceptEnvelopes: acceptEnvelopes)
        self.policy = policy
        self.verifiers = verifiers
        self.receipts = receipts
    }

    /// The reader of an engine's settings, reusing `verifiers` on a reload.
    init(_ settings: DeliveryEngine.Settings, verifiers: VerifierPool = VerifierPool(), receipts: ReceiptLibrary) {
        self.init(acceptEnvelopes: settings.acceptEnvelopes, policy: settings.verification, verifiers: verifiers,
                  receipts: receipts)
    }

    /// The version of the snapshot `bytes` hold for `key`, to compare with a
    /// drop of version `incoming`: decoded once, and verified only when its
    /// version would make the drop outdated (below `incoming` the drop is
    /// newer whatever a check would say, and a check is a signature
    /// verification on the engine's thread). A part of a receipt upload is
    /// always read with its receipt verified, which ReceiptLibrary does once
    /// per receipt. A file that does not decode, holds another key or fails
    /// the check has the lowest version.
    func version(_ bytes: [UInt8], key: ItemKey, against incoming: ItemVersion) -> ItemVersion {
        let lowest = ItemVersion(primary: .min)
        var parsed = ParsedSignedStrings()
        let decoded = try? decoder.decode(bytes, parsed: &parsed)
        if case let .receiptPart(part)? = decoded {
            guard let item = try? verifiers.with(policy, { verifier throws(ItemReadFailure) in
                try receipts.item(for: part, verifier: verifier)
            }), item.key == key else { return lowest }
            return item.version
        }
        guard case let .item(item)? = decoded, item.key == key else { return lowest }
        guard item.version >= incoming, policy != nil else { return item.version }
        let verified = verifiers.with(policy) { verifier in (try? verifier?.verify(item, parsed: parsed)) != nil }
        return verified ? item.version : lowest
    }

    /// The item stored for `key` in `bytes`, verified; throws why it is not
    /// one (`.rejected`), or that the receipt it names could not be read
    /// just now (`.unreadable`: the attempt is tried again).
    func item(_ bytes: [UInt8], key: ItemKey) throws(ItemReadFailure) -> Item {
        let decoded = try verifiers.with(policy) { verifier throws(ItemReadFailure) in
            try decoder.decode(bytes, verifyingWith: verifier, receipts: receipts)
        }
        switch decoded {
        case let .item(item):
            guard item.key == key else {
                throw .rejected(Rejection(.invalidField,
                                          "the file holds an item of key \(item.key), not \(key): it was changed after intake"))
            }
            return item
        case .page: throw .rejected(Rejection(.unknownFormat, "the file holds a page"))
        case .receipt:
            throw .rejected(Rejection(.unknownFormat, "the file holds a whole receipt upload, not one of its parts"))
        }
    }
}
