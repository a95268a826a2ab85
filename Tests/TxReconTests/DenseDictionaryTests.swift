// DenseDictionary against Swift's Dictionary: the same operations, seeded
// and random, must leave the same contents; positions stay valid until the
// next change; a large table that falls to a quarter of its room gives it back.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct DenseDictionaryTests {
    static func expectSame(_ dense: DenseDictionary<String, Int>, _ model: [String: Int]) {
        #expect(dense.count == model.count)
        #expect(dense.isEmpty == model.isEmpty)
        #expect(Set(dense.keys) == Set(model.keys))
        var iterated: [String: Int] = [:]
        for (key, value) in dense { iterated[key] = value }
        #expect(iterated == model)
        for (key, value) in model {
            #expect(dense[key] == value)
            #expect(dense.position(of: key).map { dense[position: $0] } == value)
        }
    }

    /// Random operations on keys from a small range (the table stays
    /// small), then a wide one (it grows past the size at which it
    /// shrinks), then every wide key removed (it shrinks on the way), then
    /// the small range again.
    @Test func randomInsertionsUpdatesAndRemovalsLeaveWhatADictionaryWould() {
        var generator = SeededGenerator(seed: 42)
        var dense = DenseDictionary<String, Int>()
        var model: [String: Int] = [:]
        func randomSteps(_ steps: Range<Int>, keysBelow range: Int) {
            for step in steps {
                let key = "k\(Int.random(in: 0..<range, using: &generator))"
                switch Int.random(in: 0..<6, using: &generator) {
                case 0, 1, 2:
                    dense[key] = step
                    model[key] = step
                case 3:
                    #expect(dense.removeValue(forKey: key) == model.removeValue(forKey: key))
                case 4:
                    dense[key] = nil
                    model[key] = nil
                default:
                    if let position = dense.position(of: key) {
                        #expect(dense.remove(at: position) == model.removeValue(forKey: key))
                    } else {
                        #expect(model[key] == nil)
                    }
                }
                if step % 5_000 == 0 { Self.expectSame(dense, model) }
            }
        }
        randomSteps(0..<20_000, keysBelow: 500)
        Self.expectSame(dense, model)
        randomSteps(20_000..<40_000, keysBelow: 20_000)
        Self.expectSame(dense, model)
        let grown = dense.storageCapacity
        #expect(grown > 8_192, "the wide range grew the table past the size at which it shrinks")
        for (index, key) in model.keys.filter({ Int($0.dropFirst())! >= 500 }).enumerated() {
            if index % 2 == 0 {
                #expect(dense.removeValue(forKey: key) == model.removeValue(forKey: key))
            } else {
                let position = dense.position(of: key)
                #expect(position.map { dense.remove(at: $0) } == model.removeValue(forKey: key))
            }
        }
        Self.expectSame(dense, model)
        #expect(dense.storageCapacity < grown, "the table shrank as the wide keys left")
        randomSteps(40_000..<60_000, keysBelow: 500)
        Self.expectSame(dense, model)
    }

    @Test func aValueChangedAtItsPositionIsTheKeysValue() throws {
        var dense = DenseDictionary<String, Int>()
        for index in 0..<10 { dense["k\(index)"] = index }
        let position = try #require(dense.position(of: "k3"))
        dense[position: position] = 33
        #expect(dense["k3"] == 33)
        // Removing the first entry moves the last into its place: every
        // other key still finds its own value.
        dense.remove(at: try #require(dense.position(of: "k0")))
        #expect(dense["k0"] == nil && dense["k9"] == 9 && dense["k3"] == 33 && dense.count == 9)
    }

    @Test func aLargeTableThatFallsToAQuarterGivesItsStorageBackASmallOneKeepsIt() {
        var large = DenseDictionary<String, Int>()
        for index in 0..<100_000 { large["k\(index)"] = index }
        #expect(large.storageCapacity >= 100_000)
        // A backlog drained but for a few keys left retrying.
        for index in 10..<100_000 { large["k\(index)"] = nil }
        // Shrinking stops at 4,096 entries' room (a dictionary of 6,144).
        #expect(large.count == 10 && large.storageCapacity < 10_000)
        let left = (0..<10).map { large["k\($0)"] }
        #expect(left == (0..<10).map { $0 })
        for index in 0..<10 { large["k\(index)"] = nil }
        #expect(large.isEmpty)

        var small = DenseDictionary<String, Int>()
        for index in 0..<100 { small["k\(index)"] = index }
        let room = small.storageCapacity
        for index in 0..<100 { small["k\(index)"] = nil }
        #expect(small.isEmpty && small.storageCapacity == room)
        small["again"] = 1
        #expect(small["again"] == 1 && small.count == 1)
    }
}
