// `txrecon replay --since/--until`: the times an operator types.
import Testing
@testable import TxRecon

@Suite struct OperatorTimeTests {
    static let now: Int64 = 1_800_000_000_000

    @Test(arguments: [
        ("2026-12-01T09:30:00Z", Int64(1_796_117_400_000)),
        ("2026-12-01t09:30:00z", 1_796_117_400_000),
        ("2026-12-01T10:30:00+01:00", 1_796_117_400_000),
        ("2026-12-01T04:00:00-05:30", 1_796_117_400_000),
        ("2026-12-01T09:30:00.25Z", 1_796_117_400_250),
        ("2026-12-01T09:30:00.123456Z", 1_796_117_400_123),
        ("2024-02-29T00:00:00Z", 1_709_164_800_000),
        ("1970-01-01T00:00:00Z", 0),
    ])
    func rfc3339TimesAreReadWithTheirZone(text: String, milliseconds: Int64) {
        #expect(OperatorTime.parse(text, now: Self.now) == milliseconds)
    }

    @Test func aSpanIsThatLongAgo() {
        #expect(OperatorTime.parse("2h", now: Self.now) == Self.now - 7_200_000)
        #expect(OperatorTime.parse("1h 30min", now: Self.now) == Self.now - 5_400_000)
        #expect(OperatorTime.parse("3d", now: Self.now) == Self.now - 3 * 86_400_000)
    }

    @Test(arguments: ["", "yesterday", "2026-12-01", "2026-12-01T09:30:00", "2026-12-01 09:30:00Z",
                      "2026-13-01T09:30:00Z", "2026-02-30T09:30:00Z", "2025-02-29T00:00:00Z", "2026-12-01T24:00:00Z",
                      "2026-12-01T09:30:00.Z", "2026-12-01T09:30:00+0100", "2026-12-01T09:30:00Zjunk", "-2h"])
    func anythingElseIsRefused(text: String) {
        #expect(OperatorTime.parse(text, now: Self.now) == nil)
    }
}
