// SystemdNotifier against a real notify socket. sd_notify(3) and
// sd_watchdog_enabled(3) read the process environment, so each case runs in
// a child process (an exit test) that sets its own NOTIFY_SOCKET or
// WATCHDOG_* variables; the test runner's environment is never changed.
import Glibc
import Testing
import TxRecon
import TxReconTestSupport

@Suite struct SystemdNotifierTests {
    @Test func notificationReachesTheNotifySocketAsOneMessage() async {
        let socket = NotifySocket()
        await #expect(processExitsWith: .success) { [path = socket.path as String] in
            setenv("NOTIFY_SOCKET", path, 1)
            SystemdNotifier().notify("READY=1\nSTATUS=scanning the spool")
        }
        let ready = await socket.waitFor("READY=1", timeout: .seconds(10))
        #expect(ready?.value(of: "STATUS") == "scanning the spool")
        #expect(socket.messages.count == 1)
    }

    @Test func notifySocketRecordsTheSendingProcess() async {
        let socket = NotifySocket()
        await #expect(processExitsWith: .success) { [path = socket.path as String] in
            setenv("NOTIFY_SOCKET", path, 1)
            SystemdNotifier().notify("MAINPID=\(getpid())")
        }
        let message = await socket.waitFor({ $0.value(of: "MAINPID") != nil }, timeout: .seconds(10))
        #expect(message != nil)
        #expect(message?.senderPID.map(String.init) == message?.value(of: "MAINPID"))
    }

    @Test func withoutNotifySocketNothingIsSentOrLogged() async {
        await #expect(processExitsWith: .success) {
            unsetenv("NOTIFY_SOCKET")
            let log = RecordingLogSink()
            SystemdNotifier(log: log).notify("READY=1")
            #expect(log.entries.isEmpty)
        }
    }

    @Test func unreachableSocketIsReportedOnceUntilASendSucceeds() async {
        let socket = NotifySocket()
        await #expect(processExitsWith: .success) { [path = socket.path as String] in
            setenv("NOTIFY_SOCKET", path + ".missing", 1)
            let log = RecordingLogSink()
            let notifier = SystemdNotifier(log: log)
            notifier.notify("WATCHDOG=1")
            notifier.notify("WATCHDOG=1")
            #expect(log.entries.count == 1)
            #expect(log.entries.first?.priority == .warning)
            setenv("NOTIFY_SOCKET", path, 1)
            notifier.notify("WATCHDOG=1")
            setenv("NOTIFY_SOCKET", path + ".missing", 1)
            notifier.notify("WATCHDOG=1")
            #expect(log.entries.count == 2)
        }
    }

    @Test func watchdogPingIntervalIsHalfTheTimeout() async {
        await #expect(processExitsWith: .success) {
            setenv("WATCHDOG_USEC", "30000000", 1)
            setenv("WATCHDOG_PID", "\(getpid())", 1)
            #expect(SystemdNotifier().watchdogPingInterval == .seconds(15))
        }
    }

    @Test func noWatchdogWithoutWatchdogUsec() async {
        await #expect(processExitsWith: .success) {
            unsetenv("WATCHDOG_USEC")
            #expect(SystemdNotifier().watchdogPingInterval == nil)
        }
    }

    @Test func watchdogMeantForAnotherProcessIsIgnored() async {
        await #expect(processExitsWith: .success) {
            setenv("WATCHDOG_USEC", "30000000", 1)
            setenv("WATCHDOG_PID", "\(getppid())", 1)
            #expect(SystemdNotifier().watchdogPingInterval == nil)
        }
    }
}
