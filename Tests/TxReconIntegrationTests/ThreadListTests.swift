// ThreadListTests: docs/threads.md lists every thread the daemon and the
// receiver run. Each is started for real; every name in /proc/PID/task/*/comm
// must be one the page's table for that program gives (`N` standing for a
// number); and the daemon's threads do not grow with MaxConcurrentDeliveries=.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct ThreadListTests {
    /// The backticked names of the first column of the table under the
    /// heading that starts with `heading`.
    static func documentedNames(under heading: String) throws -> [String] {
        let path = DaemonIntegrationTests.repositoryRoot + "/docs/threads.md"
        let text = String(decoding: try SystemCall.readFile(path, limit: 1 << 20), as: UTF8.self)
        var names: [String] = []
        var inSection = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("## ") { inSection = line.dropFirst(3).hasPrefix(heading) }
            guard inSection, line.hasPrefix("| "), let cell = line.dropFirst(2).split(separator: "|").first else { continue }
            let parts = cell.split(separator: "`", omittingEmptySubsequences: false)
            names += stride(from: 1, to: parts.count, by: 2).map { String(parts[$0]) }
        }
        return names
    }

    /// Whether `name` is `pattern`, with a trailing `N` for a number.
    static func matches(_ name: String, _ pattern: String) -> Bool {
        guard pattern.hasSuffix("N") else { return name == pattern }
        let prefix = pattern.dropLast()
        guard name.hasPrefix(prefix) else { return false }
        let number = name.dropFirst(prefix.count)
        return !number.isEmpty && number.allSatisfy(\.isNumber)
    }

    /// The comm of each of `pid`'s threads.
    static func threadNames(of pid: pid_t) throws -> [String] {
        try SystemCall.listDirectory("/proc/\(pid)/task").compactMap { task in
            (try? SystemCall.readFile("/proc/\(pid)/task/\(task)/comm", limit: 64))
                .map { String(decoding: $0.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self) }
        }
    }

    @Test func theMatcherTakesANumberForN() {
        #expect(Self.matches("txrecon-curl-12", "txrecon-curl-N") && Self.matches("txrecon-intake2", "txrecon-intakeN"))
        #expect(!Self.matches("txrecon-curl-", "txrecon-curl-N") && !Self.matches("txrecon-engine2", "txrecon-engine"))
    }

    /// The threads of a daemon started with `extraConfig` (and as many
    /// more destinations, each posting to the same server) once it has
    /// delivered three items.
    static func threadsOfADaemonThatDelivered(_ extraConfig: String = "",
                                              moreDestinations: Int = 0) async throws -> [String] {
        let fixture = try DaemonFixture(extraConfig: extraConfig)
        for index in 0..<moreDestinations {
            _ = fixture.directory.write("[Backend]\nURL=\(fixture.server.url)more\(index)\n\n\(extraConfig)\n",
                                        to: "destinations/more\(index).conf")
        }
        let daemon = try await fixture.start()
        for id in ["t-1", "t-2", "t-3"] { try fixture.drop(fixture.envelope(id, version: 1)) }
        // Each destination's copies: three requests each at the one server.
        #expect(fixture.server.waitForRequests(count: 3 * (1 + moreDestinations), timeout: .seconds(20)))
        return try threadNames(of: daemon.pid)
    }

    @Test func everyThreadOfARunningDaemonIsOnThePage() async throws {
        let documented = try Self.documentedNames(under: "txrecon run")
        #expect(documented.contains("txrecon-engine") && !documented.contains { $0.hasPrefix("txrecon-curl") })
        let names = try await Self.threadsOfADaemonThatDelivered()
        let unknown = names.filter { name in !documented.contains { Self.matches(name, $0) } }
        #expect(unknown.isEmpty, "not in docs/threads.md: \(unknown) (all: \(names.sorted()))")
        #expect(names.contains("txrecon-engine") && names.contains("txrecon-intake"))
    }

    /// The HTTP transport sends from the engine's event loop (libcurl's
    /// multi interface) and signals are read there too: more deliveries in
    /// flight or more destinations start no thread, and the daemon's own
    /// lasting threads are six besides the examiners (one per further core).
    @Test func moreConcurrentDeliveriesOrDestinationsStartNoThread() async throws {
        // Those that come and go: start-up's helpers, libdispatch's workers.
        func lasting(_ names: [String]) -> [String] {
            names.filter { $0.hasPrefix("txrecon") && $0 != "txrecon-index" && $0 != "txrecon-ledger-" }.sorted()
        }
        let few = lasting(try await Self.threadsOfADaemonThatDelivered("[Delivery]\nMaxConcurrentDeliveries=1"))
        let many = lasting(try await Self.threadsOfADaemonThatDelivered("[Delivery]\nMaxConcurrentDeliveries=32",
                                                                         moreDestinations: 3))
        #expect(few == many, "1 destination, 1 delivery at a time: \(few); 4 destinations, 32 each: \(many)")
        #expect(!many.isEmpty && !many.contains { $0.hasPrefix("txrecon-curl") })
        let own = many.filter { !Self.matches($0, "txrecon-intakeN") }
        #expect(own.count <= 6, "the daemon's own threads: \(own)")
    }

    @Test func everyThreadOfARunningReceiverIsOnThePage() async throws {
        let documented = try Self.documentedNames(under: "txrecon receive")
        let fixture = try ReceiverFixture()
        let receiver = try await fixture.start()
        let reply = try await fixture.post("/appstore/notifications", sample: "05-notification-test.json")
        #expect(reply.status == 200)
        let names = try Self.threadNames(of: receiver.pid)
        let unknown = names.filter { name in !documented.contains { Self.matches(name, $0) } }
        #expect(unknown.isEmpty, "not in docs/threads.md: \(unknown) (all: \(names.sorted()))")
        #expect(names.contains("txrecon-commit") && names.contains("MHD-listen"))
    }
}
