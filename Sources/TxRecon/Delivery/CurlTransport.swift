// CurlTransport: the production `Transport`, libcurl's easy interface on a
// fixed set of dedicated threads.
//
// One worker thread per allowed concurrent delivery (MaxConcurrentDeliveries=),
// each owning one curl handle for its whole life, so connections to the backend
// stay open between attempts. `start` hands an exchange to the workers through
// a `HandoffQueue` and returns: the exchange (the engine's spool reads and
// commits, and the transfer) runs on the worker, no blocking call ever runs
// on the cooperative pool, and idle workers sleep without waking.
//
// Touches no spool state itself. Every transfer problem, including a shut-down
// transport, is reported as a `TransportResult.failure`; only starting the
// transport throws (`CurlTransport.StartError`). Nothing is logged here.
import CCurl
import Synchronization

/// Sends delivery requests with libcurl, at most `workerCount` at a time.
///
/// TLS: the CA bundle and the client identity come as the bytes the
/// configuration's loader read and checked (`BackendSecrets.tls`) and are
/// handed to curl in memory; curl never opens CAFile=, ClientCertificateFile=
/// or ClientKeyFile= itself, so a key file is read once, with its
/// permissions checked, however many connections are opened later.
///
/// Reload: `update(settings:tls:)` replaces URL, timeout and TLS material for every
/// attempt that starts afterwards (attempts already running finish with the
/// old ones). The number of workers is fixed at start; a reload that changes
/// `MaxConcurrentDeliveries=` needs a new transport (shut the old one down once
/// its attempts have finished).
package final class CurlTransport: Transport {
    /// The number of worker threads, hence of attempts in flight at once.
    package let workerCount: Int
    private let jobs = HandoffQueue<CurlJob>()
    private let options: Mutex<CurlOptions>

    /// Starts `workers` threads (at least 1) that POST to `settings.url`.
    /// Only `url` and `timeout` of `settings` are used; `tls` holds what
    /// its CAFile=, ClientCertificateFile= and ClientKeyFile= name.
    package init(settings: BackendSettings, tls: BackendSecrets.TLSMaterial,
                workers: Int) throws(StartError) {
        precondition(workers >= 1, "CurlTransport needs at least one worker, got \(workers)")
        let initialization = CurlLibrary.initialization
        guard initialization == CURLE_OK else {
            throw StartError("curl_global_init failed: \(String(cString: curl_easy_strerror(initialization)))")
        }
        workerCount = workers
        options = Mutex(CurlOptions(settings, tls: tls))
        for index in 1...workers {
            // On failure, closing the queue ends the workers already started.
            let worker: CurlWorker
            do {
                worker = try CurlWorker()
            } catch {
                _ = jobs.close()
                throw error
            }
            do {
                try DedicatedThread.start(name: "txrecon-curl-\(index)") { [jobs] in worker.run(jobs) }
            } catch {
                _ = jobs.close()
                throw StartError(error.description)
            }
        }
    }

    deinit {
        shutdown()
    }

    /// Runs `exchange` on the next free worker, with a `send` that POSTs on
    /// that worker's connection. A send waits at most `Timeout=`. After
    /// `shutdown()`, exchanges still run (on a thread of their own, so that
    /// what they commit stays consistent) with a `send` that fails at once.
    package func start(_ exchange: TransportExchange) {
        let options = self.options.withLock { $0 }
        // The worker refuses a header that holds a line break or NUL
        // (CurlHeaderList), before anything is sent.
        if let refused = jobs.put(CurlJob(options: options, exchange: exchange)) { refused.refuse() }
    }

    /// Uses `settings` and `tls` for every attempt that starts after this call.
    package func update(settings: BackendSettings, tls: BackendSecrets.TLSMaterial) {
        let replacement = CurlOptions(settings, tls: tls)
        options.withLock { $0 = replacement }
    }

    /// Stops the workers: attempts already running finish, waiting ones and
    /// later ones fail at once. Does not wait for the threads; idempotent.
    package func shutdown() {
        for job in jobs.close() { job.refuse() }
    }

    /// The transport could not start; the daemon cannot deliver without it.
    package struct StartError: Error, Sendable, CustomStringConvertible {
        package var reason: String

        init(_ reason: String) { self.reason = reason }

        package var description: String { "cannot start the HTTP transport: \(reason)" }
    }
}

/// libcurl's process-wide initialisation.
enum CurlLibrary {
    /// curl_global_init's result. Swift runs a static initializer exactly
    /// once and thread-safely, before the first handle is made.
    static let initialization: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
}

/// One attempt waiting for a worker.
struct CurlJob: Sendable {
    var options: CurlOptions
    var exchange: TransportExchange

    func refuse() {
        TransportRefusal.run(exchange)
    }
}

/// An exchange handed over after its transport shut down still runs once,
/// as the Transport contract wants, with a send that fails at once; on a
/// thread of its own, since the caller may be the engine's.
enum TransportRefusal {
    private static let shutDownResult = TransportResult.failure(TransportFailure(.other, "transport shut down"))

    static func run(_ exchange: TransportExchange) {
        do {
            try DedicatedThread.start(name: "txrecon-refused") { exchange.run { _ in shutDownResult } }
        } catch {
            exchange.run { _ in shutDownResult }
        }
    }
}

final class CurlOptions: Sendable {
    /// A connection that takes longer than this to open is given up even
    /// when `Timeout=` is longer: a healthy backend accepts within a second.
    static let connectTimeoutCap: Duration = .seconds(10)

    let url: String
    /// `Timeout=` in milliseconds (at least 1): the whole exchange.
    let timeoutMilliseconds: Int
    /// min(`Timeout=`, `connectTimeoutCap`) in milliseconds.
    let connectTimeoutMilliseconds: Int
    /// PEM bytes of CAFile=, ClientCertificateFile= and ClientKeyFile=.
    let tls: BackendSecrets.TLSMaterial
    /// Whether the environment names a proxy (or hosts that bypass one):
    /// curl then looks at it for every transfer, as it always does. When it
    /// names none, curl is told so once (no proxy, nothing bypassed), which
    /// is what its own lookup would find, without five getenv(3) calls and
    /// a formatted variable name per request (bench/FINDINGS.md).
    let proxyFromEnvironment: Bool

    init(_ settings: BackendSettings, tls: BackendSecrets.TLSMaterial,
         environment: [String: String] = ProcessEnvironment.current) {
        url = settings.url
        timeoutMilliseconds = Self.milliseconds(settings.timeout)
        connectTimeoutMilliseconds = Self.milliseconds(min(settings.timeout, Self.connectTimeoutCap))
        self.tls = tls
        proxyFromEnvironment = Self.namesProxy(environment)
    }

    /// Whether any variable curl reads for proxies is set: http_proxy,
    /// https_proxy, all_proxy, no_proxy in either case (and any other
    /// `*_proxy`, should a later curl read more).
    static func namesProxy(_ environment: [String: String]) -> Bool {
        environment.keys.contains { $0.lowercased().hasSuffix("_proxy") }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        let total = seconds.multipliedReportingOverflow(by: 1000)
        guard !total.overflow else { return Int.max }
        return max(1, Int(total.partialValue + attoseconds / 1_000_000_000_000_000))
    }
}
