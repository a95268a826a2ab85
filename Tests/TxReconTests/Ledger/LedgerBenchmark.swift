// An opt-in measurement, not a timed test: it asserts nothing about speed
// and runs only with TXRECON_BENCH=1, in a release build:
//
//   TXRECON_BENCH=1 swift test -c release --filter LedgerBenchmark
//
// It builds (once: kept at TXRECON_LEDGER_BENCH_FILE, default
// /tmp/txrecon-ledger-bench.sqlite3) a ledger of TXRECON_LEDGER_BENCH_ROWS
// rows (default 10,000,000) shaped like a real app's, about three
// transactions per subscription, then prints what issue 42 sets goals for:
// a fresh drop's supersede check (intake's look-up, for a key the ledger
// holds and one it does not; median and 99th percentile of single calls;
// with the ledger's pages out of the OS page cache, then with them in it),
// `history --original-transaction-id`'s query, the ledger's bytes per key,
// and how long the writer takes per confirmation in batches. bench.py's
// ledger rows run it and quote its lines ("ledger-bench: …").
import Glibc
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite(.enabled(if: getenv("TXRECON_BENCH") != nil, "set TXRECON_BENCH=1 to measure"))
struct LedgerBenchmark {
    static let path = getenv("TXRECON_LEDGER_BENCH_FILE").map { String(cString: $0) }
        ?? "/tmp/txrecon-ledger-bench.sqlite3"
    static let rows = getenv("TXRECON_LEDGER_BENCH_ROWS").flatMap { Int(String(cString: $0)) } ?? 10_000_000

    /// Row `index`'s confirmation: keys like Apple's transaction ids, three
    /// per original transaction, one product of ten, a token for half.
    static func record(_ index: Int) -> LedgerRecord {
        let key = String(2_000_000_000_000_000 + index)
        let original = String(2_000_000_000_000_000 + index - index % 3)
        return LedgerRecord(
            destination: "backend", key: ItemKey(key)!, version: ItemVersion(primary: 1_760_000_000_000 + Int64(index)),
            confirmedAt: 1_760_000_000_000 + Int64(index) * 10, attempt: 1,
            confirmation: "HTTP 200", kind: .transaction,
            identity: LedgerRecord.Identity(
                transactionId: key, originalTransactionId: original, appTransactionId: String(704_000_000_000_000 + index / 3),
                appAccountToken: index % 2 == 0 ? "7c1e2d3a-0000-4000-8000-\(String(index / 3, radix: 16))" : nil,
                productId: "com.example.product.\(index % 10)", bundleId: "com.example.app", environment: "Production",
                expiresDate: 1_762_000_000_000 + Int64(index), webOrderLineItemId: String(2_000_000_100_000_000 + index)))
    }

