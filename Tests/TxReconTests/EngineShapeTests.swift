// EngineShapeTests: DeliveryEngine stays the size issue 44 set for it, one
// decider that keeps its state in owned values: DeliveryEngine.swift at
// most 500 lines and 12 stored properties. Extensions cannot add stored
// properties, so the main file's are all the engine has.
import Testing
@testable import TxRecon

@Suite struct EngineShapeTests {
    static let engineFile = AccessLevelTests.sources + "/TxRecon/Delivery/DeliveryEngine.swift"

    static func lines() throws -> [Substring] {
        let bytes = try SystemCall.readFile(engineFile, limit: 1 << 20)
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
    }

    /// Whether `line` declares a stored instance property of the actor: a
    /// `let` or `var` at the body's indentation, not static, without a body.
    static func declaresStoredProperty(_ line: Substring) -> Bool {
        guard line.hasPrefix("    "), !line.hasPrefix("     "), !line.contains("{") else { return false }
        let words = line.split(separator: " ")
        guard let keyword = words.firstIndex(where: { $0 == "let" || $0 == "var" }) else { return false }
        let modifiers = words[..<keyword]
        return !modifiers.contains("static")
            && modifiers.allSatisfy { ["private", "private(set)", "package", "nonisolated", "fileprivate"].contains($0) }
    }

    @Test func theEngineFileHasAtMostFiveHundredLines() throws {
        let count = try Self.lines().count
        #expect(count <= 500, "DeliveryEngine.swift has \(count) lines")
    }

    @Test func theEngineHasAtMostTwelveStoredProperties() throws {
        let stored = try Self.lines().filter(Self.declaresStoredProperty)
        #expect(stored.count <= 12, "stored properties: \(stored.map { $0.trimmingPrefix(" ") })")
        // The count is of something: the executor and the pending items are there.
        #expect(stored.contains { $0.contains("let executor:") } && stored.contains { $0.contains("var pending") })
    }

    @Test func aComputedPropertyOrAStaticIsNotCountedAsStored() {
        #expect(Self.declaresStoredProperty("    private(set) var configured: Configured"))
        #expect(Self.declaresStoredProperty("    nonisolated let executor: ThreadExecutor"))
        #expect(!Self.declaresStoredProperty("    var settings: Settings { configured.settings }"))
        #expect(!Self.declaresStoredProperty("    static let busyStatusInterval: Duration = .milliseconds(100)"))
        #expect(!Self.declaresStoredProperty("        let now = clock.now"))
    }
}
