// AccessLevelTests: the package's one product is the executable, so nothing
// in Sources is `public` or `open`: `package` is the widest access a
// declaration has (issue 44, "Write the rules down").
import Glibc
import Testing
@testable import TxRecon

@Suite struct AccessLevelTests {
    /// The repository's Sources/, from this file's place in Tests/TxReconTests/.
    static let sources = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        .dropLast(3).joined(separator: "/") + "/Sources"

    /// Every .swift file under `directory`.
    static func swiftFiles(under directory: String) throws -> [String] {
        var found: [String] = []
        for name in try SystemCall.listDirectory(directory) where !name.hasPrefix(".") {
            let path = directory + "/" + name
            guard let info = try SystemCall.linkStatus(path) else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                found += try swiftFiles(under: path)
            } else if name.hasSuffix(".swift") {
                found.append(path)
            }
        }
        return found
    }

    /// Whether `line` declares something `public` or `open`: the modifier
    /// before a declaration keyword, after any attributes and other
    /// modifiers (`@inlinable public static func`, `public final class`).
    static func declaresPublicly(_ line: Substring) -> Bool {
        let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let words = code.split(whereSeparator: { $0 == " " || $0 == "\t" })
        let declarations: Set<Substring> = ["func", "var", "let", "struct", "class", "enum", "protocol", "init",
                                            "extension", "typealias", "actor", "subscript", "case"]
        for (index, word) in words.enumerated() where word == "public" || word == "open" || word.hasPrefix("public(") {
            let before = words[..<index]
            guard before.allSatisfy({ $0.hasPrefix("@") || ["static", "final", "override", "nonisolated"].contains($0) })
            else { continue }
            if words[(index + 1)...].contains(where: { declarations.contains($0) }) { return true }
        }
        return false
    }

    @Test func theCheckFindsAPublicDeclarationAndPassesOverPackageAndProse() {
        #expect(Self.declaresPublicly("    public func run() {"))
        #expect(Self.declaresPublicly("@inlinable public static var x = 1"))
        #expect(Self.declaresPublicly("open class Base {}"))
        #expect(!Self.declaresPublicly("    package func run() {"))
        #expect(!Self.declaresPublicly("    // a public CA, open to all"))
        #expect(!Self.declaresPublicly("        \"the certificate must chain to a public CA, match the host \""))
    }

    @Test func nothingInSourcesIsPublicOrOpen() throws {
        var found: [String] = []
        for file in try Self.swiftFiles(under: Self.sources) {
            let text = String(decoding: try RegularFile.read(file, limit: 1 << 22).bytes, as: UTF8.self)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where Self.declaresPublicly(line) {
                found.append("\(file.dropFirst(Self.sources.count + 1)):\(number + 1): \(line)")
            }
        }
        #expect(found.isEmpty, "\(found)")
        #expect(try Self.swiftFiles(under: Self.sources).count > 100, "Sources was found")
    }
}
