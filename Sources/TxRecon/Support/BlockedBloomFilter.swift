// BlockedBloomFilter: a set of byte strings that may answer "maybe" for one
// never added and never "no" for one that was, in anonymous memory that
// stays out of RSS until its bits are set. The hashing is decided here for
// every filter txrecon keeps (DoneIndex for done/, LedgerKeyFilter for the
// ledger): FNV-1a, mixed with murmur3's finalizer; the low half picks a
// block of 512 bits (a cache line), the high half three bits in it, so a
// look-up is one cache miss (about 3 % false positives at 8 bits per key,
// about 1 % at 12). Not thread-safe: its owner serialises it. Reports
// nothing.
import Glibc

struct BlockedBloomFilter: ~Copyable {
    /// Bits set per key.
    private static let probes = 3
    /// The words of one block: 512 bits, 64 bytes.
    private static let blockWords = 8

    let wordCount: Int
    private let words: UnsafeMutablePointer<UInt64>

    /// A filter of `bits` bits, rounded up to whole blocks; nil when the
    /// memory cannot be mapped (its owner goes without a filter).
    init?(bits: Int) {
        let blocks = max(1, (bits + 511) / 512)
        wordCount = blocks * Self.blockWords
        // Anonymous pages read as zero and stay out of RSS until a bit is
        // set (calloc may hand out heap memory it clears, touching it all).
        let memory = mmap(nil, wordCount * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let memory, memory != MAP_FAILED else { return nil }
        words = memory.assumingMemoryBound(to: UInt64.self)
    }

    deinit { munmap(words, wordCount * 8) }

    func add(_ bytes: UnsafeRawBufferPointer) {
        add(hash: Self.hash(bytes))
    }

    /// False only when `bytes` was never added.
    func mayContain(_ bytes: UnsafeRawBufferPointer) -> Bool {
        mayContain(hash: Self.hash(bytes))
    }

    /// Adds the bytes `hash` was computed from (`hash(_:)`): a caller that
    /// locks the filter hashes before it takes the lock.
    func add(hash: UInt64) {
        forEachBit(of: hash) { word, mask in words[word] |= mask }
    }

    func mayContain(hash: UInt64) -> Bool {
        var all = true
        forEachBit(of: hash) { word, mask in all = all && words[word] & mask != 0 }
        return all
    }

    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash = hash &* 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        return hash
    }

    private func forEachBit(of hash: UInt64, _ body: (Int, UInt64) -> Void) {
        let block = Int((hash & 0xffff_ffff) % UInt64(wordCount / Self.blockWords)) * Self.blockWords
        for probe in 0..<UInt64(Self.probes) {
            let bit = Int((hash >> (32 + 9 * probe)) & 511)
            body(block + bit / 64, 1 << UInt64(bit % 64))
        }
    }
}
