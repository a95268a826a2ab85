// ExaminerPool: a batch examined on several threads comes back exactly as one
// thread would have examined it, name for name and in order, verification
// included.
import Glibc
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct ExaminerPoolTests {
    let directory = TemporaryDirectory("txrecon-examiners")
    var layout: SpoolLayout { SpoolLayout(root: directory.path + "/spool") }

    /// new/ with `count` files named 0000, 0001, ... of every kind intake
    /// meets: a genuine test-PKI JWS, a JWS with another payload under its
    /// signature, an envelope (refused by a verifying decoder), a file that
    /// is not JSON, a symbolic link, and a name whose file is missing.
    func fill(_ count: Int) throws -> (Spool, [String]) {
        try layout.createMissingDirectories()
        let genuine = TestPKI.sign(payload: TestJWS.transactionPayload(transactionId: "2000000000000001"))
        let parts = genuine.split(separator: ".").map(String.init)
        let forgedPayload = TestJWS.transactionPayload(transactionId: "2000000000000002").serialized
        let forged = parts[0] + "." + TestJWS.base64URL(forgedPayload) + "." + parts[2]
        var names: [String] = []
        for index in 0..<count {
            let name = String(format: "%04d", index)
            names.append(name)
            let path = layout.new + "/" + name
            switch index % 6 {
            case 0: try SystemCall.writeNewFile(path, Array(genuine.utf8), sync: false)
            case 1: try SystemCall.writeNewFile(path, Array(forged.utf8), sync: false)
            case 2: try SystemCall.writeNewFile(path, TestDrop.envelope(id: "e\(index)", version: 1, payload: .object([])),
                                                sync: false)
            case 3: try SystemCall.writeNewFile(path, Array("not json".utf8), sync: false)
            case 4: #expect(symlink(layout.root + "/elsewhere", path) == 0)
            default: break
            }
        }
        return (Spool(layout: layout), names)
    }

    @Test(arguments: [0, 1, 3])
    func aSplitBatchComesBackAsOneThreadExaminesItInOrder(helpers: Int) throws {
        let (spool, names) = try fill(256)
        let policy = try VerificationFixtures.testPolicy()
        let decoder = InputDecoder(acceptEnvelopes: false)
        let verifier = SignedDataVerifier(policy: policy)
        let alone = names.map {
            DropExamination.examine($0, in: spool, maximumSize: 1 << 20, decoder: decoder, verifier: verifier,
                                    receipts: Self.receipts(spool))
        }
        // One thread's verdicts: every genuine JWS decoded, every forged
        // one refused, so a part examined without the policy would differ.
        #expect(alone.filter { if case .decoded = $0 { true } else { false } }.count == 43)
        let refused = alone.compactMap { if case let .undecodable(rejection, _) = $0 { rejection.code } else { nil } }
        #expect(refused.filter { $0 == "invalid-signature" }.count == 43)
        let pool = try ExaminerPool(helpers: helpers)
        defer { pool.close() }
        // Around the part boundaries: none, one, below and at the minimum
        // part, and lengths that do not divide evenly.
        for count in [0, 1, 7, 8, 15, 16, 17, 23, 24, 25, 33, 100, 256] {
            let examined = pool.examine(names[..<count], in: spool, maximumSize: 1 << 20, decoder: decoder,
                                        policy: policy, verifier: verifier, receipts: Self.receipts(spool))
            #expect(examined.map(summary) == alone[..<count].map(summary), "\(count) names, \(helpers) helpers")
            let identical = examined == Array(alone[..<count])
            #expect(identical, "\(count) names, \(helpers) helpers: items or rejections differ beyond the summary")
        }
    }

    @Test func aClosedPoolStillExaminesEveryNameOnTheCallersThread() throws {
        let (spool, names) = try fill(64)
        let decoder = InputDecoder(acceptEnvelopes: true)
        let pool = try ExaminerPool(helpers: 2)
        pool.close()
        let examined = pool.examine(names[...], in: spool, maximumSize: 1 << 20, decoder: decoder, policy: nil,
                                    verifier: nil, receipts: Self.receipts(spool))
        let alone = names.map {
            DropExamination.examine($0, in: spool, maximumSize: 1 << 20, decoder: decoder, verifier: nil,
                                    receipts: Self.receipts(spool))
        }
        #expect(examined.map(summary) == alone.map(summary))
    }

    static func receipts(_ spool: Spool) -> ReceiptLibrary { ReceiptLibrary(store: ReceiptStore(layout: spool.layout)) }

    /// One line per examination, short enough to read in a failed expectation.
    func summary(_ examination: DropExamination) -> String {
        switch examination {
        case .gone: "gone"
        case let .refused(rejection): "refused \(rejection.code)"
        case let .decoded(.item(item), modifiedAt, _, _): "item \(item.key) \(item.version) \(modifiedAt)"
        case let .decoded(.page(transactions), modifiedAt, _, _): "page of \(transactions.count) \(modifiedAt)"
        case let .decoded(.receipt(split), modifiedAt, _, _): "receipt of \(split.purchases.count) \(modifiedAt)"
        case let .undecodable(rejection, modifiedAt): "undecodable \(rejection.code) \(modifiedAt)"
        case let .failed(error): "failed \(error)"
        }
    }
}
