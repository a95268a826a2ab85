// DirectoryReader on a real temporary directory: a scan of new/ or done/
// reads a part at a time, and what it relies on while deliveries remove
// names from the directory it reads.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct DirectoryReaderTests {
    let directory = TemporaryDirectory("txrecon-directory-reader")

    func makeFiles(_ count: Int) -> Set<String> {
        Set((0..<count).map { index in
            let name = "drop-\(index)"
            _ = directory.write("{}", to: name)
            return name
        })
    }

    /// All parts until the empty one, checking each part's size on the way.
    func readAll(_ reader: DirectoryReader, partsOf limit: Int) throws -> [String] {
        var names: [String] = []
        while true {
            let part = try reader.names(upTo: limit)
            #expect(part.names.count + part.unaddressable.count <= limit)
            if part.names.isEmpty && part.unaddressable.isEmpty { return names }
            names += part.names
        }
    }

    @Test func aDirectoryIsReadInPartsOfAtMostTheLimitAndEveryNameOnce() throws {
        let files = makeFiles(10)
        let reader = try DirectoryReader(directory.path)
        let first = try reader.names(upTo: 3)
        #expect(first.names.count == 3)
        let names = try first.names + readAll(reader, partsOf: 3)
        #expect(names.count == 10)
        #expect(Set(names) == files)
    }

    @Test func aNameThatIsNotUTF8ComesApartAsItsBytes() throws {
        _ = makeFiles(2)
        let raw: [UInt8] = Array("bad-".utf8) + [0xFF, 0xFE]
        let path = Array((directory.path + "/").utf8).map { CChar(bitPattern: $0) } + raw.map { CChar(bitPattern: $0) } + [0]
        let fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0o600)
        try #require(fd >= 0)
        close(fd)

        let part = try DirectoryReader(directory.path).names(upTo: 100)
        #expect(Set(part.names) == ["drop-0", "drop-1"])
        #expect(part.unaddressable == [raw])
    }

    @Test func namesRemovedWhileTheDirectoryIsReadLeaveTheOthersReadOnce() throws {
        let files = makeFiles(200)
        let reader = try DirectoryReader(directory.path)
        let first = try reader.names(upTo: 50).names
        // Deliveries remove what a scan handed over, and some it has not
        // reached yet, while the scan reads on.
        for name in first { unlink(directory.path + "/" + name) }
        let unread = files.subtracting(first).sorted().prefix(20)
        for name in unread { unlink(directory.path + "/" + name) }

        let rest = try readAll(reader, partsOf: 50)
        #expect(Set(rest).isDisjoint(with: first))
        #expect(rest.count == Set(rest).count)
        // An unread name removed meanwhile may still come (glibc reads
        // ahead; the scan then finds the file gone); every other name does.
        #expect(Set(rest).isSuperset(of: files.subtracting(first).subtracting(unread)))
        #expect(Set(rest).isSubset(of: files.subtracting(first)))
    }

    @Test func aDirectoryThatCannotBeOpenedNamesItsPath() throws {
        let missing = directory.path + "/missing"
        #expect(throws: SpoolError("opendir", missing, ENOENT)) { try DirectoryReader(missing) }
    }
}
