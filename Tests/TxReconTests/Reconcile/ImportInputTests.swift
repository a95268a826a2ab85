// ImportInputTests: how `txrecon import` reads a file of ids.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct ImportInputTests {
    @Test func idsAreReadWithTheirLinesWhateverTheLineEndsAndSpaces() throws {
        let directory = TemporaryDirectory("txrecon-import-input")
        let path = directory.write("# customers\r\n 7300 \r\n\r\n\t7301\n", to: "ids.txt")
        let customers = try ImportRun.readIDs(path)
        #expect(customers == [Importer.Customer(id: "7300", source: path + ":2"),
                              Importer.Customer(id: "7301", source: path + ":4")])
    }

    @Test func aByteOrderMarkBeforeTheFirstIdIsNoPartOfIt() throws {
        let directory = TemporaryDirectory("txrecon-import-input")
        let path = directory.write("\u{FEFF}7300\r\n7301\r\n", to: "ids.csv")
        #expect(try ImportRun.readIDs(path).map(\.id) == ["7300", "7301"])
    }

    @Test func aCheckpointBelongsToTheIdsTheAppAndTheEnvironmentTogether() {
        var sandbox = SweepSettings()
        sandbox.bundleID = "com.example.app"
        sandbox.environment = .sandbox
        var production = sandbox
        production.environment = .production
        var otherApp = sandbox
        otherApp.bundleID = "com.example.other"
        let ids = ["7300", "7301"]
        let digest = ImportCheckpoint.digest(of: ids, sweep: sandbox)
        #expect(digest == ImportCheckpoint.digest(of: ids, sweep: sandbox))
        #expect(digest != ImportCheckpoint.digest(of: ids, sweep: production), "a Sandbox run's place is not Production's")
        #expect(digest != ImportCheckpoint.digest(of: ids, sweep: otherApp))
        #expect(digest != ImportCheckpoint.digest(of: ["7300"], sweep: sandbox))
    }

    @Test func aLineThatIsNoIdIsNamedWithItsFileAndLine() {
        let directory = TemporaryDirectory("txrecon-import-input")
        let path = directory.write("7300\n73O1\n", to: "ids.txt")
        do {
            _ = try ImportRun.readIDs(path)
            Issue.record("took a line that is no id")
        } catch {
            #expect(error.reason.hasPrefix("\(path):2: \"73O1\" is not an id"), "\(error.reason)")
        }
    }
}
