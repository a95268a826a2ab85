// VerifierPool: SignedDataVerifiers for threads that verify at once (the
// receiver's connection threads, the delivery engine's event loop), one
// thread per verifier at a time: a verifier holds OpenSSL state and a chain
// cache without locks. A verifier is made when none of the asked policy is
// idle, so the pool holds at most as many as threads ever verified at once.
// Touches no files, reports nothing.
import Synchronization

/// Verifiers handed to one thread at a time.
final class VerifierPool: Sendable {
    private let idle = Mutex<[VerifierBox]>([])

    /// Runs `body` with a verifier for `policy` (nil with Mode=none) that no
    /// other thread uses meanwhile.
    func with<T, Failure: Error>(_ policy: SignedDataPolicy?,
                                 _ body: (SignedDataVerifier?) throws(Failure) -> T) throws(Failure) -> T {
        guard let policy else { return try body(nil) }
        let box = idle.withLock { idle -> VerifierBox? in
            while let box = idle.popLast() {
                if box.verifier.policy == policy { return box }
            }
            return nil
        } ?? VerifierBox(SignedDataVerifier(policy: policy))
        defer { idle.withLock { $0.append(box) } }
        return try body(box.verifier)
    }
}

/// A verifier in the pool. @unchecked Sendable: it moves between threads
/// only through the pool's lock, and one thread at a time uses it.
private final class VerifierBox: @unchecked Sendable {
    let verifier: SignedDataVerifier
    init(_ verifier: SignedDataVerifier) { self.verifier = verifier }
}
