import ArgumentParser
import ODRCommandLine
import ODRFormat

/// `odrsim`: simulate weeks of play on a virtual device and compare purge policies.
@main
struct ODRSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "odrsim",
        abstract: "Simulate how the runtime downloads and purges packs over weeks of play, under several purge policies.",
        discussion: """
            Before shipping, tune tags, pack sizes and preservation priorities
            by replaying how devices would use them. odrsim plays a workload on
            a virtual device (a disk shared with other apps, a network with
            bandwidth, latency and offline periods) with the runtime's own
            ledger and purge planner, once per policy, and prints what each
            did. Months of play take seconds; the same seed gives the same
            numbers.

            Start with:
              odrsim run --workload levels --disk 8GiB --days 30 \\
                --policy all --seed 1 --svg levels.svg

            'odrsim help run' explains workloads, policies, the device and the
            outputs; docs/ODRSIM.md the trace format.
            """,
        version: ODRVersion.current,
        subcommands: [RunCommand.self],
        defaultSubcommand: RunCommand.self
    )

    static func main() async { await runReportingErrors() }
}
