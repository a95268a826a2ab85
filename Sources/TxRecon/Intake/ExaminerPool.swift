// ExaminerPool: examines the drops of a batch on more than one core.
//
// Checking an App Store JWS (an ES256 signature, about 95 µs here, and the
// base64 and JSON around it) is most of intake's work, and a single intake
// thread held a JWS drain at the share of a core one thread gets while the
// machine still had room. `examine` splits a list of names into contiguous
// parts, gives all but the first to helper threads, examines the first on the
// caller's thread, and returns the examinations in the list's order: what
// intake then does with them stays on its own thread, in arrival order.
//
// Helpers are dedicated threads (never Swift's cooperative pool: they block
// on files and OpenSSL) that sleep on a HandoffQueue while there is nothing
// to examine, so an idle daemon has no wake-ups here. Each keeps a verifier
// of its own, whose chain cache it does not share. Reads files, changes
// nothing, reports nothing.
import Dispatch
import Glibc
import Synchronization

final class ExaminerPool: Sendable {
    /// A part smaller than this is examined by the caller: handing it over
    /// and waiting for it would cost about what it saves.
    static let minimumPart = 8

    /// One helper per further core, up to three: on a two-core host intake
    /// examines on two threads.
    static var defaultHelperCount: Int {
        max(0, min(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 4) - 1)
    }

    /// The number of helper threads.
    let helperCount: Int
    private let parts = HandoffQueue<Part>()

    /// Starts `helpers` threads; with 0 the caller examines everything.
    init(helpers: Int) throws(ThreadStartError) {
        helperCount = helpers
        for index in 0..<helpers {
            do {
                try DedicatedThread.start(name: "txrecon-intake\(index + 2)") { [parts] in
                    let verifiers = VerifierSlot()
                    while let part = parts.take() { part.examine(verifiers) }
                }
            } catch {
                close()
                throw error
            }
        }
    }

    /// Ends the helpers; parts handed over later are examined by the caller.
    func close() {
        for part in parts.close() { part.examine(VerifierSlot()) }
    }

    /// Examines `names` in new/, on the helpers and the calling thread at
    /// once; `verifier` is the caller's, for `policy`; parts of receipt
    /// uploads are read through `receipts`. Returns one examination per
    /// name, in the order of `names`.
    func examine(_ names: ArraySlice<String>, in spool: Spool, maximumSize: Int, decoder: InputDecoder,
                 policy: SignedDataPolicy?, verifier: SignedDataVerifier?,
                 receipts: ReceiptLibrary) -> [DropExamination] {
        let partCount = min(helperCount + 1, names.count / Self.minimumPart)
        guard partCount > 1 else {
            return names.map {
                DropExamination.examine($0, in: spool, maximumSize: maximumSize, decoder: decoder, verifier: verifier,
                                        receipts: receipts)
            }
        }
        let partSize = (names.count + partCount - 1) / partCount
        let starts = stride(from: names.startIndex, to: names.endIndex, by: partSize)
        let handed = starts.dropFirst().map { start in
            let part = Part(Array(names[start..<min(start + partSize, names.endIndex)])) { names, verifiers in
                // Once per part: comparing the policy with the slot's cost
                // about 2,000 instructions per drop when asked for each.
                let verifier = verifiers.verifier(for: policy)
                return names.map { name in
                    DropExamination.examine(name, in: spool, maximumSize: maximumSize, decoder: decoder,
                                            verifier: verifier, receipts: receipts)
                }
            }
            if let refused = parts.put(part) { refused.examine(VerifierSlot()) }
            return part
        }
        var examinations = names.prefix(partSize).map {
            DropExamination.examine($0, in: spool, maximumSize: maximumSize, decoder: decoder, verifier: verifier,
                                    receipts: receipts)
        }
        examinations.reserveCapacity(names.count)
        for part in handed { examinations += part.wait() }
        return examinations
    }

    /// Names examined by one helper, and their examinations once done.
    private final class Part: Sendable {
        private let names: [String]
        private let examineAll: @Sendable ([String], VerifierSlot) -> [DropExamination]
        private let result = Mutex<[DropExamination]>([])
        private let done = DispatchSemaphore(value: 0)

        /// `examineAll` examines the names, in order, with the verifiers
        /// of the thread that runs it.
        init(_ names: [String], _ examineAll: @escaping @Sendable ([String], VerifierSlot) -> [DropExamination]) {
            self.names = names
            self.examineAll = examineAll
        }

        /// Runs on the helper that took the part, with that helper's verifiers.
        func examine(_ verifiers: VerifierSlot) {
            let examinations = examineAll(names, verifiers)
            result.withLock { $0 = examinations }
            done.signal()
        }

        /// Blocks until `examine` has run; call from a dedicated thread only.
        func wait() -> [DropExamination] {
            done.wait()
            return result.withLock { $0 }
        }
    }
}

/// The verifier for the policy in force, rebuilt when a reload changes the
/// policy, so that its chain cache survives from batch to batch. Made and
/// used on one thread only (intake's, or one helper's): the verifier is not
/// Sendable.
final class VerifierSlot {
    private var current: SignedDataVerifier?

    func verifier(for policy: SignedDataPolicy?) -> SignedDataVerifier? {
        guard let policy else {
            current = nil
            return nil
        }
        if current?.policy != policy { current = SignedDataVerifier(policy: policy) }
        return current
    }
}