    static func seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// CPU seconds of this thread.
    static func cpuSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    static func percentile(_ values: [Double], _ share: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * share))]
    }

    @Test func theSupersedeCheckHistoryAndSizeAtTenMillionRows() throws {
        let ledger = try SQLiteLedger(path: Self.path)
        var have = try ledger.statistics().rows
        if have < Self.rows {
            print("ledger-bench: building \(Self.rows) rows at \(Self.path) (once; it is kept)")
            let started = Self.seconds()
            let batch = 10_000
            var index = Int(have)
            while index < Self.rows {
                let end = min(Self.rows, index + batch)
                try ledger.record((index..<end).map(Self.record), replacingEqual: true)
                index = end
            }
            let spent = Self.seconds() - started
            print("ledger-bench: writer: \(Self.rows - Int(have)) confirmations in batches of \(batch): "
                  + "\(Int(spent * 1e6 / Double(Self.rows - Int(have)) * 10) / 10) µs each")
            have = try ledger.statistics().rows
        }
        let statistics = try ledger.statistics()
        print("ledger-bench: \(statistics.rows) rows, \(statistics.bytes) bytes, "
              + "\(statistics.bytes / max(1, statistics.rows)) bytes per key")

        // Intake's look-up: the service's reader connection, as a fresh drop
        // of a key the ledger holds, and of one it does not.
        let service = LedgerService(settings: LedgerService.Settings(
            path: Self.path, retention: .seconds(100 * 365 * 86_400), destinations: [],
            reader: StoredItemReader(acceptEnvelopes: true, policy: nil,
                                     receipts: ReceiptLibrary(store: ReceiptStore(layout: SpoolLayout(root: "/nonexistent")))), maximumFileSize: 1 << 20),
                                    log: RecordingLogSink())
        try service.start()
        service.flush()
        defer { service.stop() }
        let building = Self.seconds()
        try #require(service.waitForKeyFilter(timeout: .seconds(600)), "the key filter was never built")
        print("ledger-bench: the key filter of \(statistics.rows) keys built in \(Self.format(Self.seconds() - building)) s "
              + "(after the open)")
        var generator = SeededGenerator(seed: 42)
        // First with the ledger's pages out of the OS page cache, as a
        // ledger larger than the memory caching it meets an old key (its
        // leaf is read from disk: the disk's latency), then with the file
        // read once, as a ledger the page cache holds.
        for cache in ["cold", "warm"] {
            if cache == "cold" {
                Self.evictFromPageCache()
            } else {
                let started = Self.seconds()
                let bytes = Self.readThrough()
                print("ledger-bench: read the ledger's \(bytes) bytes into the page cache in "
                      + "\(Self.format(Self.seconds() - started)) s")
            }
            for (label, offset) in [("held", 0), ("not held", Self.rows)] {
                var samples: [Double] = []
                var found = 0
                for _ in 0..<50_000 {
                    let index = Int.random(in: 0..<Self.rows, using: &generator) + offset
                    let key = ItemKey(String(2_000_000_000_000_000 + index))!
                    let start = Self.seconds()
                    if service.confirmedVersion(at: "backend", of: key) != nil { found += 1 }
                    samples.append((Self.seconds() - start) * 1e6)
                }
                print("ledger-bench: supersede check, page cache \(cache), a key \(label): "
                      + "median \(Self.format(Self.percentile(samples, 0.5))) µs, "
                      + "p99 \(Self.format(Self.percentile(samples, 0.99))) µs (\(found) of 50000 found)")
            }
        }
        // What a drain pays: the writer's CPU per confirmation of an envelope
        // (no identity: the partial indexes skip it), in batches of 100, on
        // a fresh ledger and on this one; and intake's look-up of a fresh key
        // in CPU time.
        let fresh = Self.path + ".fresh"
        for file in [fresh, fresh + "-wal", fresh + "-shm"] { unlink(file) }
        for (label, target, batchSize) in [("a fresh ledger", fresh, 100), ("a fresh ledger", fresh, 2000),
                                           ("this ledger", Self.path, 2000)] {
            let writer = try SQLiteLedger(path: target)
            let count = 200_000
            let base = 3_000_000_000_000_000 + Int(Self.seconds() * 1000) % 1_000_000 * 1_000_000
            let records = (0..<count).map { index in
                LedgerRecord(destination: "backend", key: ItemKey("d\(base + index)")!, version: ItemVersion(primary: 1),
                             confirmedAt: 1_760_000_000_000 + Int64(index), attempt: 1,
                             confirmation: "HTTP 200", kind: .envelope,
                             identity: LedgerRecord.Identity())
            }
            let start = Self.cpuSeconds()
            for batch in stride(from: 0, to: count, by: batchSize) {
                try writer.record(Array(records[batch..<min(count, batch + batchSize)]), replacingEqual: true)
            }
            let spent = Self.cpuSeconds() - start
            print("ledger-bench: writer, envelopes in batches of \(batchSize) on \(label): "
                  + "\(Self.format(spent * 1e6 / Double(count))) µs of CPU each")
        }
        let lookups = 100_000
        let lookupStart = Self.cpuSeconds()
        for index in 0..<lookups { _ = service.confirmedVersion(at: "backend", of: ItemKey("fresh-\(index)")!) }
        print("ledger-bench: intake's look-up of a fresh key: "
              + "\(Self.format((Self.cpuSeconds() - lookupStart) * 1e6 / Double(lookups))) µs of CPU each")
        for file in [fresh, fresh + "-wal", fresh + "-shm"] { unlink(file) }

        var queries: [Double] = []
        for _ in 0..<200 {
            let index = Int.random(in: 0..<Self.rows, using: &generator)
            let original = String(2_000_000_000_000_000 + index - index % 3)
            let start = Self.seconds()
            let found = try ledger.history(LedgerQuery(originalTransactionId: original))
            queries.append((Self.seconds() - start) * 1e3)
            #expect(!found.isEmpty)
        }
        print("ledger-bench: history --original-transaction-id: median \(Self.format(Self.percentile(queries, 0.5))) ms, "
              + "p99 \(Self.format(Self.percentile(queries, 0.99))) ms")
    }

    /// Drops the ledger's clean pages from the OS page cache (its own
    /// files only, written back first).
    static func evictFromPageCache() {
        for file in [path, path + "-wal"] {
            let descriptor = open(file, O_RDONLY)
            guard descriptor >= 0 else { continue }
            fsync(descriptor)
            _ = posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED)
            close(descriptor)
        }
    }

    /// Reads the ledger's files once, which leaves them in the page cache;
    /// returns the bytes read.
    static func readThrough() -> Int {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var total = 0
        for file in [path, path + "-wal"] {
            let descriptor = open(file, O_RDONLY)
            guard descriptor >= 0 else { continue }
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                total += count
            }
            close(descriptor)
        }
        return total
    }

    static func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return String(rounded)
    }
}
