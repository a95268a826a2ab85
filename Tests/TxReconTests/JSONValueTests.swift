import Testing
@testable import TxRecon

@Suite struct JSONValueTests {
    @Test func numbersKeepTheirExactText() throws {
        let value = try JSONValue.parse(#"{"a": 2000000123456789012, "b": 1.50}"#)
        #expect(value["a"] == .number("2000000123456789012"))
        #expect(value["b"] == .number("1.50"))
        #expect(value.serializedString == #"{"a":2000000123456789012,"b":1.50}"#)
    }

    @Test func aSetAsideMemberIsLeftOutAndItsTextAndPlaceAreGiven() throws {
        let text = Array(#"{"a": {"payload": 1}, "payload" : [ 1, "x" ] , "z": 2}"#.utf8)
        let (value, setAside) = try JSONValue.parse(text, settingAside: "payload")
        #expect(value == (try JSONValue.parse(#"{"a": {"payload": 1}, "z": 2}"#)))
        let found = try #require(setAside)
        #expect(String(decoding: text[found.range], as: UTF8.self) == #"[ 1, "x" ]"#)
        #expect(found.position == 1)
        // Only the top level: a nested member of that name is built as any other.
        let nested = try JSONValue.parse(Array(#"{"a": {"payload": 1}}"#.utf8), settingAside: "payload")
        #expect(nested.0 == (try JSONValue.parse(#"{"a": {"payload": 1}}"#)) && nested.1 == nil)
        #expect(try JSONValue.parse(Array("[1]".utf8), settingAside: "payload").1 == nil)
    }

    /// What parsing with "payload" set aside must agree on with a plain
    /// parse: whether the text is JSON, and if not, the error.
    static let setAsideCases: [String] = [
        #"{"payload": {"a": 1, "a": 2}}"#, #"{"payload": 1, "payload": 2}"#, #"{"payload": "\u00e9\ud83d\ude00"}"#,
        #"{"payload": "\ud800"}"#, #"{"payload": "a\u0001"}"#, "{\"payload\": \"a\u{1}\"}", #"{"payload": "\x"}"#,
        #"{"payload": 01}"#, #"{"payload": -}"#, #"{"payload": 1.}"#, #"{"payload": 1e}"#, #"{"payload": tru}"#,
        #"{"payload": [1, 2,]}"#, #"{"payload": {"a" 1}}"#, #"{"payload": {"a": 1,}}"#, #"{"payload": ["#,
        #"{"payload": "unterminated}"#, #"{"payload": [1] "id": 2}"#, #"{"payload": [1]} x"#, #"{"payload"}"#,
        "{\"payload\": \"\u{FF}\"}", #"{"id": "k", "version": 1, "payload": {"deep": "#
            + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "}}",
        #"{"id": "k", "version": 1, "payload": {"b": 1.50, "a": [true, null, false, "x\"y", {"c": {}}]}}"#,
        // Names equal only once decoded, or as Strings (canonically equivalent).
        #"{"payload": {"caf\u00e9": 1, "café": 2}}"#, #"{"payload": {"cafe\u0301": 1, "café": 2}}"#,
        #"{"payload": {"a\"b": 1, "a\u0022b": 2}}"#, #"{"payload": {"ab": 1, "a\u0062": 2}}"#,
        #"{"payload": {"ab": 1, "abc": 2, "a": 3}}"#,
        "{\"payload\": {" + (0..<40).map { "\"k\($0)\": \($0)" }.joined(separator: ", ") + ", \"k7\": 0}}",
        "{\"payload\": {" + (0..<40).map { "\"k\($0)\": \($0)" }.joined(separator: ", ") + "}}",
    ]

    @Test(arguments: setAsideCases.map { Array($0.utf8) } + FuzzCorpusTests.inputs.compactMap { path in
        try? SystemCall.readFile(path, limit: 1 << 20)
    })
    func settingAMemberAsideAcceptsAndRefusesWhatAPlainParseDoes(bytes: [UInt8]) throws {
        let plain = Result { () throws(JSONError) in try JSONValue.parse(bytes) }
        let aside = Result { () throws(JSONError) in try JSONValue.parse(bytes, settingAside: "payload") }
        switch (plain, aside) {
        case let (.failure(expected), .failure(error)):
            #expect(error == expected)
        case let (.success(value), .success((rest, setAside))):
            guard let setAside else {
                #expect(rest == value)
                return
            }
            guard case var .object(members) = rest else {
                Issue.record("not an object")
                return
            }
            members.insert(("payload", try JSONValue.parse(bytes[setAside.range])), at: setAside.position)
            #expect(JSONValue.object(members) == value)
        default:
            Issue.record("a plain parse gave \(plain), setting aside gave \(aside)")
        }
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

    /// Plain names compare as bytes, others as Strings: an escape or a
    /// canonically equivalent spelling is still the same name, and a nested
    /// object's names are its own. Plain names of lengths that differ are
    /// never compared; lengths equal modulo 64 still are.
    @Test func duplicatesAreFoundWhateverTheSpellingAndOnlyWithinOneObject() throws {
        let long = String(repeating: "n", count: 70)
        for text in [#"{"a\u0062":1,"ab":2}"#, #"{"ab":1,"a\u0062":2}"#, #"{"caf\u00e9":1,"cafe\u0301":2}"#,
                     #"{"\u212Aey":1,"Key":2}"#, #"{"x":{"k":1,"k":2}}"#, #"{"a":{"b":1},"a":2}"#,
                     #"{"ab":1,"cd":2,"ab":3}"#, #"{"\#(long)":1,"b":2,"\#(long)":3}"#] {
            #expect(throws: JSONError.self, "\(text)") { try JSONValue.parse(text) }
            // The same inside a member that is checked, not built.
            let aside = Array(#"{"payload":\#(text)}"#.utf8)
            #expect(throws: JSONError.self, "\(text) set aside") { try JSONValue.parse(aside, settingAside: "payload") }
        }
        let sameLengthModulo64 = try JSONValue.parse(#"{"n":1,"\#(String(repeating: "n", count: 65))":2,"m":3}"#)
        #expect(sameLengthModulo64.objectValue?.count == 3)
        let nested = try JSONValue.parse(#"{"a":{"a":1,"b":{"a":2,"b":3}},"b":[{"a":4},{"a":5}],"c":6}"#)
        #expect(nested.objectValue?.map(\.0) == ["a", "b", "c"])
        #expect(nested["a"]?["b"]?["a"] == .integer(2))
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
