import Testing
@testable import TxRecon

@Suite struct BooleanValueTests {
    @Test(arguments: ["yes", "true", "on", "1", "YES", "True"])
    func affirmativeWordsAreTrue(text: String) {
        #expect(BooleanValue.parse(text) == true)
    }

    @Test(arguments: ["no", "false", "off", "0", "No", "OFF"])
    func negativeWordsAreFalse(text: String) {
        #expect(BooleanValue.parse(text) == false)
    }

    @Test(arguments: ["", "y", "n", "2", "enabled", "yes please"])
    func otherWordsAreRefused(text: String) {
        #expect(BooleanValue.parse(text) == nil)
    }
}
