// The fuzzer's seed corpus and every input it ever crashed on
// (Tests/Fuzz/regressions/), replayed through the decoder in every `make
// test`: a fixed crash stays fixed without running the fuzzer.
import Glibc
import Testing
@testable import TxRecon

@Suite
struct FuzzCorpusTests {
    static let fuzzDirectory: String = {
        var path = #filePath
        for _ in 0..<2 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/Fuzz"
    }()

    static var inputs: [String] {
        ["corpus", "regressions"].flatMap { folder in
            let directory = fuzzDirectory + "/" + folder
            return ((try? SystemCall.listDirectory(directory)) ?? []).sorted().map { directory + "/" + $0 }
        }
    }

    @Test func theCorpusIsThere() {
        #expect(FuzzCorpusTests.inputs.count >= 20)
    }

    @Test(arguments: FuzzCorpusTests.inputs)
    func everyCorpusInputDecodesOrIsRefusedWithAReason(path: String) throws {
        let bytes = try SystemCall.readFile(path, limit: 1 << 20)
        for accept in [true, false] {
            do {
                if case let .item(item) = try InputDecoder(acceptEnvelopes: accept).decode(bytes) {
                    #expect(ItemKey(fileName: item.key.fileName) == item.key)
                }
            } catch {
                #expect(!error.code.isEmpty && !error.detail.isEmpty)
            }
        }
    }
}
