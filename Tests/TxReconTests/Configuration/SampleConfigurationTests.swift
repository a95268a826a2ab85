import Testing
import TxReconTestSupport
@testable import TxRecon

/// Config/txrecon.conf in the source tree.
private let samplePath = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    .dropLast(4).joined(separator: "/") + "/Config/txrecon.conf"

/// The sample's lines, as written.
private func sampleLines() throws -> [Substring] {
    let text = try String(decoding: RegularFile.read(samplePath, limit: 1 << 20).bytes, as: UTF8.self)
    return text.split(separator: "\n", omittingEmptySubsequences: false)
}

/// The key and value of a `Key=value` or `#Key=value` line, nil for prose.
private func assignment(in line: Substring) -> (key: Substring, value: Substring)? {
    let text = line.hasPrefix("#") ? line.dropFirst() : line
    guard let equals = text.firstIndex(of: "="), case let key = text[..<equals],
          !key.isEmpty, key.allSatisfy({ $0.isLetter })
    else { return nil }
    return (key, text[text.index(after: equals)...])
}

@Suite struct SampleConfigurationTests {
    @Test func theSampleConfigurationLoads() throws {
        let configuration = try ConfigurationLoader.load(path: samplePath)
        #expect(configuration.backend.url == "http://127.0.0.1:8080/transactions")
    }

    @Test func theSampleDocumentsEveryKeyUnderItsSection() throws {
        var section = ""
        var documented: Set<String> = []
        for line in try sampleLines() {
            if line.hasPrefix("[") { section = String(line.dropFirst().dropLast()) }
            if let (key, _) = assignment(in: line) { documented.insert("\(section).\(key)") }
        }
        #expect(documented == Set(ConfigurationKey.all.map(\.qualifiedName)))
    }

    @Test func theDefaultsTheSampleShowsAreTheActualDefaults() throws {
        let uncommented = try sampleLines().map { line in
            line.hasPrefix("#") && assignment(in: line)?.value.isEmpty == false ? line.dropFirst() : line
        }
        let directory = TemporaryDirectory()
        let path = directory.write(uncommented.joined(separator: "\n"), to: "txrecon.conf")

        var spelledOut = try ConfigurationLoader.load(path: path)
        var sample = try ConfigurationLoader.load(path: samplePath)
        #expect(spelledOut.origins.count == 35)
        spelledOut.origins = [:]
        sample.origins = [:]
        sample.path = path
        sample.files = spelledOut.files
        #expect(sample.apps.map(\.bundleID) == spelledOut.apps.map(\.bundleID))
        sample.apps = spelledOut.apps
        #expect(spelledOut == sample)
    }
}
