// [Outbox]: AnswersFrom= must name an HTTP destination, and the other keys
// are refused out of range, each with the file, the line and the key.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct OutboxConfigurationTests {
    let directory = TemporaryDirectory("txrecon-outbox-config")
    var path: String { directory.path + "/txrecon.conf" }

    func write(_ outbox: String) {
        directory.write("[Backend]\nURL=https://main.example/in\n[Outbox]\n" + outbox, to: "txrecon.conf")
    }

    func loadError() -> ConfigurationError? {
        do {
            _ = try ConfigurationLoader.load(path: path)
            return nil
        } catch {
            return error
        }
    }

    @Test func answersFromADestinationFile() throws {
        write("AnswersFrom=crm\n")
        directory.write("[Backend]\nURL=https://crm.example/in\n", to: "destinations/crm.conf")
        #expect(try ConfigurationLoader.load(path: path).outbox.answersFrom == "crm")
    }

    @Test func answersFromNoSuchDestinationNamesTheLineAndTheDestinations() {
        write("FinishTransactions=yes\nAnswersFrom=crm\n")
        let error = loadError()
        #expect(error?.file == path && error?.line == 5 && error?.key == "Outbox.AnswersFrom")
        #expect(error?.message.contains("names no destination (there are: backend)") == true)
    }

    @Test func answersFromAStreamIsRefused() {
        write("AnswersFrom=events\n")
        directory.write("[Backend]\nURL=nats://127.0.0.1:4222\nStream=APPSTORE\n", to: "destinations/events.conf")
        #expect(loadError()?.message.contains("a JetStream destination") == true)
    }

    @Test func aWarningOutsideTheTwelveHoursIsRefused() {
        write("ConsumptionDeadlineWarning=12h\n")
        let error = loadError()
        #expect(error?.line == 4 && error?.key == "Outbox.ConsumptionDeadlineWarning")
        #expect(error?.message.contains("not between 10min and 11h") == true)
        #expect(ConfigurationError.exitStatus == 78)
    }
}
