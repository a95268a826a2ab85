// CurlMultiDriver: libcurl's multi interface driven by an event loop
// (ThreadExecutor): curl tells it which sockets to watch and when to call
// back (CURLMOPT_SOCKETFUNCTION, CURLMOPT_TIMERFUNCTION); the loop's epoll
// and timers do the waiting, and curl_multi_socket_action the work, as
// libcurl's own examples for libevent and libuv do.
//
// It owns the transport's connections (CurlConnection, one easy handle
// each), hands a free one to the next exchange in the order they came,
// and runs each exchange's halves on the loop: `prepare` just before its
// request is added, `then` as soon as the answer is in. Touches no spool
// state itself; logs nothing.
import CCurl
import CGlibcExtras
import Glibc

/// `@unchecked Sendable`: every member is used on `loop`'s thread only.
/// CurlTransport calls `start` and `shutdown` through `loop.submit` (or
/// directly when it runs there already), and both check the thread
/// (`loop.checkIsolated`); everything else runs from the loop's own socket
/// handlers and timers, or from curl's callbacks inside the calls made
/// there. Only `deinit` may run elsewhere: after the loop has ended, when
/// nothing else holds the driver.
final class CurlMultiDriver: @unchecked Sendable {
    private let loop: ThreadExecutor
    private let multi: UnsafeMutableRawPointer
    /// Every connection, and those not sending now.
    private var connections: [CurlConnection]
    private var free: [CurlConnection]
    /// Exchanges waiting for a free connection, first come first served.
    private var waiting: [(exchange: TransportExchange, options: CurlOptions)] = []
    private var waitingHead = 0
    /// What each connection that is sending hands its result to.
    private var transfers: [ObjectIdentifier: @Sendable (TransportResult) -> Void] = [:]
    /// The sockets curl asked the loop to watch.
    private var watched: Set<Int32> = []
    private var timer: EngineTimer?
    /// Whether a call to curl's timeout action is queued on the loop.
    private var isKicked = false
    private var isShutDown = false
    private var isCleanedUp = false

