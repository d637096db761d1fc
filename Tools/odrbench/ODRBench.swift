import ArgumentParser

/// `odrbench`: performance figures, each a ratio against a baseline measured in the same run.
@main
struct ODRBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "odrbench",
        abstract: "Measure the project's performance targets against baselines run alongside.",
        discussion: """
            Run it in release mode: swift run -c release odrbench <suite>. Every suite prints its \
            own figures and the baseline it compares to, so the ratios hold on any machine.
            """,
        subcommands: [FormatBench.self, FormatWorker.self, TransferBench.self, SimBench.self, BuildBench.self, BuildWorker.self, InstallBench.self, DeltaBench.self, RequestBench.self, SoakBench.self, StoreBench.self, PeersBench.self]
    )
}
