import ODRFormat

/// The project's seeded generator (ODRFormat's ``SplitMix64``) under the name property tests use:
/// a failing property test can be replayed from the seed it prints.
public typealias SeededGenerator = SplitMix64
