import CCurl
import Testing
@testable import TxRecon

@Suite struct CurlHeaderListTests {
    /// The lines `list` gives curl for `headers` and `lines`, in list order.
    private func lines(_ list: CurlHeaderList, _ headers: [(name: String, value: String)],
                       then fixed: [StaticString] = []) throws -> [String] {
        try list.withList(headers, then: fixed) { first in
            var lines: [String] = []
            var node = first
            while let current = node {
                lines.append(String(cString: current.pointee.data))
                node = current.pointee.next
            }
            return lines
        }
    }

    @Test func eachHeaderIsOneLineInOrderThenTheFixedLines() throws {
        let built = try lines(CurlHeaderList(), [("Content-Type", "application/json"),
                                                 ("Idempotency-Key", "2000000123:17")], then: ["Expect:"])
        #expect(built == ["Content-Type: application/json", "Idempotency-Key: 2000000123:17", "Expect:"])
    }

    @Test func anEmptyValueIsSentEmptyNotRemoved() throws {
        #expect(try lines(CurlHeaderList(), [("X-Empty", "")]) == ["X-Empty;"])
    }

    @Test func noHeadersIsNoList() throws {
        #expect(try CurlHeaderList().withList([]) { $0 == nil })
    }

    @Test func aHeaderWithALineBreakOrNULIsRefusedByNameAndNothingIsBuilt() {
        let list = CurlHeaderList()
        for (name, value) in [("X-Bad", "a\r\nX-Injected: 1"), ("X-Bad", "a\nb"), ("X-Bad", "a\u{0}b"),
                              ("X-Bad\r\nX-Injected", "1")] {
            var called = false
            #expect(throws: CurlHeaderList.UnsafeHeader.self) {
                try list.withList([("Content-Type", "application/json"), (name, value)]) { _ in called = true }
            }
            do {
                try list.withList([(name, value)]) { _ in }
            } catch {
                #expect(error.name == name)
            }
            #expect(!called)
        }
    }

    /// Long values are checked eight bytes at a time: a CR, LF or NUL at any
    /// place of one is found, and the bytes around it count for nothing.
    @Test func aLineBreakOrNULAnywhereInALongValueIsRefused() throws {
        let list = CurlHeaderList()
        for bad in ["\r", "\n", "\u{0}"] {
            for position in 0..<24 {
                var value = Array(repeating: "v", count: 24)
                value[position] = bad
                #expect(throws: CurlHeaderList.UnsafeHeader.self, "\(position)") {
                    try list.withList([("X-Long", value.joined())]) { _ in }
                }
            }
        }
        // Bytes next to the refused ones (0x09, 0x0B, 0x0C, 0x0E, 0x01, 0xFF) pass.
        let near = "a\u{9}b\u{B}c\u{C}d\u{E}e\u{1}fé" + String(repeating: "x", count: 9)
        #expect(try lines(list, [("X-Near", near)]) == ["X-Near: \(near)"])
    }

    @Test func oneListServesRequestsOfAnySizeInTurn() throws {
        let list = CurlHeaderList()
        let long = String(repeating: "v", count: 5000)
        let many = (0..<20).map { ("X-\($0)", long) }
        #expect(try lines(list, many) == many.map { "\($0.0): \($0.1)" })
        #expect(try lines(list, [("A", "1")], then: ["Expect:"]) == ["A: 1", "Expect:"])
    }
}
