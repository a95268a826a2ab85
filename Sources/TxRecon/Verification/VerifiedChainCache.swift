// VerifiedChainCache: chains that passed validation, so that the many JWS
// Apple signs with one leaf cost one signature check each, not a chain
// validation and three certificate parses.
//
// Keyed by the exact x5c strings as received (no parse on a hit), and valid
// only inside the chain's validity window: a signedDate outside it is
// validated afresh, and only passing chains are stored, so the verdict is
// the same with and without the cache. Memory only; logs nothing.

/// The exact `x5c` of a JWS header.
struct ChainKey: Hashable {
    let x5c: [String]
}

/// A bounded map from `x5c` to its verified chain. Not Sendable on purpose:
/// it holds OpenSSL keys and belongs to one verifier on one thread.
struct VerifiedChainCache {
    /// Apple signs with a handful of leaves at a time (each lives about two
    /// years); more distinct valid chains than this means something unusual,
    /// and emptying the cache then costs only fresh validations.
    static let defaultCapacity = 64

    /// Entries kept at most; 0 turns caching off.
    let capacity: Int
    private var chains: [ChainKey: VerifiedChain] = [:]

    init(capacity: Int = VerifiedChainCache.defaultCapacity) {
        self.capacity = capacity
    }

    /// The number of chains held (internal for testing).
    var count: Int { chains.count }

    /// The leaf key of the chain `key` when it was verified and `time`
    /// (seconds since 1970) lies inside its validity window.
    func leafKey(for key: ChainKey, at time: Int64) -> ES256PublicKey? {
        guard let chain = chains[key], chain.validity.contains(time) else { return nil }
        return chain.leafKey
    }

    mutating func insert(_ chain: VerifiedChain, for key: ChainKey) {
        guard capacity > 0 else { return }
        if chains.count >= capacity, chains[key] == nil { chains.removeAll(keepingCapacity: true) }
        chains[key] = chain
    }
}
