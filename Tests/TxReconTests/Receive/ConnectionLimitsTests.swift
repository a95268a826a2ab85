// ConnectionLimits: the bookkeeping behind MaxConnections= and
// MaxConnectionsPerAddress=, fed the notifications libmicrohttpd gives.
import Testing
@testable import TxRecon

@Suite struct ConnectionLimitsTests {
    @Test func anAddressAtItsLimitIsRefusedWhileOthersAreAdmitted() {
        let limits = ConnectionLimits(connections: 10, connectionsPerAddress: 2)
        limits.opened(1, client: "10.0.0.1")
        #expect(limits.admit("10.0.0.1") == nil)
        limits.opened(2, client: "10.0.0.1")
        #expect(limits.admit("10.0.0.1") == .connectionsPerAddress)
        #expect(limits.admit("10.0.0.2") == nil, "another address has its own count")
        limits.closed(1)
        #expect(limits.admit("10.0.0.1") == nil, "a place freed is taken again")
    }

    @Test func allAddressesTogetherAtTheLimitAreRefused() {
        let limits = ConnectionLimits(connections: 3, connectionsPerAddress: 3)
        for (connection, client) in [(UInt(1), "10.0.0.1"), (2, "10.0.0.2"), (3, "10.0.0.3")] {
            #expect(limits.admit(client) == nil)
            limits.opened(connection, client: client)
        }
        #expect(limits.admit("10.0.0.4") == .connections)
        #expect(limits.value(of: .connections) == 3 && limits.value(of: .connectionsPerAddress) == 3)
        limits.closed(2)
        #expect(limits.admit("10.0.0.4") == nil && limits.open == 2)
    }

    @Test func aNotificationTwiceCountsOnce() {
        let limits = ConnectionLimits(connections: 2, connectionsPerAddress: 2)
        limits.opened(7, client: "::1")
        limits.opened(7, client: "::1")
        #expect(limits.open == 1 && limits.admit("::1") == nil)
        limits.closed(7)
        limits.closed(7)
        limits.closed(8)
        #expect(limits.open == 0)
        limits.opened(9, client: "::1")
        limits.opened(10, client: "::1")
        #expect(limits.admit("::1") == .connections, "nothing was counted below zero")
    }
}
