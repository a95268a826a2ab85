// An opt-in measurement, not a timed test: it asserts nothing about speed
// and runs only with TXRECON_BENCH=1, best in a release build:
//
//   TXRECON_BENCH=1 swift test -c release --filter VerificationBenchmark
//
// It prints the cost of one ES256 check with a leaf key, and of verifying one
// real Apple transaction once its chain is cached (parse, cache look-up,
// signature, claims), and their ratio; then the decoding alone, with the
// header parsed and with it taken from the verifier's known headers, beside
// an envelope's. docs/verification.md "Cost" quotes it.
import Glibc
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite(.enabled(if: getenv("TXRECON_BENCH") != nil, "set TXRECON_BENCH=1 to measure"))
struct VerificationBenchmark {
    static let rounds = 20_000

    /// CPU microseconds of this thread per call of `body`, the best of three
    /// runs of `rounds` calls. CPU time rather than wall time, so that other
    /// work on a shared machine does not count.
    static func microseconds(rounds: Int = rounds, _ body: () -> Void) -> Double {
        func cpuSeconds() -> Double {
            var now = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
            return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        }
        var best = Double.infinity
        for _ in 0..<3 {
            let start = cpuSeconds()
            for _ in 0..<rounds { body() }
            best = min(best, (cpuSeconds() - start) * 1e6 / Double(rounds))
        }
        return best
    }

    @Test func verificationOfACachedChainCostsAboutOneSignatureCheck() throws {
        let sample = AppStoreSamples.named("sessionpro__signedTransactionInfo_AutoRenewableSubscription__sandbox__20251001__2e2da401ed58.jws")
        let text = String(decoding: sample.bytes, as: UTF8.self).trimmingSuffixNewline
        let jws = try CompactJWS(compact: text)
        let item = try #require(decodeItem(sample.bytes))
        let verifier = SignedDataVerifier(policy: SignedDataPolicy(
            roots: try VerificationFixtures.appleRoots(), bundleID: "com.loki-project.loki-messenger", appAppleID: nil,
            environments: [.sandbox]))
        try verifier.verify(item)

        let x5c = (jws.header["x5c"]?.arrayValue ?? []).compactMap { $0.stringValue }
        let signedDate = try #require(jws.payload["signedDate"]?.int64Value)
        let validator = ChainValidator(roots: try VerificationFixtures.appleRoots())
        let chain = try validator.validate(x5c: x5c, at: signedDate / 1000)
        var valid = true
        let signature = Self.microseconds { valid = valid && chain.leafKey.isValidSignature(jws.signature, of: jws.signingInput) }
        let cached = Self.microseconds { valid = valid && (try? verifier.verify(item)) != nil }
        let decoder = InputDecoder(acceptEnvelopes: false)
        let intake = Self.microseconds {
            valid = valid && (try? decoder.decode(sample.bytes, verifyingWith: verifier)) != nil
        }
        let parse = Self.microseconds { valid = valid && (try? CompactJWS(compact: text)) != nil }
        let decode = Self.microseconds { valid = valid && (try? decoder.decode(sample.bytes)) != nil }
        let decodeKnown = Self.microseconds {
            var parsed = ParsedSignedStrings(knownHeaders: verifier.knownHeaders)
            valid = valid && (try? decoder.decode(sample.bytes, parsed: &parsed)) != nil
        }
        let envelope = Array(#"{"id":"k-0000001","version":1,"payload":{"n":1}}"#.utf8)
        let envelopes = InputDecoder(acceptEnvelopes: true)
        let envelopeDecode = Self.microseconds { valid = valid && (try? envelopes.decode(envelope)) != nil }
        let uncachedVerifier = SignedDataVerifier(policy: verifier.policy, chainCacheCapacity: 0)
        let uncached = Self.microseconds(rounds: Self.rounds / 20) { valid = valid && (try? uncachedVerifier.verify(item)) != nil }
        #expect(valid)
        print("""
            verification of one real Apple transaction (CPU time, best of 3 runs):
              one ES256 check with the leaf key  \(Self.format(signature)) µs  (\(Int(1e6 / signature))/s)
              verify, chain cached               \(Self.format(cached)) µs  (\(Int(1e6 / cached))/s) = \(Self.format(cached / signature)) ES256 checks
              decode + verify, chain cached      \(Self.format(intake)) µs  (\(Int(1e6 / intake))/s)
              decode alone, header parsed        \(Self.format(decode)) µs  (of which the JWS \(Self.format(parse)) µs)
              decode alone, header known         \(Self.format(decodeKnown)) µs  (intake's, once the chain is cached)
              decode an envelope                 \(Self.format(envelopeDecode)) µs
              verify, no cache                   \(Self.format(uncached)) µs  (\(Int(1e6 / uncached))/s)
            """)
    }

    @Test func aReceiptOfOnePurchaseCostsAboutOneRSACheck() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: [TestReceipt.Purchase(transactionId: "1000000000000001")]))
        let upload = TestReceipt.upload(receipt)
        let verifier = SignedDataVerifier(policy: SignedDataPolicy(
            roots: try VerificationFixtures.appleRoots(), bundleID: "com.example.app", appAppleID: nil,
            environments: [.sandbox], receiptRoots: try RootCertificate.read(TestReceipt.path("root"))))
        let decoder = InputDecoder(acceptEnvelopes: false)
        var valid = (try? decoder.decode(upload, verifyingWith: verifier)) != nil
        let rounds = Self.rounds / 4
        let decode = Self.microseconds(rounds: rounds) { valid = valid && (try? decoder.decode(upload)) != nil }
        let intake = Self.microseconds(rounds: rounds) {
            valid = valid && (try? decoder.decode(upload, verifyingWith: verifier)) != nil
        }
        let parsed = try AppReceipt(der: receipt)
        let receipts = ReceiptVerifier(roots: try RootCertificate.read(TestReceipt.path("root")))
        let signature = Self.microseconds(rounds: rounds) {
            valid = valid && (try? receipts.verify(der: receipt, receipt: parsed, at: parsed.creationDate!)) != nil
        }
        #expect(valid)
        print("""
            one StoreKit 1 upload of one purchase, test PKI (RSA-2048; CPU time, best of 3 runs):
              decode                             \(Self.format(decode)) µs
              receipt check, signer cached       \(Self.format(signature)) µs
              decode + verify                    \(Self.format(intake)) µs  (\(Int(1e6 / intake))/s)
            """)
    }

    static func format(_ value: Double) -> String {
        String(Double(Int(value * 10)) / 10)
    }
}
