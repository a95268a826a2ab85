// ManualPageTests: man/txrecon.conf.5 documents every key the loader accepts,
// under its section, and the defaults it states are the loader's defaults.
// (groff's own warnings are checked by Tests/systemd/check-docs.sh.)
import Testing
import TxReconTestSupport
@testable import TxRecon

/// man/txrecon.conf.5 in the source tree.
private let manualPath = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    .dropLast(4).joined(separator: "/") + "/man/txrecon.conf.5"

/// A key as the manual documents it: `Section.Key` and the value after
/// "Default:", nil when the manual says "Default: unset" or gives none.
private struct DocumentedKey {
    var qualifiedName: String
    var defaultValue: String?
    /// Whether its text says "Takes effect only at a restart" (of the
    /// daemon, or of the program it names).
    var restartOnly = false
}

/// Reads the `.SH [Section] SECTION` parts: each `.TP` item opens with one
/// or more `.BI Key= argument` lines (joined by `.TQ`) and may end with a
/// "Default:" line followed by a macro line holding the value.
private func documentedKeys() throws -> [DocumentedKey] {
    let text = String(decoding: try RegularFile.read(manualPath, limit: 1 << 20).bytes, as: UTF8.self)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    var keys: [DocumentedKey] = []
    var section: String?
    var itemStart = 0
    for (index, line) in lines.enumerated() {
        if line.hasPrefix(".SH ") {
            let title = line.dropFirst(4)
            section = title.hasPrefix("[") ? String(title.dropFirst().prefix(while: { $0 != "]" })) : nil
        }
        guard let section else { continue }
        if line == ".TP" { itemStart = keys.count }
        if line.hasPrefix(".BI "), let name = line.dropFirst(4).split(separator: " ").first, name.hasSuffix("=") {
            keys.append(DocumentedKey(qualifiedName: "\(section).\(name.dropLast())"))
        }
        if line.contains("Takes effect only at a restart") {
            for item in itemStart..<keys.count { keys[item].restartOnly = true }
        }
        if line == "Default:", index + 1 < lines.count {
            let value = macroArgument(lines[index + 1])
            for item in itemStart..<keys.count { keys[item].defaultValue = value }
        }
    }
    return keys
}

/// `2s 5s` from `.BR "2s 5s" .`, `/var/spool/txrecon` from `.IR /var/spool/txrecon .`
private func macroArgument(_ line: Substring) -> String {
    var argument = line.drop(while: { $0 != " " }).dropFirst()
    if argument.hasSuffix(" .") { argument = argument.dropLast(2) }
    if argument.hasPrefix("\""), argument.hasSuffix("\"") { argument = argument.dropFirst().dropLast() }
    return String(argument)
}

@Suite struct ManualPageTests {
    @Test func theManualDocumentsEveryKeyUnderItsSection() throws {
        let documented = try documentedKeys().map(\.qualifiedName)
        #expect(documented.sorted() == ConfigurationKey.all.map(\.qualifiedName).sorted())
    }

    @Test func theManualSaysTakesEffectOnlyAtARestartOfExactlyTheRestartOnlyKeys() throws {
        let documented = try documentedKeys().filter(\.restartOnly).map(\.qualifiedName)
        #expect(documented.sorted() == ConfigurationKey.all.filter(\.restartOnly).map(\.qualifiedName).sorted())
        #expect(documented.count >= 6)
    }

    @Test func aReloadKeepsTheRunningValueOfEachRestartOnlyKeyItReadsAndNamesIt() {
        var running = Configuration(path: "/etc/txrecon/txrecon.conf")
        running.spool.directory = "/srv/spool"
        running.receive.idleTimeout = .seconds(5)
        var next = running
        next.spool.directory = "/srv/other"
        next.spool.maxFileSize = 1 << 20
        next.receive.idleTimeout = .seconds(9)
        let waiting = ConfigurationKey.keepRunningValues(of: running, in: &next, reads: { $0.section == "Spool" })
        #expect(waiting == ["Directory="])
        #expect(next.spool.directory == "/srv/spool", "the running value stays")
        #expect(next.spool.maxFileSize == 1 << 20, "a key a reload applies is applied")
        #expect(next.receive.idleTimeout == .seconds(9), "a key this program does not read is left alone")
    }

    @Test func theDefaultsTheManualStatesAreTheActualDefaults() throws {
        let stated = try documentedKeys().compactMap { key in key.defaultValue.map { (key.qualifiedName, $0) } }
        #expect(stated.count >= 6)
        var text = "[Backend]\nURL=http://127.0.0.1/\n"
        for (qualifiedName, value) in stated {
            let parts = qualifiedName.split(separator: ".")
            text += "[\(parts[0])]\n\(parts[1])=\(value)\n"
        }
        let directory = TemporaryDirectory()
        var spelledOut = try ConfigurationLoader.load(path: directory.write(text, to: "stated.conf"))
        var defaults = try ConfigurationLoader.load(path: directory.write("[Backend]\nURL=http://127.0.0.1/\n",
                                                                          to: "defaults.conf"))
        spelledOut.origins = [:]
        defaults.origins = [:]
        defaults.path = spelledOut.path
        defaults.files = spelledOut.files
        #expect(spelledOut == defaults)
    }
}
