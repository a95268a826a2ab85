import Testing
@testable import TxRecon

@Suite struct MessageIDTests {
    @Test func everyMessageIDIsThirtyTwoLowercaseHexDigits() {
        for id in MessageID.all {
            #expect(id.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(id)")
        }
    }

    @Test func messageIDsAreDistinct() {
        #expect(Set(MessageID.all).count == MessageID.all.count)
    }
}
