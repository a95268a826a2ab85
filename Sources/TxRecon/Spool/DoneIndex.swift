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
    /// Additions after which the filter answers "maybe" too often (about
    /// 3% at this count): the engine then rebuilds it from done/.
    static let capacity = 1_000_000

    /// 1 MiB of bits; nil when that memory cannot be mapped: every key
    /// may then be in done/, which is read as without an index.
    private let filter = BlockedBloomFilter(bits: 1 << 23)

    init() {}

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
        filter?.add(fileName)
    }

    /// False only when done/KEY was never delivered since the index was built.
    func mayContain(_ key: ItemKey) -> Bool {
        var name = key.fileName
        return name.withUTF8 { filter?.mayContain(UnsafeRawBufferPointer($0)) ?? true }
    }
}
