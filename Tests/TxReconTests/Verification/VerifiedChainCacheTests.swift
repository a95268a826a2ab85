import Testing
import TxReconTestSupport
@testable import TxRecon

/// The verified-chain cache saves work and never changes a verdict.
@Suite struct VerifiedChainCacheTests {
    /// Valid data and forgeries sharing the valid chain, in an order that
    /// puts the chain in the cache before each forgery is judged.
    static func mixedDrops() -> [[UInt8]] {
        let valid = SignedDataVerifierTests.transaction()
        let tampered = SignedDataVerifierTests.replacing(
            segment: 1, of: valid, with: TestJWS.base64URL(TestJWS.transactionPayload(transactionId: "7").serialized))
        let texts = [
            valid,
            SignedDataVerifierTests.transaction(signedDate: TestPKI.afterLeafValidity),
            SignedDataVerifierTests.transaction(signedDate: TestPKI.beforeLeafValidity),
            tampered,
            SignedDataVerifierTests.transaction(bundleId: "com.other"),
            SignedDataVerifierTests.transaction(environment: "Production"),
            SignedDataVerifierTests.transaction(chain: ["leaf-no-oid", "intermediate", "root"]),
            SignedDataVerifierTests.transaction(chain: ["leaf-under-lookalike", "lookalike-intermediate", "lookalike-root"]),
            SignedDataVerifierTests.transaction(chain: ["leaf-under-intermediate-no-oid", "intermediate-no-oid", "root"]),
            SignedDataVerifierTests.transaction(signedDate: TestPKI.insideLeafValidity + 1),
            TestPKI.sign(payload: TestJWS.notificationPayload(signedTransactionInfo: tampered)),
            TestPKI.sign(payload: TestJWS.notificationPayload(signedTransactionInfo: valid)),
            // The cached chain under headers that must not pass: the cache is
            // keyed by the whole header, not by its x5c.
            TestPKI.sign(header: TestPKI.header(alg: "ES384"), payload: TestJWS.transactionPayload()),
            TestPKI.sign(header: .object([("alg", .string("ES256")), ("x5c", TestPKI.x5c(TestPKI.validChain)),
                                          ("crit", .array([.string("exp")]))]),
                         payload: TestJWS.transactionPayload()),
        ]
        return texts.map { Array($0.utf8) }
    }

    @Test func theVerdictIsTheSameWithAndWithoutTheCache() throws {
        let policy = try VerificationFixtures.testPolicy()
        let cached = SignedDataVerifier(policy: policy)
        let uncached = SignedDataVerifier(policy: policy, chainCacheCapacity: 0)
        let drops = Self.mixedDrops()
        // Twice through the cached verifier: the second round judges everything with the chain cached.
        let first = drops.map { intakeVerdict($0, cached) }
        let second = drops.map { intakeVerdict($0, cached) }
        let fresh = drops.map { intakeVerdict($0, uncached) }
        #expect(first == fresh)
        #expect(second == fresh)
        #expect(fresh.filter { $0 == nil }.count == 3)
        #expect(cached.cachedChainCount == 1)
        #expect(uncached.cachedChainCount == 0)
    }

