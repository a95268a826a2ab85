import Testing
import TxReconTestSupport
@testable import TxRecon

/// RootCertificateFile=: PEM or DER, several roots, only roots.
@Suite struct RootCertificateTests {
    static let appleDER = AppStoreSamples.directory + "/AppleRootCA-G3.cer"
    static let applePEM = AppStoreSamples.directory + "/AppleRootCA-G3.pem"
    static let appleFingerprint = "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79"

    static func contents(_ path: String) throws -> [UInt8] {
        try RegularFile.read(path, limit: 1 << 20).bytes
    }

    @Test func appleRootCAG3ReadsWithItsSubjectAndFingerprint() throws {
        let roots = try RootCertificate.read(Self.appleDER)
        #expect(roots.count == 1)
        #expect(roots.first?.subject == "C=US,O=Apple Inc.,OU=Apple Certification Authority,CN=Apple Root CA - G3")
        #expect(roots.first?.sha256Fingerprint == Self.appleFingerprint)
    }

    @Test func theShippedRootIsAppleRootCAG3() throws {
        let shipped = AppStoreSamples.directory.split(separator: "/", omittingEmptySubsequences: false)
            .dropLast(4).joined(separator: "/") + "/Config/AppleRootCA-G3.cer"
        #expect(try RootCertificate.read(shipped).map(\.sha256Fingerprint) == [Self.appleFingerprint])
    }

    @Test func pemAndDERGiveTheSameRoot() throws {
        #expect(try RootCertificate.read(Self.applePEM) == RootCertificate.read(Self.appleDER))
    }

    @Test func aPEMFileMayHoldSeveralRoots() throws {
        let directory = TemporaryDirectory()
        let both = directory.write(try Self.contents(Self.applePEM) + Self.contents(TestPKI.path("root")), to: "roots.pem")
        let roots = try RootCertificate.read(both)
        #expect(roots.map(\.subject) == [
            "C=US,O=Apple Inc.,OU=Apple Certification Authority,CN=Apple Root CA - G3",
            "CN=txrecon Test Root CA - G3,OU=Test Certification Authority,O=txrecon tests,C=US",
        ])
    }

    @Test func aDERFileMayHoldSeveralRootsBackToBack() throws {
        let directory = TemporaryDirectory()
        let der = try Self.contents(Self.appleDER)
        let path = directory.write(der + der, to: "roots.der")
        #expect(try RootCertificate.read(path).count == 2)
    }

    @Test func anIntermediateIsRefusedAsARoot() throws {
        #expect(throws: RootCertificateFileError.notRoot(
            index: 1, subject: "CN=txrecon Test Worldwide Developer Relations CA,OU=G6,O=txrecon tests,C=US")) {
            try RootCertificate.read(TestPKI.path("intermediate"))
        }
    }

    @Test func aPEMBlockThatIsNotACertificateIsRefused() throws {
        let directory = TemporaryDirectory()
        let path = directory.write(try Self.contents(Self.applePEM) + Self.contents(TestPKI.directory + "/leaf.key"),
                                   to: "mixed.pem")
        #expect(throws: RootCertificateFileError.notCertificate(format: "PEM")) { try RootCertificate.read(path) }
    }

    @Test func bytesThatAreNoCertificateAreRefused() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("hello", to: "garbage.cer")
        #expect(throws: RootCertificateFileError.notCertificate(format: "DER")) { try RootCertificate.read(path) }
    }

    @Test func anEmptyFileIsRefused() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("", to: "empty.cer")
        #expect(throws: RootCertificateFileError.empty) { try RootCertificate.read(path) }
    }
}
