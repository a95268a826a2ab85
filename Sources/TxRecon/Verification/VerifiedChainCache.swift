// VerifiedChainCache: chains that passed validation, so that the many JWS
// Apple signs with one leaf cost one signature check each, not a chain
// validation and three certificate parses.
//
// Keyed by the exact base64url text of the JWS header that carried the
// chain: the header holds `alg` and `x5c`, so a hit stands for the header's
// checks too (ES256, no `crit`, three certificates), and the decoder takes
// the header's parse from here (`headers`) instead of decoding 3.5 KiB again.
// Valid only inside the chain's validity window: a signedDate outside it is
// validated afresh, and only chains that passed and whose leaf signed the
// JWS at hand are stored (a header of anyone's making with Apple's x5c in
// it never is), so the verdict is the same with and without the cache.
// Memory only; logs nothing.

/// A bounded map from an encoded JOSE header to its verified chain. Not
/// Sendable on purpose: it holds OpenSSL keys and belongs to one verifier on
/// one thread.
struct VerifiedChainCache {
    /// Apple signs with a handful of leaves at a time (each lives about two
    /// years); more distinct valid chains than this means something unusual,
    /// and emptying the cache then costs only fresh validations.
    static let defaultCapacity = 64

    /// Entries kept at most; 0 turns caching off.
    let capacity: Int
    /// The headers of the chains below, position for position.
    private(set) var headers = KnownJOSEHeaders()
    private var chains: [VerifiedChain] = []

    init(capacity: Int = VerifiedChainCache.defaultCapacity) {
        self.capacity = capacity
    }

    /// The number of chains held (internal for testing).
    var count: Int { chains.count }

    /// The leaf key of the chain that came in the header spelled exactly
    /// `encodedHeader`, when it was verified and `time` (seconds since 1970)
    /// lies inside its validity window.
    func leafKey(forHeader encodedHeader: UnsafeBufferPointer<UInt8>, at time: Int64) -> ES256PublicKey? {
        guard let position = headers.index(of: encodedHeader), chains[position].validity.contains(time) else {
            return nil
        }
        return chains[position].leafKey
    }

    /// Stores `chain`, verified from the header `encodedHeader`, which
    /// parses to `header`.
    mutating func insert(_ chain: VerifiedChain, encodedHeader: [UInt8], header: JSONValue) {
        guard capacity > 0 else { return }
        if let position = encodedHeader.withUnsafeBufferPointer({ headers.index(of: $0) }) {
            chains[position] = chain
            return
        }
        if chains.count >= capacity {
            headers.removeAll()
            chains.removeAll(keepingCapacity: true)
        }
        headers.append(encodedHeader, parsedAs: header)
        chains.append(chain)
    }
}
