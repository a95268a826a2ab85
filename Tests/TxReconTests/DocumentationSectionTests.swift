// DocumentationSectionTests: every message, comment and document that sends
// a reader to a section of the README, or of a page under docs/, names a
// section that exists there.
//
// A citation is the document's name, then the section's title in quotes:
// `README "Input formats"`, `README: "How do I scrape metrics?"` (in Swift
// source the quotes may be escaped), `docs/upgrade.md "Before you start"`.
// Inside a Markdown document, `see "…"` names one of its own sections. A
// heading can be cited by its title; a `### …scrape metrics?` under a
// `## How do I…` also as "How do I scrape metrics?"; a title ending in a
// parenthesis, `… over HTTP? (txrecon receive)`, also by the words before it
// or inside it; a title with a label, `Deliver: queue/KEY → done/KEY`, also
// by its label. When the README's topics move into docs/, the citations name
// the new pages and this test follows them. (groff and journalctl check the
// manual pages and the catalog: Tests/systemd/check-docs.sh.)
import Glibc
import Testing
@testable import TxRecon

/// The repository root, from this file's place in Tests/TxReconTests/.
private let repositoryRoot = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    .dropLast(3).joined(separator: "/")

/// Where citations may stand: everything shipped or read by an operator,
/// not the tests (which quote citations to check them).
private let citingPlaces = ["Sources", "Config", "man", "systemd", "packaging", "Examples", "docs", "README.md", "Makefile"]

/// One place that sends the reader to a section.
private struct Citation: CustomStringConvertible {
    /// Relative to the repository root: `README.md`, `docs/upgrade.md`.
    var document: String
    var section: String
    /// Where it stands, `Sources/…/File.swift:46`.
    var source: String

    var description: String { "\(source): \(document) \"\(section)\"" }
}

private func readText(_ path: String) throws -> String {
    String(decoding: try RegularFile.read(path, limit: 4 << 20).bytes, as: UTF8.self)
}

/// The files under `relativePath` (itself, when it is a file), as paths
/// relative to the repository root, hidden names left out.
private func files(under relativePath: String) throws -> [String] {
    guard let info = try SystemCall.linkStatus(repositoryRoot + "/" + relativePath) else { return [] }
    guard info.st_mode & S_IFMT == S_IFDIR else { return info.st_mode & S_IFMT == S_IFREG ? [relativePath] : [] }
    var found: [String] = []
    for name in try SystemCall.listDirectory(repositoryRoot + "/" + relativePath) where !name.hasPrefix(".") {
        found += try files(under: relativePath + "/" + name)
    }
    return found
}

/// Every name each heading of the Markdown document at `relativePath` can
/// be cited by (code blocks skipped: a `# comment` there is no heading).
private func sectionNames(of relativePath: String) throws -> Set<String> {
    var names: Set<String> = []
    var parents: [(level: Int, title: String)] = []
    var inFence = false
    for line in try readText(repositoryRoot + "/" + relativePath).split(separator: "\n") {
        if line.hasPrefix("```") { inFence.toggle() }
        guard !inFence, line.hasPrefix("#") else { continue }
        let level = line.prefix { $0 == "#" }.count
        let title = String(line.dropFirst(level).drop { $0 == " " })
        parents.removeAll { $0.level >= level }
        names.insert(title)
        if title.hasPrefix("…"), let parent = parents.last, parent.title.hasSuffix("…") {
            names.insert(parent.title.dropLast() + " " + title.dropFirst())
        }
        if let colon = title.firstRange(of: ": ") {
            names.insert(String(title[..<colon.lowerBound]))
        }
        if title.hasSuffix(")"), let open = title.lastIndex(of: "("), open > title.startIndex,
           title[title.index(before: open)] == " " {
            names.insert(String(title[..<title.index(before: open)]))
            names.insert(String(title[title.index(after: open)...].dropLast()))
        }
        parents.append((level, title))
    }
    return names
}

/// The citations in the file at `relativePath`: of another document, and,
/// in a Markdown document, `see "…"` of its own sections.
private func citations(in relativePath: String) throws -> [Citation] {
    let text = try readText(repositoryRoot + "/" + relativePath)
    // README or docs/NAME.md, an optional : or , and the title in quotes,
    // escaped or not.
    let other = try Regex(#"(README(?:\.md)?|docs/[A-Za-z0-9_.-]+\.md)[:,]?\s+\\?"([^"\\\n]+)\\?""#)
    let own = try Regex(#"[Ss]ee "([^"\n]+)""#)
    var found: [Citation] = []
    for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        let source = "\(relativePath):\(index + 1)"
        for match in line.matches(of: other) {
            guard let document = match.output[1].substring, let section = match.output[2].substring else { continue }
            found.append(Citation(document: document.hasPrefix("README") ? "README.md" : String(document),
                                  section: String(section), source: source))
        }
        if relativePath.hasSuffix(".md") {
            for match in line.matches(of: own) {
                guard let section = match.output[1].substring else { continue }
                found.append(Citation(document: relativePath, section: String(section), source: source))
            }
        }
    }
    return found
}

@Suite struct DocumentationSectionTests {
    @Test func everySectionAMessageOrDocumentNamesExists() throws {
        var all: [Citation] = []
        for place in citingPlaces {
            for file in try files(under: place) where !file.hasSuffix(".cer") && !file.hasSuffix(".jws") {
                all += try citations(in: file)
            }
        }
        // The scan itself works: the code base cites the README in a dozen places.
        #expect(all.filter { $0.source.hasPrefix("Sources/") }.count >= 8, "\(all)")
        var sections: [String: Set<String>] = [:]
        var missing: [Citation] = []
        for citation in all {
            // A document that does not exist has no sections.
            if sections[citation.document] == nil { sections[citation.document] = (try? sectionNames(of: citation.document)) ?? [] }
            if sections[citation.document]?.contains(citation.section) != true { missing.append(citation) }
        }
        #expect(missing.isEmpty, "sections named but not in the document:\n\(missing.map(\.description).joined(separator: "\n"))")
    }
}
