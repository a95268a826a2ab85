import Testing
@testable import TxRecon

@Suite struct SettingValueTests {
    @Test func retryDelaysWithoutAnyDelayAreRefused() {
        #expect(throws: InvalidValue.self) { try SettingValue.retrySchedule(" \t ") }
    }

    @Test func eachWordOfRetryDelaysIsOneDelay() throws {
        let schedule = try SettingValue.retrySchedule("1min30s\t2h 100ms")
        #expect(schedule.delays == [.seconds(90), .seconds(7200), .milliseconds(100)])
    }
}
