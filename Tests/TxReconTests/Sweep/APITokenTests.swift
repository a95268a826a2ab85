import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct APITokenTests {
    private let key = TestSigningKey()

    private func issuer() throws -> APITokenIssuer {
        APITokenIssuer(issuerID: "issuer-1", keyID: "KEY123", bundleID: "com.example.app",
                       key: try ES256PrivateKey(pem: Array(key.pkcs8PEM.utf8)))
    }

    private func parts(_ token: String) throws -> (header: JSONValue, claims: JSONValue, signingInput: [UInt8], signature: [UInt8]) {
        let jws = try CompactJWS(compact: token)
        return (jws.header, jws.payload, jws.signingInput, jws.signature)
    }

    @Test func theHeaderNamesES256TheKeyAndJWT() throws {
        let token = try #require(try issuer().token(nowMilliseconds: 1_767_225_600_123))
        #expect(try parts(token).header == .object([("alg", .string("ES256")), ("kid", .string("KEY123")), ("typ", .string("JWT"))]))
    }

    @Test func theClaimsAreThoseAppleAsksForLivingFiveMinutes() throws {
        let token = try #require(try issuer().token(nowMilliseconds: 1_767_225_600_123))
        #expect(try parts(token).claims == .object([
            ("iss", .string("issuer-1")), ("iat", .integer(1_767_225_600)), ("exp", .integer(1_767_225_900)),
            ("aud", .string("appstoreconnect-v1")), ("bid", .string("com.example.app")),
        ]))
    }

    @Test func theSignatureIsRawRAndSVerifiableWithThePublicKey() throws {
        let token = try #require(try issuer().token(nowMilliseconds: 1_767_225_600_000))
        let (_, _, signingInput, signature) = try parts(token)
        #expect(signature.count == 64)
        #expect(key.verifies(signature: signature, of: signingInput))
        #expect(!TestSigningKey().verifies(signature: signature, of: signingInput))
    }

    @Test func everyTokenIsSignedAfresh() throws {
        let issuer = try issuer()
        #expect(issuer.token(nowMilliseconds: 1_767_225_600_000) != issuer.token(nowMilliseconds: 1_767_225_600_000))
    }

    @Test func shortDERIntegersArePaddedToThirtyTwoBytes() throws {
        // SEQUENCE { INTEGER 1, INTEGER 0x00FF… (33 bytes, leading zero for the sign) }
        let s = [UInt8](repeating: 0xFF, count: 32)
        let der: [UInt8] = [0x30, 3 + 2 + 33, 0x02, 0x01, 0x01, 0x02, 33, 0x00] + s
        let raw = try #require(ES256PrivateKey.joseSignature(fromDER: der))
        #expect(raw == [UInt8](repeating: 0, count: 31) + [1] + s)
    }

    @Test func aKeyOnAnotherCurveIsRefused() {
        #expect(throws: ES256PrivateKey.Failure.wrongCurve("secp384r1")) {
            try ES256PrivateKey(pem: Array(TestSigningKey(curve: "P-384").pkcs8PEM.utf8))
        }
    }

    @Test func somethingThatIsNoPEMKeyIsRefused() {
        #expect(throws: ES256PrivateKey.Failure.notPEM) { try ES256PrivateKey(pem: Array("not a key".utf8)) }
    }
}

@Suite struct SweepCredentialsTests {
    private let directory = TemporaryDirectory()

    private func configuration(_ sweep: String) throws -> Configuration {
        let path = directory.write("[Backend]\nURL=http://127.0.0.1:1/\n[Sweep]\n\(sweep)\n", to: "txrecon.conf")
        return try ConfigurationLoader.load(path: path)
    }

    private let ids = "BundleID=com.example.app\nIssuerID=issuer-1\nKeyID=KEY123"

    @Test func aMissingBundleIDIsAConfigurationErrorNamingTheKey() throws {
        let configuration = try configuration("IssuerID=i\nKeyID=k")
        #expect(throws: ConfigurationError.self) { _ = try SweepCredentials.load(for: configuration, environment: [:]) }
        do {
            _ = try SweepCredentials.load(for: configuration, environment: [:])
        } catch {
            #expect(error.key == "Sweep.BundleID" && error.message.contains("required"))
        }
    }

    @Test func theKeyComesFromTheCredentialWhenPrivateKeyFileIsUnset() throws {
        directory.write(TestSigningKey().pkcs8PEM, to: "credentials/appstore-key", mode: 0o400)
        let issuer = try SweepCredentials.load(for: try configuration(ids),
                                               environment: ["CREDENTIALS_DIRECTORY": directory.path + "/credentials"])
        #expect(issuer.keyID == "KEY123" && issuer.token(nowMilliseconds: 0) != nil)
    }

    @Test func theEmptyFallbackCredentialAsksForTheKey() throws {
        directory.write("\n", to: "credentials/appstore-key", mode: 0o400)
        let configuration = try configuration(ids)
        do {
            _ = try SweepCredentials.load(for: configuration,
                                          environment: ["CREDENTIALS_DIRECTORY": directory.path + "/credentials"])
            Issue.record("loaded")
        } catch {
            #expect(error.key == "Sweep.PrivateKeyFile" && error.message.contains("missing or empty"))
        }
    }

    @Test func aKeyFileOthersCanReadIsRefusedWithoutShowingIt() throws {
        let key = TestSigningKey()
        let path = directory.write(key.pkcs8PEM, to: "key.p8", mode: 0o644)
        let configuration = try configuration(ids + "\nPrivateKeyFile=\(path)")
        do {
            _ = try SweepCredentials.load(for: configuration, environment: [:])
            Issue.record("loaded")
        } catch {
            #expect(error.line == 7 && error.message.contains("readable by every user"))
            #expect(!error.description.contains("PRIVATE KEY"))
        }
    }

    /// The commands that use the key run as txrecon, and group txrecon
    /// holds the producers: a key its group can read is any producer's.
    @Test func aKeyFileItsGroupCanReadIsRefusedSayingHowToFixIt() throws {
        let path = directory.write(TestSigningKey().pkcs8PEM, to: "key.p8", mode: 0o640)
        let configuration = try configuration(ids + "\nPrivateKeyFile=\(path)")
        do {
            _ = try SweepCredentials.load(for: configuration, environment: [:])
            Issue.record("loaded")
        } catch {
            #expect(error.line == 7 && error.message.contains("readable by its group (mode 0640)"), "\(error)")
            #expect(error.message.contains("chmod 0600 \(path)"))
        }
        let owners = directory.write(TestSigningKey().pkcs8PEM, to: "owner.p8", mode: 0o600)
        let readable = try self.configuration(ids + "\nPrivateKeyFile=\(owners)")
        _ = try SweepCredentials.load(for: readable, environment: [:])
    }

    @Test func aFileThatIsNoKeyIsRefusedNamingIt() throws {
        let path = directory.write("not a key\n", to: "key.p8", mode: 0o600)
        let configuration = try configuration(ids + "\nPrivateKeyFile=\(path)")
        do {
            _ = try SweepCredentials.load(for: configuration, environment: [:])
            Issue.record("loaded")
        } catch {
            #expect(error.message.hasPrefix(path + " is not an unencrypted PEM private key"))
        }
    }
}
