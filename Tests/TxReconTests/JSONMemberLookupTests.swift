// Member lookup by name compares names as String's == does.
import Testing
@testable import TxRecon

@Suite struct JSONMemberLookupTests {
    /// A shortcut on lengths or bytes would miss these: the lookup must
    /// find what the duplicate-key check would call the same name.
    @Test func aMemberIsFoundUnderACanonicallyEquivalentName() throws {
        let object = try JSONValue.parse(Array(#"{"\u212Aey": 1, "caf\u00e9": 2}"#.utf8))
        #expect(object["Key"] == .integer(1))
        #expect(object["cafe\u{301}"] == .integer(2))
        #expect(object["Keys"] == nil)
        #expect(throws: JSONError.self) { try JSONValue.parse(Array(#"{"Key": 1, "\u212Aey": 2}"#.utf8)) }
    }
}
