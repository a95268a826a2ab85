// DoneIndex: which keys may have a delivered snapshot in done/, so that the
// supersede check of a fresh drop ("not newer than the one delivered") reads
// done/KEY only when there may be one. Without it every fresh drop cost a
// failed lookup in done/, a directory of up to DoneRetention='s worth of items.
//
// A Bloom filter of fixed size (1 MiB): it may answer "maybe" for a key never
// delivered (done/KEY is then read, and found missing, as before), never "no"
// for one that was. Built from done/'s names on a thread of its own (a
// listing of a million names takes about a second, which neither start-up
// nor the engine should wait for); the engine adds every key it delivers.
// Removals by DoneReaper are not taken out, they only make "maybe" likelier:
// after `capacity` deliveries the engine has it rebuilt from done/. Used by
// the engine only once built (not Sendable: it moves, it is never shared).
import Glibc

/// Builds an index of a spool's done/ away from the caller's thread.
/// Replaceable so that tests decide when the index arrives.
package typealias DoneIndexBuilder = @Sendable (Spool) async -> sending Result<DoneIndex, SpoolError>

package final class DoneIndex {
    private static let wordCount = (1 << 23) / 64
    private static let probes = 3
    /// Additions after which the filter answers "maybe" too often (about
    /// 3% at this count): the engine then rebuilds it from done/.
    static let capacity = 1_000_000

    private let words: UnsafeMutablePointer<UInt64>

    private static let byteCount = wordCount * MemoryLayout<UInt64>.size

    init() {
        // Anonymous pages read as zero and stay out of RSS until a bit is
        // set (calloc may hand out heap memory it clears, touching it all).
        let memory = mmap(nil, DoneIndex.byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let memory, memory != MAP_FAILED else { fatalError("DoneIndex: cannot map 1 MiB: \(errno)") }
        words = memory.assumingMemoryBound(to: UInt64.self)
    }

    deinit { munmap(words, DoneIndex.byteCount) }

    /// Lists `spool`'s done/ into a new index on a thread of its own
    /// (txrecon-index); on the caller's thread if no thread can be started.
    package static func build(from spool: Spool) async -> sending Result<DoneIndex, SpoolError> {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<DoneIndex, SpoolError>, Never>) in
            do throws(ThreadStartError) {
                try DedicatedThread.start(name: "txrecon-index") { continuation.resume(returning: listing(spool)) }
            } catch {
                continuation.resume(returning: listing(spool))
            }
        }
    }

    /// A new index of the keys in `spool`'s done/ now, on this thread.
    package static func listing(_ spool: Spool) -> Result<DoneIndex, SpoolError> {
        let index = DoneIndex()
        do {
            try spool.indexDelivered(into: index)
            return .success(index)
        } catch {
            return .failure(error)
        }
    }

    func add(_ key: ItemKey) {
        var name = key.fileName
        name.withUTF8 { add(UnsafeRawBufferPointer($0)) }
    }

    /// Adds a name as read from done/ (a key's file name).
    func add(_ fileName: UnsafeRawBufferPointer) {
        forEachBit(of: fileName) { word, mask in words[word] |= mask }
    }

    /// False only when done/KEY was never delivered since the index was built.
    func mayContain(_ key: ItemKey) -> Bool {
        var name = key.fileName
        return name.withUTF8 { bytes in
            var all = true
            forEachBit(of: UnsafeRawBufferPointer(bytes)) { word, mask in all = all && words[word] & mask != 0 }
            return all
        }
    }

    /// The filter's bits for a name: FNV-1a, mixed (murmur3's finalizer);
    /// the low half picks a block of 512 bits (a cache line), the high half
    /// the bits in it. All of a name's bits in one line make a lookup one
    /// cache miss rather than three, at about the same false positives (a
    /// blocked Bloom filter: about 3 % at `capacity`, as before).
    private func forEachBit(of bytes: UnsafeRawBufferPointer, _ body: (Int, UInt64) -> Void) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash = hash &* 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        let block = Int((hash & 0xffff_ffff) % UInt64(DoneIndex.wordCount / DoneIndex.blockWords)) * DoneIndex.blockWords
        for probe in 0..<UInt64(DoneIndex.probes) {
            let bit = Int((hash >> (32 + 9 * probe)) & 511)
            body(block + bit / 64, 1 << UInt64(bit % 64))
        }
    }

    /// The words of one block: 512 bits, 64 bytes.
    private static let blockWords = 8
}