    init(connections count: Int, loop: ThreadExecutor) throws(CurlTransport.StartError) {
        guard let multi = curl_multi_init() else {
            throw CurlTransport.StartError("curl_multi_init failed (out of memory?)")
        }
        var made: [CurlConnection] = []
        do {
            for _ in 0..<count { made.append(try CurlConnection()) }
        } catch {
            curl_multi_cleanup(multi)
            throw error
        }
        self.loop = loop
        self.multi = multi
        connections = made
        free = made.reversed()
        let me = Unmanaged.passUnretained(self).toOpaque()
        // One connection kept open per handle: the cache holds as many.
        _ = txr_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, count)
        _ = txr_curl_multi_setopt_socket(multi, { _, socket, what, driver, _ in
            Unmanaged<CurlMultiDriver>.fromOpaque(driver!).takeUnretainedValue().socketChanged(socket, what: what)
            return 0
        }, me)
        _ = txr_curl_multi_setopt_timer(multi, { _, milliseconds, driver in
            Unmanaged<CurlMultiDriver>.fromOpaque(driver!).takeUnretainedValue().timerChanged(milliseconds)
            return 0
        }, me)
    }

    deinit {
        if !isCleanedUp { curl_multi_cleanup(multi) }
    }

    /// Runs `exchange` on the next free connection, now or when one frees.
    func start(_ exchange: TransportExchange, options: CurlOptions) {
        loop.checkIsolated()
        guard !isShutDown else { return exchange.run { _ in Self.shutDownResult } }
        if waitingHead == waiting.count, let connection = free.popLast() {
            send(exchange, options: options, on: connection)
        } else {
            waiting.append((exchange, options))
        }
    }

    /// Ends the exchanges still waiting (with a failure) and sends nothing
    /// more; the transfers in flight finish, then curl's handles go.
    func shutdown() {
        loop.checkIsolated()
        guard !isShutDown else { return }
        isShutDown = true
        let ended = waiting[waitingHead...]
        waiting = []
        waitingHead = 0
        for (exchange, _) in ended { exchange.run { _ in Self.shutDownResult } }
        cleanUpWhenIdle()
    }

    private static let shutDownResult = TransportResult.failure(TransportFailure(.other, "transport shut down"))

    private func send(_ exchange: TransportExchange, options: CurlOptions, on connection: CurlConnection) {
        guard case let .send(request, then) = exchange.prepare() else { return free.append(connection) }
        if let failure = connection.prepare(request, with: options) {
            free.append(connection)
            return then(.failure(failure))
        }
        transfers[ObjectIdentifier(connection)] = then
        let code = curl_multi_add_handle(multi, connection.handle)
        guard code != CURLM_OK else { return }
        transfers[ObjectIdentifier(connection)] = nil
        _ = connection.result(CURLE_FAILED_INIT)
        free.append(connection)
        then(.failure(TransportFailure(.other, "curl_multi_add_handle failed: "
                                       + String(cString: curl_multi_strerror(code)))))
    }

    /// Hands free connections to waiting exchanges, in their order.
    private func startWaiting() {
        while waitingHead < waiting.count, let connection = free.popLast() {
            let (exchange, options) = waiting[waitingHead]
            waitingHead += 1
            if waitingHead == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                waitingHead = 0
            }
            send(exchange, options: options, on: connection)
        }
    }

    // MARK: curl's callbacks, and the loop's

    /// CURLMOPT_SOCKETFUNCTION: what curl wants to hear of `socket`.
    private func socketChanged(_ socket: curl_socket_t, what: Int32) {
        if what == CURL_POLL_REMOVE {
            if watched.remove(socket) != nil { loop.unwatch(socket) }
            return
        }
        var events: UInt32 = 0
        if what & CURL_POLL_IN != 0 { events |= EPOLLIN.rawValue }
        if what & CURL_POLL_OUT != 0 { events |= EPOLLOUT.rawValue }
        watched.insert(socket)
        loop.watch(socket, events: events) { [self] ready in socketReady(socket, ready) }
    }

    /// CURLMOPT_TIMERFUNCTION: call curl back in `milliseconds` (-1: never).
    /// Never calls curl from here (curl forbids it): the loop does, as a
    /// call queued behind the work at hand when curl wants it at once (a
    /// request just added is sent then, not when the loop next looks at
    /// its timers), else at the loop's timer.
    private func timerChanged(_ milliseconds: Int) {
        timer?.cancel()
        timer = nil
        guard milliseconds >= 0 else { return }
        guard milliseconds > 0 else {
            guard !isKicked else { return }
            isKicked = true
            return loop.submit { [self] in
                isKicked = false
                act(on: Self.timeoutSocket, events: 0)
            }
        }
        timer = loop.schedule(at: SystemClock().now + .milliseconds(milliseconds)) { [self] in
            timer = nil
            act(on: Self.timeoutSocket, events: 0)
        }
    }

    /// curl's CURL_SOCKET_TIMEOUT (CURL_SOCKET_BAD, a macro Swift does not import).
    private static let timeoutSocket: curl_socket_t = -1

    private func socketReady(_ socket: Int32, _ ready: UInt32) {
        var events: Int32 = 0
        if ready & EPOLLIN.rawValue != 0 { events |= CURL_CSELECT_IN }
        if ready & EPOLLOUT.rawValue != 0 { events |= CURL_CSELECT_OUT }
        if ready & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { events |= CURL_CSELECT_ERR }
        act(on: socket, events: events)
    }

    private func act(on socket: curl_socket_t, events: Int32) {
        var running: Int32 = 0
        _ = curl_multi_socket_action(multi, socket, events, &running)
        finishTransfers()
    }

    /// Hands each ended transfer's result on, frees its connection and
    /// starts the exchanges waiting for one.
    private func finishTransfers() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            // Read before the removal, which ends the message's life.
            let code = message.pointee.data.result
            var pointer: UnsafeMutableRawPointer?
            _ = txr_curl_getinfo_pointer(easy, CURLINFO_PRIVATE, &pointer)
            curl_multi_remove_handle(multi, easy)
            guard let pointer else { continue }
            let connection = Unmanaged<CurlConnection>.fromOpaque(pointer).takeUnretainedValue()
            let result = connection.result(code)
            let then = transfers.removeValue(forKey: ObjectIdentifier(connection))
            free.append(connection)
            then?(result)
        }
        startWaiting()
        cleanUpWhenIdle()
    }

    /// After a shutdown, once nothing is in flight: curl's handles and the
    /// loop's watches and timer go.
    private func cleanUpWhenIdle() {
        guard isShutDown, transfers.isEmpty, !isCleanedUp else { return }
        isCleanedUp = true
        timer?.cancel()
        timer = nil
        curl_multi_cleanup(multi)
        for socket in watched { loop.unwatch(socket) }
        watched = []
        free = []
        connections = []
    }
}
