// What a reload cannot change and keeps until a restart: the transport's
// kind (curl or libnats, chosen by URL='s scheme at start) and each
// destination's MaxConcurrentDeliveries= among them.
import Testing
@testable import TxRecon

@Suite struct ReloadRestartOnlyTests {
    func configuration(url: String, destinationURL: String? = nil, workers: Int = 8) -> Configuration {
        var configuration = Configuration(path: "/etc/txrecon/txrecon.conf")
        configuration.backend.url = url
        if let destinationURL {
            var settings = Configuration(path: "/etc/txrecon/destinations/second.conf")
            settings.backend.url = destinationURL
            settings.delivery.maxConcurrentDeliveries = workers
            configuration.destinations = [Destination(name: "second", settings: settings)]
        }
        return configuration
    }

    @Test func switchingAURLBetweenHTTPAndNATSWaitsForARestart() {
        let current = configuration(url: "https://a.example/in", destinationURL: "nats://127.0.0.1:4222")
        var next = configuration(url: "nats://127.0.0.1:4222", destinationURL: "https://b.example/in")
        let waiting = Daemon.keepRestartOnlySettings(of: current, in: &next)
        #expect(waiting == ["URL= (between http(s):// and nats:// or tls://)",
                            "URL= of second (between http(s):// and nats:// or tls://)"])
        #expect(next.backend.url == "https://a.example/in")
        #expect(next.destinations[0].settings.backend.url == "nats://127.0.0.1:4222")
    }

    @Test func aNewURLOfTheSameKindIsReloadedAndADestinationsConcurrencyWaits() {
        let current = configuration(url: "https://a.example/in", destinationURL: "https://b.example/in")
        var next = configuration(url: "https://c.example/in", destinationURL: "https://d.example/in", workers: 2)
        let waiting = Daemon.keepRestartOnlySettings(of: current, in: &next)
        #expect(waiting == ["MaxConcurrentDeliveries= of second"])
        #expect(next.backend.url == "https://c.example/in")
        #expect(next.destinations[0].settings.backend.url == "https://d.example/in")
        #expect(next.destinations[0].settings.delivery.maxConcurrentDeliveries == 8)
    }
}
