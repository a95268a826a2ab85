// NotifySocket: a real AF_UNIX datagram socket at a temporary path standing in
// for systemd's NOTIFY_SOCKET. Tests hand `path` to the process under test
// (NOTIFY_SOCKET=<path>); a dedicated thread receives each datagram with the
// sender's credentials (SO_PASSCRED) and keeps it, so a test can read
// `messages` or wait for a particular one. Creation failures stop the test run
// with the errno (a test cannot go on without the socket).
import Dispatch
import Glibc
import Synchronization

/// One datagram sent to the socket, as sd_notify(3) sends them:
/// newline-separated `KEY=value` assignments.
package struct NotifyMessage: Sendable, Equatable, CustomStringConvertible {
    /// The datagram as text.
    package let text: String
    /// The sending process, from the kernel's SCM_CREDENTIALS; nil if absent.
    package let senderPID: pid_t?

    /// The assignments, in the order sent.
    package var assignments: [String] { text.split(separator: "\n").map(String.init) }

    /// The value assigned to `key` (e.g. `STATUS`), nil when not assigned.
    package func value(of key: String) -> String? {
        let prefix = key + "="
        return assignments.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    /// Whether `assignment` (e.g. `READY=1`) is one of the message's lines.
    package func contains(_ assignment: String) -> Bool { assignments.contains(assignment) }

    package var description: String { "\(senderPID.map(String.init) ?? "?"): \(text.debugDescription)" }
}

/// A listening notify socket that lives as long as the value.
package final class NotifySocket: Sendable {
    /// The socket's file-system path, for NOTIFY_SOCKET.
    package let path: String
    private let directory: TemporaryDirectory
    private let descriptor: Int32
    private let inbox: Inbox
    private let receiver: pthread_t

    package init() {
        let directory = TemporaryDirectory("txrecon-notify")
        let path = directory.path + "/notify"
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(descriptor >= 0, "socket(AF_UNIX, SOCK_DGRAM) failed: errno \(errno)")
        var enable: Int32 = 1
        precondition(setsockopt(descriptor, SOL_SOCKET, SO_PASSCRED, &enable, socklen_t(MemoryLayout<Int32>.size)) == 0,
                     "setsockopt(SO_PASSCRED) failed: errno \(errno)")
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        precondition(pathBytes.count < capacity, "socket path \(path) is longer than \(capacity - 1) bytes; set a shorter TMPDIR")
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        precondition(bound == 0, "bind(\(path)) failed: errno \(errno)")

        let inbox = Inbox()
        let context = Unmanaged.passRetained(Receiver(descriptor: descriptor, inbox: inbox)).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            Unmanaged<Receiver>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        precondition(started == 0, "pthread_create failed: \(started)")
        self.directory = directory
        self.path = path
        self.descriptor = descriptor
        self.inbox = inbox
        receiver = thread
    }

    deinit {
        inbox.state.withLock { $0.closed = true }
        // shutdown wakes the receiver's blocked recvmsg with a 0-byte result.
        shutdown(descriptor, Int32(SHUT_RDWR))
        pthread_join(receiver, nil)
        close(descriptor)
    }

    /// Every message received so far, oldest first.
    package var messages: [NotifyMessage] { inbox.state.withLock { $0.messages } }

    /// Blocks the calling thread until a message at position `start` or later
    /// (already received or still to come) satisfies `predicate`, or until
    /// `timeout` passes. Call it from synchronous test code; async tests use
    /// the async overload, which keeps the cooperative pool free.
    ///
    /// - Parameters:
    ///   - start: index into `messages` to search from; default 0. Pass
    ///     `messages.count` to wait for a message not yet received.
    ///   - timeout: how long to wait at most.
    /// - Returns: the first matching message, nil on timeout.
    package func waitFor(_ predicate: @escaping @Sendable (NotifyMessage) -> Bool,
                        from start: Int = 0, timeout: Duration) -> NotifyMessage? {
        let signal = DispatchSemaphore(value: 0)
        let registration = inbox.state.withLock { state -> Registration in
            if let found = state.messages.dropFirst(start).first(where: predicate) {
                return .found(found)
            }
            let id = state.nextWaiterID
            state.nextWaiterID += 1
            state.waiters[id] = Waiter(predicate: predicate, signal: signal)
            return .waiting(id)
        }
        switch registration {
        case .found(let message):
            return message
        case .waiting(let id):
            let (seconds, attoseconds) = timeout.components
            let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
            _ = signal.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
            // A match that lands between the timeout and this line still counts.
            return inbox.state.withLock { $0.waiters.removeValue(forKey: id)?.match }
        }
    }

    /// The async form of `waitFor(_:from:timeout:)`: the blocking wait runs on
    /// a thread of its own, never on Swift's cooperative pool.
    package func waitFor(_ predicate: @escaping @Sendable (NotifyMessage) -> Bool,
                        from start: Int = 0, timeout: Duration) async -> NotifyMessage? {
        await BlockingWork.run("txrecon-test-notify") { self.waitFor(predicate, from: start, timeout: timeout) }
    }

    /// Blocks until an assignment (e.g. `READY=1`) arrives; see `waitFor(_:from:timeout:)`.
    package func waitFor(_ assignment: String, from start: Int = 0, timeout: Duration) -> NotifyMessage? {
        waitFor({ $0.contains(assignment) }, from: start, timeout: timeout)
    }

    /// Suspends until an assignment (e.g. `READY=1`) arrives; see `waitFor(_:from:timeout:)`.
    package func waitFor(_ assignment: String, from start: Int = 0, timeout: Duration) async -> NotifyMessage? {
        await waitFor({ $0.contains(assignment) }, from: start, timeout: timeout)
    }
}

private enum Registration {
    case found(NotifyMessage)
    case waiting(Int)
}

private struct Waiter {
    let predicate: @Sendable (NotifyMessage) -> Bool
    let signal: DispatchSemaphore
    var match: NotifyMessage?
}

/// What the receiver thread and the socket's owner share.
private final class Inbox: Sendable {
    struct State {
        var messages: [NotifyMessage] = []
        var waiters: [Int: Waiter] = [:]
        var nextWaiterID = 0
        /// Set before shutdown(2), so a 0-byte receive means "stop".
        var closed = false
    }

    let state = Mutex(State())

    func deliver(_ message: NotifyMessage) {
        state.withLock { state in
            state.messages.append(message)
            for (id, waiter) in state.waiters where waiter.match == nil && waiter.predicate(message) {
                state.waiters[id]?.match = message
                waiter.signal.signal()
            }
        }
    }
}

/// The receiving loop, run on its own thread until the socket shuts down.
private final class Receiver: Sendable {
    private let descriptor: Int32
    private let inbox: Inbox

    init(descriptor: Int32, inbox: Inbox) {
        self.descriptor = descriptor
        self.inbox = inbox
    }

    func run() {
        // sd_notify messages are small; systemd itself reads at most a page.
        let data = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        let control = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 8)
        defer {
            data.deallocate()
            control.deallocate()
        }
        while true {
            var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
            var header = msghdr()
            let count = withUnsafeMutablePointer(to: &vector) { vectorPointer in
                header.msg_iov = vectorPointer
                header.msg_iovlen = 1
                header.msg_control = control.baseAddress
                header.msg_controllen = control.count
                return recvmsg(descriptor, &header, Int32(MSG_CMSG_CLOEXEC))
            }
            if count < 0 {
                if errno == EINTR { continue }
                return
            }
            if count == 0 && inbox.state.withLock({ $0.closed }) { return }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: data[..<count]), as: UTF8.self)
            let sender = Self.senderPID(in: UnsafeRawBufferPointer(rebasing: control[..<Int(header.msg_controllen)]))
            inbox.deliver(NotifyMessage(text: text, senderPID: sender))
        }
    }

    /// The pid in an SCM_CREDENTIALS control message, walking the cmsghdr
    /// list by hand (the CMSG_* macros are not visible to Swift).
    private static func senderPID(in control: UnsafeRawBufferPointer) -> pid_t? {
        let headerSize = aligned(MemoryLayout<cmsghdr>.size)
        var offset = 0
        while offset + headerSize <= control.count {
            let header = control.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self)
            let length = Int(header.cmsg_len)
            guard length >= headerSize, offset + length <= control.count else { return nil }
            if header.cmsg_level == SOL_SOCKET && header.cmsg_type == scmCredentials,
               length >= headerSize + ucredSize {
                return control.loadUnaligned(fromByteOffset: offset + headerSize, as: pid_t.self)
            }
            offset += aligned(length)
        }
        return nil
    }

    // <sys/socket.h> declares SCM_CREDENTIALS and struct ucred only under
    // _GNU_SOURCE, which Swift's Glibc module does not set. Linux ABI values:
    // SCM_CREDENTIALS is 2; struct ucred is { pid_t pid; uid_t uid; gid_t gid; }.
    private static let scmCredentials: Int32 = 2
    private static let ucredSize = MemoryLayout<pid_t>.size + MemoryLayout<uid_t>.size + MemoryLayout<gid_t>.size

    private static func aligned(_ size: Int) -> Int {
        let word = MemoryLayout<Int>.size
        return (size + word - 1) / word * word
    }
}
