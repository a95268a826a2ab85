// DenseDictionary against Swift's Dictionary: the same operations, seeded
// and random, must leave the same contents; positions stay valid until the
// next change; an emptied large table gives its storage back.
import Testing
@testable import TxRecon

@Suite struct DenseDictionaryTests {
    /// SplitMix64: the same sequence on every run.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

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

    @Test func randomInsertionsUpdatesAndRemovalsLeaveWhatADictionaryWould() {
        var generator = Seeded(state: 42)
        var dense = DenseDictionary<String, Int>()
        var model: [String: Int] = [:]
        for step in 0..<20_000 {
            let key = "k\(Int.random(in: 0..<500, using: &generator))"
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
            if step % 1_000 == 0 { Self.expectSame(dense, model) }
        }
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

    @Test func aLargeTableThatEmptiesGivesItsStorageBackASmallOneKeepsIt() {
        var large = DenseDictionary<String, Int>()
        for index in 0..<10_000 { large["k\(index)"] = index }
        #expect(large.capacity >= 10_000)
        for index in 0..<10_000 { large["k\(index)"] = nil }
        #expect(large.isEmpty && large.capacity < 10_000)

        var small = DenseDictionary<String, Int>()
        for index in 0..<100 { small["k\(index)"] = index }
        for index in 0..<100 { small["k\(index)"] = nil }
        #expect(small.isEmpty && small.capacity >= 100)
        small["again"] = 1
        #expect(small["again"] == 1 && small.count == 1)
    }
}
