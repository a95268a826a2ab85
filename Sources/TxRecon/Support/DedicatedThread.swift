// DedicatedThread: starts a POSIX thread of our own for blocking work (curl
// transfers, a whole `txrecon sweep`, fsync or directory scans), so that
// such work never occupies one of the cooperative pool's threads (two on a
// two-core host).
//
// Touches only /proc/thread-self/comm (the thread's name). Reports a failed
// pthread_create as `ThreadStartError`.
import Glibc

/// A detached thread that runs one closure and ends when it returns.
package enum DedicatedThread {
    /// Starts `body` on a new detached thread. `name` shows in `ps -L` and
    /// `top -H`; the kernel keeps only its first 15 bytes.
    ///
    /// `body` is `sending`: whatever it captures moves to the new thread,
    /// which from then on owns it alone.
    package static func start(name: String, _ body: sending @escaping () -> Void) throws(ThreadStartError) {
        let context = Unmanaged.passRetained(ThreadContext(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, { raw in
            let context = Unmanaged<ThreadContext>.fromOpaque(raw!).takeRetainedValue()
            nameCurrentThread(context.name)
            context.body()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<ThreadContext>.fromOpaque(context).release()
            throw ThreadStartError(name: name, code: status)
        }
    }
}

extension DedicatedThread {
    /// Runs `body` on a new thread and suspends, without blocking the
    /// caller's thread, until it returns its result. Whatever `body` needs
    /// that is not Sendable it makes on that thread.
    package static func run<Value: Sendable>(name: String,
                                     _ body: @escaping @Sendable () -> Value) async throws(ThreadStartError) -> Value {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, ThreadStartError>, Never>) in
            do throws(ThreadStartError) {
                try start(name: name) { continuation.resume(returning: .success(body())) }
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        return try outcome.get()
    }
}

/// Names the calling thread the way pthread_setname_np does (which Swift
/// cannot see without _GNU_SOURCE). A name is a convenience for operators,
/// so failing to set it is ignored.
private func nameCurrentThread(_ name: String) {
    let file = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard file >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
    close(file)
}

/// What a new thread runs; it crosses pthread_create as an opaque pointer
/// and is owned by exactly one thread at a time.
private final class ThreadContext {
    let name: String
    let body: () -> Void

    init(name: String, body: @escaping () -> Void) {
        self.name = name
        self.body = body
    }
}

/// pthread_create failed, usually for lack of memory or a task limit
/// (`TasksMax=` in the unit, `ulimit -u`).
package struct ThreadStartError: Error, Sendable, CustomStringConvertible {
    var name: String
    /// The errno value pthread_create returned.
    var code: Int32

    package var description: String {
        "cannot start thread \(name): \(String(cString: strerror(code))); check TasksMax= and ulimit -u"
    }
}