    @Test func manyTransactionsSignedByOneLeafShareOneCachedChain() throws {
        let verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy())
        for index in 0..<20 {
            let jws = TestPKI.sign(payload: TestJWS.transactionPayload(transactionId: "20000000000000\(10 + index)"))
            #expect(intakeVerdict(jws, verifier) == nil)
        }
        #expect(verifier.cachedChainCount == 1)
    }

    @Test func aCachedChainIsJudgedAfreshOutsideItsValidity() throws {
        let verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy())
        #expect(intakeVerdict(SignedDataVerifierTests.transaction(), verifier) == nil)
        #expect(verifier.cachedChainCount == 1)
        let expired = intakeVerdict(SignedDataVerifierTests.transaction(signedDate: TestPKI.afterLeafValidity), verifier)
        #expect(expired?.code == "invalid-chain")
    }

    @Test func failedChainsAreNotCached() throws {
        let verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy())
        _ = intakeVerdict(SignedDataVerifierTests.transaction(chain: ["leaf-no-oid", "intermediate", "root"]), verifier)
        _ = intakeVerdict(SignedDataVerifierTests.transaction(signedDate: TestPKI.afterLeafValidity), verifier)
        #expect(verifier.cachedChainCount == 0)
    }

    @Test func theCachedChainUnderAnotherAlgOrWithCritIsRefused() throws {
        let verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy())
        #expect(intakeVerdict(SignedDataVerifierTests.transaction(), verifier) == nil)
        let otherAlg = TestPKI.sign(header: TestPKI.header(alg: "ES384"), payload: TestJWS.transactionPayload())
        #expect(intakeVerdict(otherAlg, verifier)?.code == "unsupported-alg")
        let crit = TestPKI.sign(header: .object([("alg", .string("ES256")), ("x5c", TestPKI.x5c(TestPKI.validChain)),
                                                 ("crit", .array([.string("exp")]))]),
                                payload: TestJWS.transactionPayload())
        #expect(intakeVerdict(crit, verifier)?.code == "malformed-jws")
        #expect(verifier.cachedChainCount == 1)
    }

    /// The encoded header of `jws`, as a buffer for `KnownJOSEHeaders.index(of:)`.
    static func isKnown(_ jws: String, in known: KnownJOSEHeaders) -> Bool {
        Array(jws.split(separator: ".")[0].utf8).withUnsafeBufferPointer { known.index(of: $0) != nil }
    }

    @Test func theVerifierOffersTheHeaderOfAVerifiedChainToTheDecoder() throws {
        let verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy())
        let jws = SignedDataVerifierTests.transaction()
        #expect(!Self.isKnown(jws, in: verifier.knownHeaders))
        #expect(intakeVerdict(jws, verifier) == nil)
        #expect(Self.isKnown(jws, in: verifier.knownHeaders))
    }

    @Test func aForgeryUnderAHeaderOfItsOwnNeverEntersTheCache() throws {
        // Apple's x5c copied into a header of the forger's making (one
        // member more), a payload of theirs, someone else's signature.
        let verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy())
        let header = JSONValue.object([("alg", .string("ES256")), ("x5c", TestPKI.x5c(TestPKI.validChain)),
                                       ("kid", .string("forged"))])
        let signed = TestPKI.sign(header: header, payload: TestJWS.transactionPayload())
        let stolen = String(SignedDataVerifierTests.transaction().split(separator: ".")[2])
        let forged = SignedDataVerifierTests.replacing(segment: 2, of: signed, with: stolen)
        #expect(intakeVerdict(forged, verifier)?.code == "invalid-signature")
        #expect(verifier.cachedChainCount == 0 && !Self.isKnown(forged, in: verifier.knownHeaders))
        // The same header, signed by the leaf, does enter.
        #expect(intakeVerdict(signed, verifier) == nil)
        #expect(verifier.cachedChainCount == 1 && Self.isKnown(signed, in: verifier.knownHeaders))
    }

    @Test func everyInputFormatTakesTheParseOfAKnownHeader() throws {
        // A marker no parse gives, under the header every TestPKI JWS has.
        let marker = JSONValue.object([("marker", .bool(true))])
        var known = KnownJOSEHeaders()
        let transaction = SignedDataVerifierTests.transaction()
        known.append(Array(transaction.split(separator: ".")[0].utf8), parsedAs: marker)
        let renewal = TestPKI.sign(payload: TestJWS.renewalInfoPayload())
        let notification = TestPKI.sign(payload: TestJWS.notificationPayload(signedTransactionInfo: transaction,
                                                                              signedRenewalInfo: renewal))
        let drops: [(String, [UInt8], [String])] = [
            ("format 1", Array(transaction.utf8), ["signedTransactionInfo"]),
            ("format 2", TestDrop.notificationBody(notification),
             ["signedPayload", "signedTransactionInfo", "signedRenewalInfo"]),
            ("format 3", TestDrop.transactionUpload(transaction, renewal: renewal),
             ["signedTransactionInfo", "signedRenewalInfo"]),
        ]
        for (format, bytes, names) in drops {
            var parsed = ParsedSignedStrings(knownHeaders: known)
            guard case .item(let item) = try InputDecoder().decode(bytes, parsed: &parsed) else {
                Issue.record("\(format) is not an item")
                continue
            }
            for name in names {
                let text = item.signedStrings.first { $0.name == name }?.value ?? ""
                #expect(parsed.jws(named: name, text: text)?.header == marker, "\(format): \(name)")
            }
        }
    }

    @Test func aKnownHeaderIsTakenOnlyWhenSpelledByteForByte() throws {
        let jws = SignedDataVerifierTests.transaction()
        let encoded = Array(jws.split(separator: ".")[0].utf8)
        var known = KnownJOSEHeaders()
        // A marker no parse of these bytes gives: seeing it proves the reuse.
        let marker = JSONValue.object([("marker", .bool(true))])
        known.append(encoded, parsedAs: marker)
        #expect(try CompactJWS(compact: jws, knownHeaders: known).header == marker)
        // One character more (the same JSON with a space) is another header.
        let spaced = TestJWS.base64URL(Array((TestPKI.header().serializedString + " ").utf8))
        let other = SignedDataVerifierTests.replacing(segment: 0, of: jws, with: spaced)
        #expect(try CompactJWS(compact: other, knownHeaders: known).header == TestPKI.header())
        // A known header does not excuse the rest of the structure.
        let broken = SignedDataVerifierTests.replacing(segment: 1, of: jws, with: "e30=")
        #expect(throws: JWSError.self) { try CompactJWS(compact: broken, knownHeaders: known) }
    }

    @Test func aFullCacheIsEmptiedBeforeANewChainGoesIn() throws {
        let verifier = SignedDataVerifier(policy: try VerificationFixtures.testPolicy(), chainCacheCapacity: 1)
        #expect(intakeVerdict(SignedDataVerifierTests.transaction(), verifier) == nil)
        // The same leaf and intermediate with another (ignored) third entry is another key.
        let first = SignedDataVerifierTests.transaction()
        let other = SignedDataVerifierTests.transaction(chain: ["leaf", "intermediate", "lookalike-root"])
        #expect(intakeVerdict(other, verifier) == nil)
        #expect(verifier.cachedChainCount == 1)
        #expect(Self.isKnown(other, in: verifier.knownHeaders) && !Self.isKnown(first, in: verifier.knownHeaders))
    }
}
