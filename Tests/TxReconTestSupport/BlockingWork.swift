// BlockingWork: runs a blocking call on a thread of its own and awaits it.
//
// Not DispatchQueue.global(): on Linux, Swift's tasks run on the same
// dispatch root queue, whose few threads a blocked worker keeps from them;
// a test waiting there for a notify message or a held request would stall
// every other test in the process.
import TxRecon

package enum BlockingWork {
    package static func run<T: Sendable>(_ name: String = "txrecon-test-block",
                                        _ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            do {
                try DedicatedThread.start(name: name) { continuation.resume(returning: work()) }
            } catch {
                fatalError("cannot start a thread for blocking test work: \(error)")
            }
        }
    }
}
