// The built `txrecon lookup` against the App Store Server API stand-in (Look
// Up Order ID, Get Transaction Info; answers signed afresh with the test
// PKI), on a spool whose ledger the real daemon wrote.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct LookupIntegrationTests {
    /// A fixture whose daemon delivered transaction 3900 of the order
    /// MQ8B2K1ZX2 and then stopped; Apple knows 3900 and 3901 in that order.
    private static func fixture() async throws -> ReconcileFixture {
        let fixture = try ReconcileFixture()
        try await fixture.daemon.start()
        let delivered = ReconcileFixture.transaction("3900", original: "3900", customer: "7200", expiresIn: 86_400_000)
        try await fixture.deliver(delivered, renewal: nil)
        fixture.stopDaemon()
        fixture.api.setOrder("MQ8B2K1ZX2", transactions: [
            delivered,
            ReconcileFixture.transaction("3901", original: "3901", customer: "7200", expiresIn: 86_400_000),
        ])
        return fixture
    }

    @Test func anOrderIsPrintedWithWhatEachDestinationConfirmedAndDeliverSpoolsOnlyWhatIsMissing() async throws {
        let fixture = try await Self.fixture()
        let lookup = try await fixture.daemon.cli(["lookup", "MQ8B2K1ZX2"])
        #expect(lookup.status == 0, "stderr: \(lookup.stderr)")
        let blocks = lookup.stdout.components(separatedBy: "\ntransaction ")
        #expect(blocks.first?.hasPrefix("order MQ8B2K1ZX2 (Sandbox): 2 transactions") == true, "\(lookup.stdout)")
        let delivered = try #require(blocks.first { $0.hasPrefix("3900 ") })
        #expect(delivered.contains("confirmed: backend version") && delivered.contains("(HTTP 200, attempt 1)"))
        #expect(delivered.contains("Apple now: the same as confirmed"))
        let missing = try #require(blocks.first { $0.hasPrefix("3901 ") })
        #expect(missing.contains("confirmed: no destination") && missing.contains("Apple now: differs"))
        #expect(fixture.daemon.names("new").isEmpty, "a look-up alone spools nothing")

        let deliver = try await fixture.daemon.cli(["lookup", "--deliver", "MQ8B2K1ZX2"])
        #expect(deliver.status == 0, "stderr: \(deliver.stderr)")
        #expect(try fixture.spooledTransactions() == ["3901"])
        #expect(fixture.api.problems == [])
    }

    @Test func anOrderAppleDoesNotKnowIsSaidAndExits1() async throws {
        let fixture = try await Self.fixture()
        let lookup = try await fixture.daemon.cli(["lookup", "NOSUCHORDER"])
        #expect(lookup.status == 1)
        #expect(lookup.stderr.contains("Apple does not know the order id NOSUCHORDER (Sandbox)"), "\(lookup.stderr)")
        #expect(lookup.stdout.isEmpty)
    }

    @Test func aTransactionIdIsLookedUpThroughGetTransactionInfo() async throws {
        let fixture = try await Self.fixture()
        let lookup = try await fixture.daemon.cli(["lookup", "--transaction-id", "3900"])
        #expect(lookup.status == 0, "stderr: \(lookup.stderr)")
        #expect(lookup.stdout.hasPrefix("transaction 3900  original 3900"), "\(lookup.stdout)")
        #expect(lookup.stdout.contains("Apple now: the same as confirmed"))
        let unknown = try await fixture.daemon.cli(["lookup", "--transaction-id", "4999"])
        #expect(unknown.status == 1 && unknown.stderr.contains("Apple does not know the transaction id 4999"),
                "\(unknown.stderr)")
    }

    @Test func aForgedTransactionInTheAnswerIsNeitherPrintedNorSpooled() async throws {
        let fixture = try await Self.fixture()
        // 200 with a transaction whose payload was altered under its signature.
        let genuine = TestPKI.sign(payload: ReconcileFixture.transaction("3902", original: "3902", customer: "7200",
                                                                         expiresIn: 86_400_000))
        let parts = genuine.split(separator: ".").map(String.init)
        let altered = ReconcileFixture.transaction("3903", original: "3902", customer: "7200", expiresIn: 86_400_000)
        let forged = parts[0] + "." + TestJWS.base64URL(altered.serialized) + "." + parts[2]
        fixture.api.inject(.success(body: #"{"status":0,"signedTransactions":["\#(forged)"]}"#))
        let lookup = try await fixture.daemon.cli(["lookup", "--deliver", "MQ8B2K1ZX2"])
        #expect(lookup.status == 1)
        #expect(lookup.stderr.contains("invalid-signature"), "\(lookup.stderr)")
        #expect(!lookup.stdout.contains("transaction 3903") && fixture.daemon.names("new").isEmpty)
    }
}
