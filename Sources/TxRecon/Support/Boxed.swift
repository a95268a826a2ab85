// Boxed: an immutable value behind a reference, so that a large, rarely set
// field (a parked drop, a cached item) costs one pointer in a struct that is
// stored by the hundred thousand.

final class Boxed<Value: Sendable>: Sendable {
    let value: Value

    init(_ value: Value) { self.value = value }
}
