// JournalCatalogTests: systemd/txrecon.catalog explains exactly the
// MESSAGE_IDs txrecon logs, each entry with the headers journalctl -x shows.
// (Its syntax is checked by journalctl itself in Tests/systemd/check-docs.sh.)
import Testing
@testable import TxRecon

/// The repository root, from this file's place in Tests/TxReconTests/.
private let repositoryRoot = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    .dropLast(3).joined(separator: "/")

/// One `-- <id>` entry of the catalog: its header lines, up to the first blank line.
private struct CatalogEntry {
    var id: String
    var headers: [String: String] = [:]
}

private func readText(_ relativePath: String) throws -> String {
    String(decoding: try RegularFile.read(repositoryRoot + "/" + relativePath, limit: 1 << 20).bytes, as: UTF8.self)
}

private func catalogEntries() throws -> [CatalogEntry] {
    var entries: [CatalogEntry] = []
    var inHeaders = false
    for line in try readText("systemd/txrecon.catalog").split(separator: "\n", omittingEmptySubsequences: false) {
        if line.hasPrefix("-- ") {
            entries.append(CatalogEntry(id: String(line.dropFirst(3))))
            inHeaders = true
        } else if line.isEmpty {
            inHeaders = false
        } else if inHeaders, let colon = line.firstIndex(of: ":") {
            entries[entries.count - 1].headers[String(line[..<colon])] =
                String(line[line.index(after: colon)...].drop(while: { $0 == " " }))
        }
    }
    return entries
}

@Suite struct JournalCatalogTests {
    @Test func everyMessageIDHasExactlyOneCatalogEntry() throws {
        let ids = try catalogEntries().map(\.id)
        for id in MessageID.all {
            #expect(ids.filter { $0 == id }.count == 1, "\(id)")
        }
    }

    @Test func everyCatalogEntryIsAMessageIDTxreconLogs() throws {
        for entry in try catalogEntries() {
            #expect(MessageID.all.contains(entry.id), "\(entry.id) is in the catalog but not in MessageID.all")
        }
    }

    /// Guards against a constant added to MessageID but forgotten in `all`,
    /// which would then escape the two checks above.
    @Test func everyIDLiteralInMessageIDIsListedInAll() throws {
        let source = try readText("Sources/TxRecon/Log/MessageID.swift")
        let parts: [Substring] = source.split(separator: "\"")
        let literals = parts.filter { $0.count == 32 && $0.allSatisfy(\.isHexDigit) }.map(String.init)
        #expect(Set(literals) == Set(MessageID.all))
    }

    @Test func everyEntryHasASubjectAndNamesTxreconAndWhereToGetHelp() throws {
        for entry in try catalogEntries() {
            #expect(entry.headers["Subject"]?.isEmpty == false, "\(entry.id)")
            #expect(entry.headers["Defined-By"] == "txrecon", "\(entry.id)")
            #expect(entry.headers["Support"]?.isEmpty == false, "\(entry.id)")
        }
    }
}
