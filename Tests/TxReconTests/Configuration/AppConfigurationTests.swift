// App files (apps/NAME.conf beside txrecon.conf): how they are read over the
// main file's settings, what is refused with file, line and key, and
// `[Match] App=`.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct AppConfigurationTests {
    let directory = TemporaryDirectory("txrecon-apps")
    var path: String { directory.path + "/txrecon.conf" }

    init() {
        main("")
    }

    /// The main file: a backend, the team's key, and `verification` lines.
    func main(_ verification: String) {
        directory.write("[Backend]\nURL=https://main.example/in\n[Verification]\nEnvironment=Production Sandbox\n"
                        + verification + "[Sweep]\nIssuerID=team-issuer\nKeyID=TEAMKEY\nMaxRequestsPerSecond=20\n",
                        to: "txrecon.conf")
    }

    func app(_ name: String, _ text: String) {
        directory.write(text, to: "apps/" + name)
    }

    func loadError(sourceLocation: SourceLocation = #_sourceLocation) -> ConfigurationError? {
        #expect(throws: ConfigurationError.self, sourceLocation: sourceLocation) { try ConfigurationLoader.load(path: path) }
    }

    @Test func theMainFilesBundleIDIsTheAppMainAsTodayAndNoFileNoApp() throws {
        #expect(try ConfigurationLoader.load(path: path).apps.isEmpty)
        main("BundleID=com.example.one\nAppAppleID=111\n")
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.apps.map(\.name) == ["main"])
        #expect(configuration.apps[0].bundleID == "com.example.one")
        let settings = configuration.settings(for: configuration.apps[0])
        #expect(settings.sweep.issuerID == "team-issuer" && settings.verification.appAppleID == 111)
    }

    @Test func eachAppFileStartsFromTheMainFilesEnvironmentAndSweepButNotItsIdentity() throws {
        main("BundleID=com.example.one\nAppAppleID=111\n")
        app("two.conf", "[Verification]\nBundleID=com.example.two\nAppAppleID=222\n[Sweep]\nMaxRequestsPerSecond=7\n")
        app("three.conf", "[Verification]\nBundleID=com.example.three\nEnvironment=Sandbox\n")
        app("notes.txt", "not an app")
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.apps.map(\.name) == ["main", "three", "two"])
        #expect(configuration.ignoredFiles == [directory.path + "/apps/notes.txt"])
        let two = configuration.settings(for: configuration.apps[2])
        #expect(two.path == directory.path + "/apps/two.conf")
        #expect(two.verification.bundleID == "com.example.two" && two.verification.appAppleID == 222)
        #expect(two.verification.environments == [.production, .sandbox], "the main file's Environment=")
        #expect(two.sweep.bundleID == "com.example.two", "the sweep goes by the app's bundle id")
        #expect(two.sweep.issuerID == "team-issuer" && two.sweep.keyID == "TEAMKEY", "the team's key is shared")
        #expect(two.sweep.maxRequestsPerSecond == 7)
        #expect(two.origins["Sweep.MaxRequestsPerSecond"]?.file == two.path)
        #expect(two.apps.map(\.name) == ["two"], "an app's settings go through that app alone")
        let three = configuration.settings(for: configuration.apps[1])
        #expect(three.verification.appAppleID == nil, "never the main file's AppAppleID=")
        #expect(three.verification.environments == [.sandbox] && three.sweep.maxRequestsPerSecond == 20)
        #expect(configuration.appDirectory.name(forBundleID: "com.example.three") == "three")
        #expect(configuration.appDirectory.name(forBundleID: "com.example.four") == nil)
    }

    @Test func theMainAppsSweepGoesByItsBundleIDAndBesideAppFilesNoOtherOne() throws {
        main("BundleID=com.example.one\nAppAppleID=111\n")
        app("two.conf", "[Verification]\nBundleID=com.example.two\nAppAppleID=222\n")
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.settings(for: configuration.apps[0]).sweep.bundleID == "com.example.one")

        directory.write("[Sweep]\nBundleID=com.example.three\n", to: "txrecon.conf.d/sweep.conf")
        let other = loadError()
        #expect(other?.file == directory.path + "/txrecon.conf.d/sweep.conf" && other?.line == 2)
        #expect(other?.key == "Sweep.BundleID" && other?.message.contains("each app sweeps its own history") == true)

        main("")
        let alone = loadError()
        #expect(alone?.key == "Sweep.BundleID" && alone?.message.contains("that [Verification] does not") == true,
                "\(String(describing: alone))")
    }

    @Test func withoutAppFilesASweepOnlyHostsBundleIDIsTheAppMainAsBefore() throws {
        directory.write("[Backend]\nURL=https://main.example/in\n[Verification]\nMode=none\n"
                        + "[Sweep]\nBundleID=com.example.swept\n", to: "txrecon.conf")
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.apps.map(\.bundleID) == ["com.example.swept"])
    }

    @Test func anAppListingXcodeIsWarnedAboutAsTheMainFileIs() throws {
        directory.write("[Backend]\nURL=https://main.example/in\n", to: "txrecon.conf")
        app("dev.conf", "[Verification]\nBundleID=com.example.dev\nEnvironment=Xcode\n")
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.verificationStartWarning?.contains("Environment=Xcode of the app dev: signatures are "
                                                                 + "not checked") == true)
        #expect(ConfigurationWarnings.daemon(configuration, secrets: BackendSecrets()).contains {
            $0.contains("of the app dev")
        })
    }

    @Test func appsAloneSatisfyModeAppstoreAndThePolicyHoldsEachAppsClaims() throws {
        directory.write("[Verification]\nMode=appstore\nEnvironment=Xcode\n", to: "txrecon.conf.d/v.conf")
        directory.write("[Backend]\nURL=https://main.example/in\n", to: "txrecon.conf")
        app("a.conf", "[Verification]\nBundleID=com.example.a\n")
        app("b.conf", "[Verification]\nBundleID=com.example.b\nEnvironment=LocalTesting\n")
        let configuration = try ConfigurationLoader.load(path: path)
        let policy = try #require(try SignedDataPolicy.load(for: configuration))
        #expect(policy.apps == [AppPolicy(name: "a", bundleID: "com.example.a", appAppleID: nil, environments: [.xcode]),
                                AppPolicy(name: "b", bundleID: "com.example.b", appAppleID: nil,
                                          environments: [.localTesting])])
    }

    @Test func withoutMainBundleIDOrAnyAppModeAppstoreStillRequiresOne() throws {
        let configuration = try ConfigurationLoader.load(path: path)
        let error = #expect(throws: ConfigurationError.self) { try SignedDataPolicy.load(for: configuration) }
        #expect(error?.key == "Verification.BundleID" && error?.message.contains("apps/NAME.conf") == true)
    }

    @Test func anAppFileWithoutABundleIDIsRefusedNamingFileAndKey() {
        app("two.conf", "[Verification]\nAppAppleID=222\n")
        let error = loadError()
        #expect(error?.file == directory.path + "/apps/two.conf" && error?.key == "Verification.BundleID")
        #expect(error?.line == nil && error?.message.contains("is required in an app file") == true)
    }

    @Test func twoAppsWithOneBundleIDAreRefusedNamingTheSecondFileAndLine() {
        main("BundleID=com.example.one\nAppAppleID=111\n")
        app("two.conf", "[Verification]\nAppAppleID=222\nBundleID=com.example.one\n")
        let error = loadError()
        #expect(error?.file == directory.path + "/apps/two.conf" && error?.line == 3)
        #expect(error?.key == "Verification.BundleID")
        #expect(error?.message.contains("is also the bundle id of the app main (\(path))") == true,
                "\(String(describing: error))")
    }

    @Test func aProductionAppWithoutAppAppleIDIsRefusedNamingItsFile() {
        app("two.conf", "[Verification]\nBundleID=com.example.two\n")
        let error = loadError()
        #expect(error?.file == directory.path + "/apps/two.conf" && error?.key == "Verification.AppAppleID")
        #expect(error?.message.contains("lists Production (\(path):4)") == true, "\(String(describing: error))")
    }

    @Test func signedAndUnsignedEnvironmentsAcrossAppsAreRefused() {
        app("a.conf", "[Verification]\nBundleID=com.example.a\nAppAppleID=1\n")
        app("b.conf", "[Verification]\nBundleID=com.example.b\nEnvironment=Xcode\n")
        let error = loadError()
        #expect(error?.file == directory.path + "/apps/b.conf" && error?.line == 3)
        #expect(error?.key == "Verification.Environment" && error?.message.contains("the app a lists") == true)
    }

    @Test(arguments: [
        ("[Verification]\nBundleID=com.example.two\nMode=none\n", 3, "Verification.Mode", "applies to every app"),
        ("[Verification]\nBundleID=com.example.two\nRootCertificateFile=/r.cer\n", 3, "Verification.RootCertificateFile",
         "applies to every app"),
        ("[Verification]\nBundleID=com.example.two\n[Sweep]\nBundleID=com.example.x\n", 4, "Sweep.BundleID",
         "goes by its [Verification] BundleID="),
    ])
    func aKeyThatIsNotAnAppsIsRefused(text: String, line: Int, key: String, says: String) {
        app("two.conf", text)
        let error = loadError()
        #expect(error?.file == directory.path + "/apps/two.conf" && error?.line == line && error?.key == key)
        #expect(error?.message.contains(says) == true, "\(String(describing: error))")
    }

    @Test func aSectionOtherThanVerificationAndSweepIsRefused() {
        app("two.conf", "[Verification]\nBundleID=com.example.two\n[Backend]\nURL=https://x.example/\n")
        let error = loadError()
        #expect(error?.line == 3 && error?.message.hasPrefix("section [Backend] does not belong in an app file") == true)
    }

    @Test(arguments: ["main", "Upper", "a.b"])
    func aFileWhoseNameIsNoAppNameIsRefused(name: String) {
        app(name + ".conf", "[Verification]\nBundleID=com.example.two\nAppAppleID=2\n")
        let error = loadError()
        #expect(error?.file == directory.path + "/apps/\(name).conf")
        #expect(error?.message.contains("is not an app name") == true)
    }

    @Test func matchAppTakesTheNamedAppsItemsByBundleIDOnly() throws {
        main("BundleID=com.example.one\nAppAppleID=111\n")
        app("two.conf", "[Verification]\nBundleID=com.example.two\nAppAppleID=222\n")
        directory.write("[Backend]\nURL=https://two.example/\n[Match]\nApp=two\n", to: "destinations/two.conf")
        let configuration = try ConfigurationLoader.load(path: path)
        let match = configuration.destinations[0].settings.match
        #expect(match.summary == "App=two")
        var fields = ItemFields()
        fields.bundleId = "com.example.two"
        fields.environment = "Production"
        let two = Item(key: ItemKey("1")!, version: ItemVersion(primary: 1), kind: .transaction, fields: fields)
        fields.bundleId = "com.example.one"
        let one = Item(key: ItemKey("2")!, version: ItemVersion(primary: 1), kind: .transaction, fields: fields)
        let envelope = Item(key: ItemKey("3")!, version: ItemVersion(primary: 1), kind: .envelope)
        #expect(match.accepts(two) && !match.accepts(one) && !match.accepts(envelope))
        #expect(configuration.match.accepts(one), "[Backend] without App= takes every app")
        var other = DestinationMatch()
        other.apps = ["main"]
        other.appBundleIDs = ["com.example.one"]
        #expect(!match.overlaps(other) && match.overlaps(DestinationMatch()))
    }

    @Test func matchAppNamingNoAppIsRefusedWithTheApps() {
        main("BundleID=com.example.one\nAppAppleID=111\n")
        directory.write("[Backend]\nURL=https://two.example/\n[Match]\nApp=two\n", to: "destinations/two.conf")
        let error = loadError()
        #expect(error?.file == directory.path + "/destinations/two.conf" && error?.line == 4 && error?.key == "Match.App")
        #expect(error?.message == "names no app \"two\"; the apps are main")
    }
}
