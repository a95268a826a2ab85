// The direct object writer against the JSONValue serialization it stands in for.
import Testing
@testable import TxRecon

@Suite struct JSONObjectWriterTests {
    @Test func writesWhatTheSameMembersAsAJSONValueSerializeTo() throws {
        let nested = try JSONValue.parse(#"{"a":[1,2.50,{"b":null}],"c":"d\"e","f":true}"#)
        var writer = JSONObjectWriter(reservingCapacity: 16)
        writer.add("id", "2000000123456789")
        writer.add(named: "quote\"and\\slash", "line\nbreak \u{1} é")
        writer.add("version", Int64(1_690_000_000_000))
        writer.add("negative", Int64.min)
        writer.add("payload", nested)
        writer.add("receivedAt", timestamp: 1_690_000_000_123)
        writer.add("text", json: Array(#"{"as":"given"}"#.utf8))
        let members: [(String, JSONValue)] = [
            ("id", .string("2000000123456789")), ("quote\"and\\slash", .string("line\nbreak \u{1} é")),
            ("version", .integer(Int64(1_690_000_000_000))), ("negative", .integer(Int64.min)), ("payload", nested),
            ("receivedAt", .string("2023-07-22T04:26:40.123Z")), ("text", .object([("as", .string("given"))])),
        ]
        #expect(writer.finish() == JSONValue.object(members).serialized)
        #expect(JSONObjectWriter(reservingCapacity: 0).finish() == Array("{}".utf8))
    }
}
