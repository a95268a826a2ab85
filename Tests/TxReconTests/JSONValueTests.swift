import Testing
@testable import TxRecon

@Suite struct JSONValueTests {
    @Test func numbersKeepTheirExactText() throws {
        let value = try JSONValue.parse(#"{"a": 2000000123456789012, "b": 1.50}"#)
        #expect(value["a"] == .number("2000000123456789012"))
        #expect(value["b"] == .number("1.50"))
        #expect(value.serializedString == #"{"a":2000000123456789012,"b":1.50}"#)
    }

    @Test func theRangeOfATopLevelMemberIsItsValuesText() throws {
        let text = Array(#"{"a": {"payload": 1}, "payload" : [ 1, "x" ] , "z": 2}"#.utf8)
        let (value, range) = try JSONValue.parse(text, findingMember: "payload")
        #expect(value == (try JSONValue.parse(text)))
        let found = try #require(range)
        #expect(String(decoding: text[found], as: UTF8.self) == #"[ 1, "x" ]"#)
        // Only the top level: a nested member of that name is not it.
        #expect(try JSONValue.parse(Array(#"{"a": {"payload": 1}}"#.utf8), findingMember: "payload").1 == nil)
        #expect(try JSONValue.parse(Array("[1]".utf8), findingMember: "payload").1 == nil)
    }

    @Test func duplicateKeysAreRefused() {
        #expect(throws: JSONError.self) { try JSONValue.parse(#"{"a":1,"a":2}"#) }
    }

    @Test func duplicateKeysAreFoundInObjectsOfEverySize() throws {
        // Small objects are checked key by key, larger ones through a set
        // (from 32 keys on): a duplicate of any earlier key, before and after.
        for count in 1...70 {
            let keys = (0..<count).map { "k\($0)" }
            let members = keys.map { "\"\($0)\":0" }
            let object = "{" + members.joined(separator: ",") + "}"
            #expect(try JSONValue.parse(object).objectValue?.map(\.0) == keys)
            for earlier in Set([0, count / 2, count - 1]) {
                let duplicated = "{" + (members + ["\"k\(earlier)\":1"]).joined(separator: ",") + "}"
                #expect(throws: JSONError.self, "k\(earlier) again after \(count) keys") {
                    try JSONValue.parse(duplicated)
                }
            }
        }
    }

    @Test func nestingBeyondTheLimitIsRefused() {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONError.self) { try JSONValue.parse(deep) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONValue.parse(fine) }
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: JSONError.self) { try JSONValue.parse([0x22, 0xC0, 0xAF, 0x22]) }
        #expect(throws: JSONError.self) { try JSONValue.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }
    }

    @Test func nonStandardSyntaxIsRefused() {
        for text in ["[1,]", "{\"a\":1,}", "01", "[.5]", "'a'", "[1] [2]", "\"\\x\"", "\"\\ud800\"", "", "nul"] {
            #expect(throws: JSONError.self, "\(text)") { try JSONValue.parse(text) }
        }
    }

    @Test func stringsRoundTripThroughEscapes() throws {
        let value = try JSONValue.parse(#""a\"b\\c\n\u0001\u00e9\ud83d\ude00""#)
        #expect(value == .string("a\"b\\c\n\u{1}é😀"))
        #expect(try JSONValue.parse(value.serialized) == value)
    }

    @Test func escapesAreWrittenBetweenUnescapedRuns() {
        let value = JSONValue.string("ab\"c\\d\n\u{1F}\u{0B}é")
        #expect(value.serializedString == #""ab\"c\\d\n\u001f\u000bé""#)
    }
}
