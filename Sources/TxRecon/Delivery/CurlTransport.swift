// CurlTransport: the production `Transport`, libcurl's multi interface on
// the engine's event loop.
//
// `MaxConcurrentDeliveries=` easy handles, each kept for the transport's
// life so that its connection to the backend stays open between attempts,
// driven by one curl multi handle whose sockets and timeout live in the
// event loop of the engine's thread (ThreadExecutor's epoll and timers;
// CurlMultiDriver). An exchange's halves (read the item and build the
// request; commit what the answer means) run on that thread too, as in the
// single-threaded reference program of bench/curlmulti.c: no thread per
// connection, no hand-over per attempt, and the number of threads does not
// grow with the deliveries in flight or the destinations.
//
// Touches no spool state itself. Every transfer problem, including a shut-down
// transport, is reported as a `TransportResult.failure`; only starting the
// transport throws (`CurlTransport.StartError`). Nothing is logged here.
import CCurl
import Synchronization

/// Sends delivery requests with libcurl, at most `connectionCount` at a time.
///
/// TLS: the CA bundle and the client identity come as the bytes the
/// configuration's loader read and checked (`BackendSecrets.tls`) and are
/// handed to curl in memory; curl never opens CAFile=, ClientCertificateFile=
/// or ClientKeyFile= itself, so a key file is read once, with its
/// permissions checked, however many connections are opened later.
///
/// Reload: `update(settings:tls:)` replaces URL, timeout and TLS material for every
/// attempt that starts afterwards (attempts already running finish with the
/// old ones). The number of connections is fixed at start; a reload that changes
/// `MaxConcurrentDeliveries=` needs a new transport (shut the old one down once
/// its attempts have finished).
package final class CurlTransport: Transport {
    /// The number of easy handles, hence of requests in flight at once.
    package let connectionCount: Int
    private let loop: ThreadExecutor
    private let driver: CurlMultiDriver
    private let options: Mutex<CurlOptions>

    /// Makes `connections` handles (at least 1) that POST to `settings.url`,
    /// driven on `loop`. Only `url` and `timeout` of `settings` are used;
    /// `tls` holds what its CAFile=, ClientCertificateFile= and
    /// ClientKeyFile= name.
    package init(settings: BackendSettings, tls: BackendSecrets.TLSMaterial, connections: Int,
                 loop: ThreadExecutor) throws(StartError) {
        precondition(connections >= 1, "CurlTransport needs at least one connection, got \(connections)")
        let initialization = CurlLibrary.initialization
        guard initialization == CURLE_OK else {
            throw StartError("curl_global_init failed: \(String(cString: curl_easy_strerror(initialization)))")
        }
        connectionCount = connections
        self.loop = loop
        options = Mutex(CurlOptions(settings, tls: tls))
        driver = try CurlMultiDriver(connections: connections, loop: loop)
    }

    deinit {
        shutdown()
    }

    /// Runs `exchange` on the event loop: its `prepare` at once when a
    /// connection is free (else when one frees, in the order handed over),
    /// its request on that connection, its `then` when the answer is in. A
    /// transfer ends by `Timeout=` at the latest. After `shutdown()`,
    /// exchanges still run, with a result that fails at once.
    package func start(_ exchange: TransportExchange) {
        let options = self.options.withLock { $0 }
        if loop.isCurrent {
            driver.start(exchange, options: options)
        } else {
            loop.submit { [driver] in driver.start(exchange, options: options) }
        }
    }

    /// Uses `settings` and `tls` for every attempt that starts after this call.
    package func update(settings: BackendSettings, tls: BackendSecrets.TLSMaterial) {
        let replacement = CurlOptions(settings, tls: tls)
        options.withLock { $0 = replacement }
    }

    /// Stops sending: requests in flight finish, waiting exchanges and
    /// later ones end at once with a failure. Does not wait; idempotent.
    package func shutdown() {
        if loop.isCurrent {
            driver.shutdown()
        } else {
            loop.submit { [driver] in driver.shutdown() }
        }
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

    /// The version of the libcurl loaded, e.g. `7.88.1`.
    static var version: String { String(cString: txr_curl_version_info().pointee.version) }

    /// Whether a cleartext HTTP/2 connection (prior knowledge) can carry a
    /// second request: not in 7.88 (curl issue 10634, fixed in 7.89.0).
    static var reusesPriorKnowledgeConnections: Bool {
        txr_curl_version_info().pointee.version_num >= 0x075900
    }
}

final class CurlOptions: Sendable {
    /// A connection that takes longer than this to open is given up even
    /// when `Timeout=` is longer: a healthy backend accepts within a second.
    static let connectTimeoutCap: Duration = .seconds(10)

    let url: String
    /// `HTTPVersion=`.
    let httpVersion: HTTPVersion
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
        httpVersion = settings.httpVersion
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
