import Testing
@testable import TxRecon

@Suite struct ByteSizeTests {
    @Test(arguments: [
        ("4096", 4096),
        ("4096B", 4096),
        ("512K", 512 * 1024),
        ("512KB", 512 * 1024),
        ("1M", 1 << 20),
        ("1 M", 1 << 20),
        ("1MB", 1 << 20),
        ("1G", 1 << 30),
        ("2T", 2 << 40),
        ("0", 0),
        (" 64K ", 64 * 1024),
    ] as [(String, Int)])
    func sizesParseToTheirByteCount(text: String, expected: Int) {
        #expect(ByteSize.parse(text) == expected)
    }

    @Test(arguments: ["", "K", "1k", "1m", "1.5M", "-1", "+1", "1KiB", "1BB", "1 M B", "1P", "one", "9223372036854775807K"])
    func malformedSizesAreRefused(text: String) {
        #expect(ByteSize.parse(text) == nil)
    }
}
