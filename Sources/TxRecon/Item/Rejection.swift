// Rejection: why intake refused a spool file. The file moves to rejected/
// with a `.reason` beside it holding `code: detail`; the journal entry carries
// the code in TXRECON_REASON. Codes are stable: operators and scripts match them.

/// Why a dropped file cannot become an item.
package struct Rejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-matchable code such as `not-json` or `malformed-jws`.
    package var code: String
    /// One sentence for a person: which format was tried and what was wrong.
    package var detail: String

    package init(_ code: String, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    package var description: String { "\(code): \(detail)" }
}
