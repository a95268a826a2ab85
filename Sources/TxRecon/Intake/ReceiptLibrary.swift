// ReceiptLibrary: the receipts in receipts/ as intake and the engines read
// them, to make an item of a part (ReceiptSplit) that names one.
//
// A part names its receipt by SHA-256 and a purchase by transaction id. The
// receipt is read from receipts/ (ReceiptStore), its bytes hashed and
// compared with the name (a damaged file is no receipt), parsed, and
// verified under the policy in force (ReceiptVerifier, through the
// caller's SignedDataVerifier); the named purchase is then taken from it
// (ReceiptItems). Each receipt is kept parsed, with the verdicts of the
// policies it was checked under, so that the 5,000 parts of one upload cost
// one read, one hash, one parse and one signature check between them, on
// every thread that reads them. Only the daemon writes receipts/, and only
// receipts whose signature verified: a part, whoever wrote it into new/,
// can only name a genuine receipt, and is refused when its receipt is not
// stored or does not hold its purchase.
// Touches receipts/ only to read it; throws `ItemReadFailure`: `rejected`
// naming the part's receipt when the receipt is missing, damaged, larger
// than MaxFileSize= now or does not hold the purchase, `unreadable` with
// the SpoolError for any other read error (EIO, EMFILE, ENOMEM: passing,
// so the part is read again later, never rejected for it); logs nothing.
// Thread-safe: the cache is
// behind a lock, and a verification runs outside it on the caller's own
// verifier.
import Glibc
import Synchronization

package final class ReceiptLibrary: Sendable {
    let store: ReceiptStore

    /// Receipts kept parsed, at most `capacity` of them and `byteCapacity`
    /// bytes of receipts in all (a receipt of 5,000 purchases is 2 MiB, and
    /// its parse as much again); the one used longest ago goes first.
    static let capacity = 64
    static let byteCapacity = 32 << 20

    private final class Entry: Sendable {
        let der: [UInt8]
        let receipt: AppReceipt
        /// The purchase of each transaction id, by its index in the receipt.
        let purchases: [String: Int]

        init(der: [UInt8], receipt: AppReceipt) {
            self.der = der
            self.receipt = receipt
            var purchases: [String: Int] = [:]
            purchases.reserveCapacity(receipt.inAppPurchases.count)
            for (index, purchase) in receipt.inAppPurchases.enumerated() {
                if let id = purchase.transactionId, purchases[id] == nil { purchases[id] = index }
            }
            self.purchases = purchases
        }
    }

    private struct Cached {
        var entry: Entry
        var lastUse: Int
        /// The policies it was checked under, and what each said.
        var verdicts: [(policy: SignedDataPolicy, refusal: Rejection?)] = []
    }

    private struct Cache {
        var entries: [String: Cached] = [:]
        var bytes = 0
        var uses = 0
    }

    private let cache = Mutex(Cache())

    package init(store: ReceiptStore) {
        self.store = store
    }

    /// The item `part` names, its receipt verified with `verifier` (nil with
    /// Mode=none: the receipt is only checked against its name).
    func item(for part: ReceiptPart, verifier: SignedDataVerifier?) throws(ItemReadFailure) -> Item {
        let name = part.receiptSha256
        let entry = try self.entry(name)
        do throws(Rejection) {
            if let verifier { try verify(entry, name: name, with: verifier) }
            guard let entryId = part.entry else {
                return ReceiptItems.receipt(entry.receipt, der: entry.der, receiptSha256: name, context: part.context)
            }
            guard let index = entry.purchases[entryId] else {
                throw Rejection(.invalidField, "\(InputDecoder.receiptEntryMember) of a receipt part names transaction "
                    + "\(JSONValue.string(entryId).serializedString), which the receipt \(name) does not hold")
            }
            return try ReceiptItems.purchase(entry.receipt.inAppPurchases[index], index: index, of: entry.receipt,
                                             receiptSha256: name, context: part.context)
        } catch {
            throw .rejected(error)
        }
    }

    /// The receipt `name`, parsed: from the cache, else read from receipts/.
    private func entry(_ name: String) throws(ItemReadFailure) -> Entry {
        if let entry = cache.withLock({ cache -> Entry? in
            cache.uses += 1
            cache.entries[name]?.lastUse = cache.uses
            return cache.entries[name]?.entry
        }) {
            return entry
        }
        let bytes: [UInt8]?
        do {
            bytes = try store.read(name)
        } catch where error.code == EFBIG {
            // Larger than a MaxFileSize= lowered since it was stored: no
            // later read takes it either, so the part is refused (intake)
            // or held (an attempt) saying so, not tried again for ever.
            throw .rejected(Rejection("too-large", "receipts/\(name), the receipt the part names, is larger than "
                + "MaxFileSize= (\(store.largestRead) bytes), lowered since it was stored; raise it, then requeue "
                + "or release the part"))
        } catch {
            // Only a missing receipt is the part's fault; anything else is
            // the spool's, for the moment.
            throw .unreadable(error)
        }
        guard let bytes else {
            throw .rejected(Rejection(.receiptNotStored, "the receipt part names receipt \(name), which receipts/ does "
                + "not hold: it holds only receipts txrecon split, while something names them "
                + "(docs/verification.md \"StoreKit 1 receipts\"); upload the receipt itself"))
        }
        guard ReceiptStore.name(of: bytes) == name else {
            throw .rejected(Rejection(.receiptNotStored, "receipts/\(name) does not hash to its name: the file is "
                + "damaged; upload the receipt itself again, which replaces it"))
        }
        let receipt: AppReceipt
        do {
            receipt = try AppReceipt(der: bytes)
        } catch {
            throw .rejected(Rejection(.malformedReceipt, "receipts/\(name) is not a StoreKit 1 app receipt: \(error)"))
        }
        let entry = Entry(der: bytes, receipt: receipt)
        cache.withLock { cache in
            cache.uses += 1
            if let old = cache.entries.updateValue(Cached(entry: entry, lastUse: cache.uses), forKey: name) {
                cache.bytes -= old.entry.der.count
            }
            cache.bytes += bytes.count
            while cache.entries.count > ReceiptLibrary.capacity || cache.bytes > ReceiptLibrary.byteCapacity,
                  cache.entries.count > 1,
                  let oldest = cache.entries.filter({ $0.key != name }).min(by: { $0.value.lastUse < $1.value.lastUse }) {
                cache.bytes -= oldest.value.entry.der.count
                cache.entries[oldest.key] = nil
            }
        }
        return entry
    }

    /// Verifies `entry` under `verifier`'s policy once; what it said is
    /// kept and repeated for every further part of the receipt.
    private func verify(_ entry: Entry, name: String, with verifier: SignedDataVerifier) throws(Rejection) {
        let policy = verifier.policy
        let known = cache.withLock { cache -> (refusal: Rejection?, found: Bool) in
            guard let verdict = cache.entries[name]?.verdicts.first(where: { $0.policy == policy }) else {
                return (nil, false)
            }
            return (verdict.refusal, true)
        }
        if known.found {
            if let refusal = known.refusal { throw refusal }
            return
        }
        var refusal: Rejection?
        do {
            try verifier.verify(ParsedReceipt(text: "", der: entry.der, receipt: entry.receipt))
        } catch {
            refusal = error
        }
        cache.withLock { cache in
            if cache.entries[name]?.entry === entry { cache.entries[name]?.verdicts.append((policy, refusal)) }
        }
        if let refusal { throw refusal }
    }

    /// The receipts kept parsed now (tests).
    var cachedCount: Int { cache.withLock { $0.entries.count } }
}
