import Testing
@testable import TxRecon

@Suite struct JournalLogSinkTests {
    @Test func entryBecomesMessagePriorityIDIdentifierAndFieldsInOrder() {
        let entry = LogEntry(.warning, "item held", messageID: MessageID.held,
                             fields: [("TXRECON_ID", "2000000123"), ("TXRECON_HTTP_STATUS", "409")])
        let assignments = JournalLogSink.assignments(for: entry).map { String(decoding: $0, as: UTF8.self) }
        #expect(assignments == [
            "MESSAGE=item held", "PRIORITY=4", "MESSAGE_ID=\(MessageID.held)", "SYSLOG_IDENTIFIER=txrecon",
            "TXRECON_ID=2000000123", "TXRECON_HTTP_STATUS=409",
        ])
    }

    @Test func entryWithoutMessageIDSendsNoMessageIDField() {
        let assignments = JournalLogSink.assignments(for: LogEntry(.debug, "scan done"))
            .map { String(decoding: $0, as: UTF8.self) }
        #expect(assignments == ["MESSAGE=scan done", "PRIORITY=7", "SYSLOG_IDENTIFIER=txrecon"])
    }

    @Test func newlinesInValuesAreSentVerbatim() {
        let entry = LogEntry(.warning, "line one\nline two", fields: [("TXRECON_REASON", "HTTP 409\n{\"error\":1}")])
        let assignments = JournalLogSink.assignments(for: entry)
        #expect(assignments.first == Array("MESSAGE=line one\nline two".utf8))
        #expect(assignments.last == Array("TXRECON_REASON=HTTP 409\n{\"error\":1}".utf8))
    }
}
