// ItemKey's order is its UTF-8 bytes' (SQLite's BINARY collation, which
// orders the ledger's keys), for short keys Swift keeps inline and long
// ones it keeps on the heap, ASCII or not.
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ItemKeyOrderTests {
    @Test func keysOrderByTheirUTF8Bytes() throws {
        var generator = SeededGenerator(seed: 7)
        let pieces = ["a", "b", "A", "0", ".", "~", "\u{7f}", "é", "з", "😀", "txn.2000000", "notification-"]
        var keys: [ItemKey] = []
        for _ in 0..<80 {
            let text = (0..<Int.random(in: 1...8, using: &generator))
                .map { _ in pieces.randomElement(using: &generator)! }.joined()
            keys.append(try #require(ItemKey(text)))
        }
        var wrong: [String] = []
        for left in keys {
            for right in keys where (left < right) != left.rawValue.utf8.lexicographicallyPrecedes(right.rawValue.utf8) {
                wrong.append("\(left) < \(right)")
            }
        }
        let misordered = wrong.count
        #expect(misordered == 0, "\(wrong.prefix(3))")
        #expect(keys.contains { $0.rawValue.utf8.count <= 15 } && keys.contains { $0.rawValue.utf8.count > 15 })
        #expect(try #require(ItemKey("ab")) < #require(ItemKey("abc")) && !(try #require(ItemKey("ab")) < #require(ItemKey("ab"))))
    }
}
