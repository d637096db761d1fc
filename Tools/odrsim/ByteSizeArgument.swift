import ArgumentParser
import ODRSimulation

/// A size on the command line: `8GiB`, `512MB`, `300k`, `4096`.
struct ByteSizeArgument: ExpressibleByArgument {
    var bytes: Int64
    /// As written, so `--help` shows a default as `8GiB` rather than as Swift debug text.
    private var text: String

    init?(argument: String) {
        guard let bytes = ByteCount.parse(argument) else { return nil }
        self.bytes = bytes
        text = argument
    }

    var defaultValueDescription: String { text }

    static var defaultCompletionKind: CompletionKind { .default }
}

/// A size distribution on the command line: `fixed:64MB`, `uniform:10MB:200MB`, `lognormal:64MB:0.8`.
struct SizeDistributionArgument: ExpressibleByArgument {
    var distribution: SizeDistribution

    init?(argument: String) {
        guard let distribution = SizeDistribution(parsing: argument) else { return nil }
        self.distribution = distribution
    }

    var defaultValueDescription: String { distribution.description }
}
