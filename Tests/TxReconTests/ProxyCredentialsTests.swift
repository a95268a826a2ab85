// ProxyCredentials: which parts of the environment's proxy settings are
// secrets for the redactor.
import Testing
@testable import TxRecon

@Suite struct ProxyCredentialsTests {
    @Test func aProxyWithAUserGivesItsSettingUserPartAndPassword() {
        let secrets = ProxyCredentials.secrets(in: ["https_proxy": "http://carol:pa#ss@proxy:3128",
                                                    "ALL_PROXY": "dave:secret-9@10.0.0.1:1080",
                                                    "no_proxy": "user@example", "http_proxy": "http://proxy:3128",
                                                    "PATH": "a@b"])
        #expect(Set(secrets) == ["http://carol:pa#ss@proxy:3128", "carol:pa#ss", "pa#ss",
                                 "dave:secret-9@10.0.0.1:1080", "dave:secret-9", "secret-9"])
    }
}
