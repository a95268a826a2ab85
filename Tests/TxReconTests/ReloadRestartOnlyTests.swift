// What a reload cannot change: a URL= whose scheme changes (http, https,
// nats, tls) refuses it, for the transport, its TLS settings and its HTTP
// version were made for the running one; each destination's
// MaxConcurrentDeliveries= waits for a restart, and so does the receiver's
// TextfileDirectory=.
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

    @Test func aURLWhoseSchemeChangesRefusesTheReload() {
        let current = configuration(url: "https://a.example/in", destinationURL: "nats://127.0.0.1:4222")
        #expect(Daemon.transportSwitch(from: current, to: configuration(url: "nats://127.0.0.1:4222",
                                                                        destinationURL: "nats://127.0.0.1:4222"))
                == "URL=")
        #expect(Daemon.transportSwitch(from: current, to: configuration(url: "https://a.example/in",
                                                                        destinationURL: "https://b.example/in"))
                == "URL= of second")
        // HTTPVersion=2 kept until a restart must not meet a cleartext URL.
        #expect(Daemon.transportSwitch(from: current, to: configuration(url: "http://a.example/in",
                                                                        destinationURL: "nats://127.0.0.1:4222"))
                == "URL=")
        #expect(Daemon.transportSwitch(from: current, to: configuration(url: "HTTPS://c.example/in",
                                                                        destinationURL: "nats://10.0.0.1:4222"))
                == nil, "same schemes, other addresses: reloaded")
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

    /// `txrecon receive` makes its metrics reporter at start: a new
    /// TextfileDirectory= waits for its restart, and its reload says so.
    @Test func theReceiversMetricsDirectoryWaitsForItsRestart() {
        var current = configuration(url: "https://a.example/in")
        current.metrics.textfileDirectory = "/var/lib/node_exporter"
        var next = current
        next.metrics.textfileDirectory = "/srv/metrics"
        let waiting = ConfigurationKey.keepRunningValues(of: current, in: &next, reads: Receiver.reads)
        #expect(waiting == ["TextfileDirectory="])
        #expect(next.metrics.textfileDirectory == "/var/lib/node_exporter")
    }
}
