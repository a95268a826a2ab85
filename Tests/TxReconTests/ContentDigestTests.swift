// ContentDigestTests: a snapshot Apple signed afresh has the digest of the
// one before, a changed one does not, and intake records the digests of
// what it decodes (formats 1, 2 and 3) for the ledger.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct ContentDigestTests {
    @Test func aNewSignedDateAloneIsNoChange() {
        let first = TestJWS.transactionPayload(signedDate: 1_760_000_000_000)
        let again = first.merging([("signedDate", .integer(1_770_000_000_000))])
        #expect(ContentDigest.of(first) == ContentDigest.of(again))
        #expect(ContentDigest.of(TestJWS.renewalInfoPayload(signedDate: 1))
                == ContentDigest.of(TestJWS.renewalInfoPayload(signedDate: 2)))
    }

    @Test func theOrderOfMembersIsNoChange() {
        let payload = TestJWS.transactionPayload(extra: [("offer", .object([("a", .integer(1)), ("b", .integer(2))]))])
        guard case .object(let members) = payload else { Issue.record("not an object"); return }
        let reordered = JSONValue.object(members.reversed().map { name, value in
            guard name == "offer" else { return (name, value) }
            return (name, .object([("b", .integer(2)), ("a", .integer(1))]))
        })
        #expect(ContentDigest.of(payload) == ContentDigest.of(reordered))
    }

    @Test func anyOtherMemberChangedIsAChange() {
        let base = TestJWS.transactionPayload()
        let digests = [
            base,
            base.merging([("expiresDate", .integer(1_762_000_000_000))]),
            base.merging([("revocationDate", .integer(1_761_000_000_000))]),
            base.merging([("productId", .string("com.example.premium.yearly"))]),
            base.merging([("offer", .object([("signedDate", .integer(1))]))]),
            base.merging([("offer", .object([("signedDate", .integer(2))]))]),
        ].map(ContentDigest.of)
        #expect(Set(digests).count == digests.count, "a nested signedDate is content: only the top-level one is left out")
    }

    @Test func intakeRecordsTheDigestsOfWhatItDecodes() throws {
        let transaction = TestJWS.transactionPayload()
        let renewal = TestJWS.renewalInfoPayload()
        let transactionJWS = TestJWS.make(payload: transaction)
        let renewalJWS = TestJWS.make(payload: renewal)
        let decoder = InputDecoder()
        func fields(_ bytes: [UInt8]) throws -> ItemFields? {
            guard case .item(let item) = try decoder.decode(bytes) else { return nil }
            return item.fields
        }
        let bare = try fields(Array(transactionJWS.utf8))
        #expect(bare?.transactionDigest == ContentDigest.of(transaction))
        #expect(bare?.renewalDigest == nil)
        let upload = try fields(TestDrop.transactionUpload(transactionJWS, renewal: renewalJWS))
        #expect(upload?.transactionDigest == ContentDigest.of(transaction))
        #expect(upload?.renewalDigest == ContentDigest.of(renewal))
        let notification = TestJWS.notification(signedTransactionInfo: transactionJWS, signedRenewalInfo: renewalJWS)
        let notified = try fields(TestDrop.notificationBody(notification))
        #expect(notified?.transactionDigest == ContentDigest.of(transaction))
        #expect(notified?.renewalDigest == ContentDigest.of(renewal))
    }
}
