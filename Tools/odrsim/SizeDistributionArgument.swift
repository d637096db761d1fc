import ArgumentParser
import ODRSimulation

/// A size distribution on the command line: `fixed:64MB`, `uniform:10MB:200MB`, `lognormal:64MB:0.8`.
struct SizeDistributionArgument: ExpressibleByArgument {
    var distribution: SizeDistribution

    init?(argument: String) {
        guard let distribution = SizeDistribution(parsing: argument) else { return nil }
        self.distribution = distribution
    }

    var defaultValueDescription: String { distribution.description }
}
