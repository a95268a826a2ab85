// PrometheusExposition: a strict reader of the text exposition format, so
// tests check txrecon.prom the way a scraper reads it, line by line: every
// line is a HELP, a TYPE or a sample of the family just declared; label
// values are unescaped; anything else is an error naming the line.

/// One sample line, its labels unescaped.
package struct PrometheusSample: Sendable, Equatable {
    package var name: String
    package var labels: [String: String]
    /// As written (`12`, `0.005`, `+Inf`).
    package var value: String
}

/// A metric family: its HELP (unescaped), TYPE and samples, in file order.
package struct PrometheusFamily: Sendable, Equatable {
    package var name: String
    package var help: String
    package var type: String
    package var samples: [PrometheusSample] = []
}

/// Why a text is not valid exposition format.
package struct PrometheusParseError: Error, CustomStringConvertible {
    /// 1-based.
    package var line: Int
    package var reason: String
    package var description: String { "line \(line): \(reason)" }
}

package struct PrometheusExposition: Sendable {
    package private(set) var families: [PrometheusFamily] = []

    package init(parsing text: String) throws(PrometheusParseError) {
        guard text.isEmpty || text.hasSuffix("\n") else { throw PrometheusParseError(line: 0, reason: "no final line feed") }
        guard !text.unicodeScalars.contains("\r") else {
            throw PrometheusParseError(line: 0, reason: "a carriage return (only line feeds end lines)")
        }
        var pendingHelp: (name: String, help: String)?
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().enumerated() {
            let number = index + 1
            func fail(_ reason: String) -> PrometheusParseError { PrometheusParseError(line: number, reason: reason) }
            if line.hasPrefix("# HELP ") {
                let rest = line.dropFirst(7)
                guard let space = rest.firstIndex(of: " ") else { throw fail("HELP without text") }
                guard pendingHelp == nil else { throw fail("two HELP lines in a row") }
                pendingHelp = (String(rest[..<space]), try Self.unescaped(rest[rest.index(after: space)...],
                                                                          quote: false, line: number))
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                guard parts.count == 2, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[1]) else {
                    throw fail("malformed TYPE")
                }
                guard let help = pendingHelp, help.name == parts[0] else { throw fail("TYPE without its HELP first") }
                guard !families.contains(where: { $0.name == parts[0] }) else { throw fail("family \(parts[0]) twice") }
                families.append(PrometheusFamily(name: String(parts[0]), help: help.help, type: String(parts[1])))
                pendingHelp = nil
            } else if line.hasPrefix("#") || line.isEmpty {
                throw fail("unexpected line \(line.debugDescription)")
            } else {
                let sample = try Self.sample(line, line: number)
                guard var family = families.popLast(), pendingHelp == nil else { throw fail("sample before its TYPE") }
                let suffixes = family.type == "histogram" ? ["_bucket", "_sum", "_count"] : [""]
                guard suffixes.contains(where: { family.name + $0 == sample.name }) else {
                    throw fail("sample \(sample.name) outside family \(family.name)")
                }
                family.samples.append(sample)
                families.append(family)
            }
        }
        if pendingHelp != nil { throw PrometheusParseError(line: 0, reason: "HELP without TYPE at the end") }
    }

    package func family(_ name: String) -> PrometheusFamily? {
        families.first { $0.name == name }
    }

    /// The value of the sample `name` with exactly `labels`, if there is one.
    package func value(_ name: String, _ labels: [String: String] = [:]) -> String? {
        families.lazy.flatMap(\.samples).first { $0.name == name && $0.labels == labels }?.value
    }

    private static func sample(_ line: Substring, line number: Int) throws(PrometheusParseError) -> PrometheusSample {
        func fail(_ reason: String) -> PrometheusParseError { PrometheusParseError(line: number, reason: reason) }
        var rest = line[...]
        let nameEnd = rest.firstIndex { $0 == "{" || $0 == " " } ?? rest.endIndex
        let name = String(rest[..<nameEnd])
        guard !name.isEmpty else { throw fail("sample without a name") }
        rest = rest[nameEnd...]
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                guard let equals = rest.firstIndex(of: "="), rest[rest.index(after: equals)...].first == "\"" else {
                    throw fail("malformed label")
                }
                let label = String(rest[..<equals])
                guard labels[label] == nil else { throw fail("label \(label) twice") }
                // The value runs to the first double quote not escaped by a backslash.
                var cursor = rest.index(equals, offsetBy: 2)
                let valueStart = cursor
                var escaping = false
                while cursor < rest.endIndex, escaping || rest[cursor] != "\"" {
                    escaping = !escaping && rest[cursor] == "\\"
                    cursor = rest.index(after: cursor)
                }
                guard cursor < rest.endIndex else { throw fail("unterminated label value") }
                labels[label] = try unescaped(rest[valueStart..<cursor], quote: true, line: number)
                rest = rest[rest.index(after: cursor)...]
                if rest.first == "," { rest = rest.dropFirst() } else if rest.first != "}" { throw fail("malformed labels") }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw fail("no value") }
        let value = String(rest.dropFirst())
        guard value == "+Inf" || value == "-Inf" || value == "NaN" || Double(value) != nil else {
            throw fail("value \(value.debugDescription) is not a number")
        }
        return PrometheusSample(name: name, labels: labels, value: value)
    }

    /// Undoes the format's escapes: `\\`, `\n`, and in label values `\"`.
    private static func unescaped(_ text: Substring, quote: Bool, line: Int) throws(PrometheusParseError) -> String {
        var result = ""
        var escaping = false
        for character in text {
            if escaping {
                switch character {
                case "\\": result.append("\\")
                case "n": result.append("\n")
                case "\"" where quote: result.append("\"")
                default: throw PrometheusParseError(line: line, reason: "unknown escape \\\(character)")
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        guard !escaping else { throw PrometheusParseError(line: line, reason: "escape at the end") }
        return result
    }
}
