// INISyntax: the line syntax of txrecon.conf and its drop-ins, the subset of
// systemd's unit file syntax that txrecon uses.
//
// A line is blank, a comment (first non-blank character `#` or `;`), a
// `[Section]` header or a `Key=value` assignment; spaces and tabs around the
// key and the value, and a CR before the newline, are dropped. There are no
// inline comments and no line continuations: `Key=a # b` sets `a # b`.
// Knows nothing of which sections and keys exist. Throws a
// `ConfigurationError` with the file and 1-based line for a line that is
// none of the above or is not UTF-8; the line's text is left out of the
// message, as a mistyped line may hold a secret.

/// One meaningful line of a configuration file.
struct INIStatement: Equatable {
    enum Kind: Equatable {
        /// `[name]`
        case section(String)
        /// `key=value`, both trimmed; `value` may be empty.
        case assignment(key: String, value: String)
    }

    /// 1-based.
    var line: Int
    var kind: Kind
}

/// Splits a configuration file into statements.
enum INISyntax {
    /// The sections and assignments in `bytes`, in file order. `file` only
    /// names the file in errors.
    static func statements(in bytes: [UInt8], file: String) throws(ConfigurationError) -> [INIStatement] {
        var statements: [INIStatement] = []
        for (index, rawLine) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let lineNumber = index + 1
            guard let line = String(validating: trimmed(rawLine), as: UTF8.self) else {
                throw ConfigurationError(file: file, line: lineNumber, key: nil, message: "is not valid UTF-8 text")
            }
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                let name = line.dropFirst().dropLast()
                guard line.hasSuffix("]"), !name.isEmpty, !name.contains("["), !name.contains("]") else {
                    throw ConfigurationError(
                        file: file, line: lineNumber, key: nil,
                        message: "malformed section header; write it as [Section] alone on its line")
                }
                statements.append(INIStatement(line: lineNumber, kind: .section(String(name))))
                continue
            }
            guard let equals = line.firstIndex(of: "="),
                  case let key = line[..<equals].trimmingASCIISpaces(), !key.isEmpty
            else {
                throw ConfigurationError(
                    file: file, line: lineNumber, key: nil,
                    message: "malformed line; expected a [Section] header, a Key=value assignment, "
                        + "or a comment starting with # or ;")
            }
            let value = line[line.index(after: equals)...].trimmingASCIISpaces()
            statements.append(INIStatement(line: lineNumber, kind: .assignment(key: key, value: value)))
        }
        return statements
    }

    /// The line without leading and trailing spaces, tabs and CRs.
    private static func trimmed(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let blank: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r")]
        guard let first = line.firstIndex(where: { !blank.contains($0) }),
              let last = line.lastIndex(where: { !blank.contains($0) })
        else { return [] }
        return line[first...last]
    }
}
