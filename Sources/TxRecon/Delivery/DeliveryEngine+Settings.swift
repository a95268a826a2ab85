// DeliveryEngine.Settings: the engine's part of the configuration, made
// from a destination's settings (DeliveryDestination) and replaceable on
// reload (DeliveryEngine.reconfigure), and DeliveryEngine.Configured, what
// a configuration makes of the engine.

extension DeliveryEngine {
    /// What the configuration makes of the engine, replaced together on
    /// reload: its settings, the transport, and what every attempt runs
    /// with (the spool, the clock, the redactor, which takes the daemon's
    /// secrets out of the reasons made of the backend's answers before
    /// anything stores or shows them, the destination's name and what
    /// writes the answers owed to Apple). Attempts in flight keep the
    /// transport and context they started with.
    struct Configured {
        var settings: Settings
        var transport: any Transport
        var context: Attempt.Context
    }

    /// The engine's part of the configuration; replaceable on reload.
    package struct Settings: Sendable, Equatable {
        var schedule: RetrySchedule
        var maxConcurrentDeliveries: Int
        /// Queue files larger than this are not read (they were checked at intake).
        var maxFileSize: Int
        /// How long `stop()` lets attempts in flight finish.
        var stopGrace: Duration
        /// Fresh keys at most this many wait for their first attempt in new/
        /// with intake's decoded item in memory (see the header).
        var inboxWindow: Int
        /// How long intake waits for room in that window before it moves
        /// further drops into queue/, and for room below `highWater` before
        /// it leaves further drops in new/: short, for intake also executes
        /// the operator's ctl/ requests.
        var inboxWindowWait: Duration
        /// Intake stops taking drops while this many keys are pending, and
        /// reads new/ again once they have fallen below `lowWater`: a flood
        /// waits in new/ instead of in memory.
        var highWater: Int
        var lowWater: Int
        /// How often a failing backend is probed (BackendHealth).
        var probeSchedule: RetrySchedule
        /// Requests a second at most (RequestRate); nil: no limit.
        var maxRate: Double?
        /// AcceptEnvelopes= and the signature policy (nil with Mode=none):
        /// what an item read back from the spool must still pass
        /// (StoredItemReader), as at intake.
        var acceptEnvelopes: Bool
        var verification: SignedDataPolicy?
        /// The apps, for the journal's TXRECON_APP and the metrics' `app`.
        var apps = AppDirectory([])
        /// While attempts are in flight, how long after a publication the
        /// status an ended attempt changed may wait to be published (see
        /// StatusPublication); zero publishes every change. The
        /// daemon uses `busyStatusInterval`.
        var statusInterval: Duration

        package init(schedule: RetrySchedule = .standard, maxConcurrentDeliveries: Int = 8,
                    maxFileSize: Int = 8 << 20, stopGrace: Duration = .seconds(10),
                    inboxWindow: Int = 4096, inboxWindowWait: Duration = .seconds(1),
                    highWater: Int = 100_000, lowWater: Int = 90_000,
                    probeSchedule: RetrySchedule = .probing, maxRate: Double? = nil,
                    acceptEnvelopes: Bool = true, verification: SignedDataPolicy? = nil,
                    statusInterval: Duration = .zero) {
            self.schedule = schedule
            self.statusInterval = statusInterval
            self.acceptEnvelopes = acceptEnvelopes
            self.verification = verification
            self.probeSchedule = probeSchedule
            self.maxRate = maxRate
            self.maxConcurrentDeliveries = maxConcurrentDeliveries
            self.maxFileSize = maxFileSize
            self.stopGrace = stopGrace
            self.inboxWindow = inboxWindow
            self.inboxWindowWait = inboxWindowWait
            self.highWater = highWater
            self.lowWater = lowWater
        }

        var limits: IntakeBackPressure.Limits {
            IntakeBackPressure.Limits(inboxWindow: inboxWindow, highWater: highWater, lowWater: lowWater)
        }
    }
}
