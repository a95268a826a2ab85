// DescriptorInheritance: keeps child processes from inheriting descriptors
// the test runner opens without close-on-exec set yet. Swift cannot call
// accept4(2), so a loopback server's accepted socket is briefly inheritable
// between accept and fcntl; a daemon spawned in that instant would hold the
// connection open for its whole life, and a server closing it would not end
// it. Spawning and that window take the same lock.
import Synchronization

package enum DescriptorInheritance {
    private static let lock = Mutex(())

    /// Runs `body` (an accept-then-fcntl, or a spawn) exclusively.
    package static func exclusively<T>(_ body: () throws -> T) rethrows -> T {
        try lock.withLock { _ in try body() }
    }
}
