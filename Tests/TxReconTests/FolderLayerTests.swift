// FolderLayerTests: the folders of Sources/TxRecon depend on each other in
// one direction at the bottom of the tree (issue 44, "Rooms that match the
// vocabulary"): Support/ (system calls' helpers, text, JSON, threads,
// clocks) names nothing of another folder; Log/ (entries and sinks) and
// Item/ (the shared vocabulary: Item, ItemKey, ItemVersion, Rejection,
// Drop) name only Support/'s. The check reads the sources: a type declared
// at the top level of a file belongs to that file's folder, and a lower
// folder's code (comments and string literals left out) may not name a
// type of a folder above it.
import Testing
@testable import TxRecon

@Suite struct FolderLayerTests {
    /// Each checked folder and the folders it may name.
    static let allowed: [String: Set<String>] = [
        "Support": [],
        "Log": ["Support"],
        "Item": ["Support"],
    ]

    static let root = AccessLevelTests.sources + "/TxRecon"

    /// The type names a file declares at its top level (not private ones).
    static func declaredTypes(in text: String) -> [String] {
        let keywords: Set<Substring> = ["struct", "class", "enum", "actor", "protocol", "typealias"]
        var names: [String] = []
        for line in text.split(separator: "\n") where !line.hasPrefix(" ") && !line.hasPrefix("\t") {
            let words = line.split(whereSeparator: { " :<{=(".contains($0) })
            guard let index = words.firstIndex(where: { keywords.contains($0) }), index + 1 < words.count,
                  !words[..<index].contains(where: { $0 == "private" || $0 == "fileprivate" }),
                  words[..<index].allSatisfy({ ["package", "final", "indirect", "internal"].contains($0) })
            else { continue }
            names.append(String(words[index + 1]))
        }
        return names
    }

    /// The capitalised identifiers of `text`'s code: comments and the
    /// contents of one-line string literals left out.
    static func namedIdentifiers(in text: String) -> Set<String> {
        var found: Set<String> = []
        for line in text.split(separator: "\n") {
            var code = ""
            var inString = false
            var previous: Character = " "
            for character in line {
                if !inString && character == "/" && previous == "/" { code.removeLast(); break }
                if character == "\"" && previous != "\\" { inString.toggle() } else if !inString { code.append(character) }
                previous = character
            }
            var word = ""
            for character in code + " " {
                if character.isLetter || character.isNumber || character == "_" {
                    word.append(character)
                } else {
                    if let first = word.first, first.isUppercase { found.insert(word) }
                    word = ""
                }
            }
        }
        return found
    }

    @Test func theCheckSeesDeclarationsAndNamesButNotProse() {
        #expect(Self.declaredTypes(in: "package struct ItemKey: Hashable {\n    struct Inner {}\n}") == ["ItemKey"])
        #expect(Self.declaredTypes(in: "private struct Hidden {}\nextension Item {}") == [])
        #expect(Self.declaredTypes(in: "package final class Pool<T>: Sendable {") == ["Pool"])
        let names = Self.namedIdentifiers(in: "let x = Spool.open(\"Engine\") // DeliveryEngine\n")
        #expect(names == ["Spool"])
    }

    @Test func lowerFoldersNameNothingOfTheFoldersAboveThem() throws {
        var owner: [String: String] = [:]
        var texts: [(folder: String, file: String, text: String)] = []
        for file in try AccessLevelTests.swiftFiles(under: Self.root) {
            let relative = file.dropFirst(Self.root.count + 1)
            let folder = String(relative.split(separator: "/").first ?? "")
            let text = String(decoding: try RegularFile.read(file, limit: 1 << 22).bytes, as: UTF8.self)
            texts.append((folder, String(relative), text))
            for name in Self.declaredTypes(in: text) where owner[name] == nil { owner[name] = folder }
        }
        #expect(owner["ItemKey"] == "Item" && owner["LogEntry"] == "Log" && owner["JSONValue"] == "Support",
                "the vocabulary is where this test says")
        var violations: [String] = []
        for (folder, file, text) in texts {
            guard let permitted = Self.allowed[folder] else { continue }
            for name in Self.namedIdentifiers(in: text).sorted() {
                guard let other = owner[name], other != folder, !permitted.contains(other) else { continue }
                violations.append("\(file) names \(name) of \(other)/")
            }
        }
        #expect(violations.isEmpty, "\(violations)")
    }
}
