import ArgumentParser
import Foundation
import ODRBuilder

/// `odrpack publish CATALOG DEST`: uploads a built catalog, catalog.json last.
struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Upload a built catalog to a folder or an rclone remote, catalog.json last.",
        discussion: """
            Uploads every pack, then every manifest, reads them back, and only then uploads \
            catalog.json (under a temporary name, renamed into place), so a client never sees a \
            catalog.json that names a file the destination lacks. Files the destination already \
            holds with the same size (and, in a local folder, the same SHA-256) are skipped, so an \
            update uploads only what changed, and a publish that failed halfway finishes when run \
            again.

            DEST is a local folder (an nginx root, a mounted bucket) or an rclone remote, \
            remote:bucket/path (S3, GCS, R2, Azure, WebDAV, SFTP; set it up with 'rclone config'). \
            rclone must be installed for a remote (apt install rclone). On remotes, packs and \
            manifests get 'Cache-Control: public, max-age=31536000, immutable' and catalog.json \
            'public, max-age=SECONDS' (--catalog-max-age). A local folder has no headers: set them \
            in the web server (docs/HOSTING.md).

            With --delete, once catalog.json is in place and read back, the files the destination \
            holds under packs/, versions/ and meta/ that no version of the catalog references are \
            deleted (a pruned version's manifest, packs and metadata; leftovers of interrupted \
            uploads); nothing else in the destination is touched, and nothing a kept version uses \
            is ever deleted. A delete cut short is finished by running publish --delete again. \
            --delete-after-versions N keeps the files of dropped versions up to N versions older \
            than the newest, for CDN edges that still serve their catalog.json (its max-age, or \
            longer after an outage). With --dry-run, the files that would be deleted are listed too.

            With --check-url, catalog.json is then fetched through the public URL and every pack \
            and manifest gets a HEAD request; a stale edge (an older catalog.json, a 404 for a new \
            pack) is reported and the exit status is 1.

            Examples:
              odrpack publish out/catalog /srv/www/game --dry-run
              odrpack publish out/catalog r2:game-cdn/live --check-url https://cdn.example.com/live/
              odrpack publish out/catalog s3:bucket/game --catalog-max-age 30 --rclone-arg=--s3-no-check-bucket
              odrpack prune out/catalog --keep 2 && odrpack publish out/catalog r2:game-cdn/live --delete --delete-after-versions 1
            """
    )

    @Argument(help: ArgumentHelp("The catalog folder odrpack build wrote.", valueName: "catalog"))
    var catalog: String

    @Argument(help: ArgumentHelp("A local folder, or an rclone remote:bucket/path.", valueName: "dest"))
    var destination: String

    @Flag(help: "Print what would be uploaded and skipped; write nothing.")
    var dryRun = false

    @Option(help: ArgumentHelp("After publishing, fetch catalog.json through this public URL and HEAD every file it names.", valueName: "url"))
    var checkURL: String?

    @Option(help: ArgumentHelp("The max-age of catalog.json on remotes, in seconds: how long an edge may serve the previous version.", valueName: "seconds"))
    var catalogMaxAge: Int = 60

    @Option(help: ArgumentHelp("The rclone executable (a name on PATH or a path).", valueName: "path"))
    var rclone = "rclone"

    @Option(name: .customLong("rclone-arg"), parsing: .unconditionalSingleValue,
            help: ArgumentHelp("An extra argument for every rclone call (repeat): --rclone-arg=--config --rclone-arg=rclone.conf.", valueName: "arg"))
    var rcloneArguments: [String] = []

    @Flag(help: "After catalog.json is in place, delete the files under packs/, versions/ and meta/ that no version of the catalog references.")
    var delete = false

    @Option(help: ArgumentHelp("With --delete, keep the files of dropped versions up to N versions older than the newest (for edges still serving their catalog.json). Default 0.", valueName: "N"))
    var deleteAfterVersions: Int?

    @Flag(help: "Print no progress, only the summary.")
    var quiet = false

    func validate() throws {
        guard (0...31_536_000).contains(catalogMaxAge) else {
            throw ValidationError("--catalog-max-age must be 0 to 31536000 seconds (a year); \(catalogMaxAge) is not.")
        }
        if let checkURL {
            guard let url = URL(string: checkURL), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
                throw ValidationError("--check-url must be the http:// or https:// URL clients use for the catalog's folder; '\(checkURL)' is not.")
            }
        }
        guard !destination.isEmpty else { throw ValidationError("DEST must be a folder or an rclone remote:path.") }
        if let deleteAfterVersions {
            guard delete else { throw ValidationError("--delete-after-versions needs --delete.") }
            guard (0...1_000_000).contains(deleteAfterVersions) else {
                throw ValidationError("--delete-after-versions must be 0 to 1000000 versions; \(deleteAfterVersions) is not.")
            }
        }
    }

    func run() async throws {
        let quiet = self.quiet
        let publisher = CatalogPublisher(
            catalog: CatalogDirectory(root: URL(filePath: catalog, directoryHint: .isDirectory)),
            destination: .parse(destination),
            options: .init(catalogMaxAge: catalogMaxAge, rclone: rclone, rcloneArguments: rcloneArguments),
            progress: { step in
                guard !quiet else { return }
                switch step {
                case .uploading(let object, let index, let count):
                    print("[\(index)/\(count)] upload \(object.path) (\(Self.bytes(object.bytes)))")
                case .readingBack(let files):
                    print("read back \(files) file(s)")
                case .renaming(let from, let to):
                    print("rename \(from) -> \(to)")
                case .deleting(let path, let index, let count):
                    print("[\(index)/\(count)] delete \(path)")
                }
            })
        try await reportingLibraryErrors {
            if dryRun {
                let plan = try publisher.plan()
                print("dry run: nothing is written to \(publisher.destination)")
                for object in plan.uploads { print("upload  \(object.path) (\(Self.bytes(object.bytes)))") }
                for object in plan.present { print("present \(object.path)") }
                print("\(plan.uploads.count) to upload (\(Self.bytes(plan.uploadBytes))), \(plan.present.count) already there; catalog.json last")
                if delete {
                    let deletions = try publisher.deletionPlan(keepingDroppedVersions: deleteAfterVersions ?? 0, requirePublished: false)
                    for deletion in deletions.deletions { print("delete  \(deletion.path) (\(Self.bytes(deletion.bytes)))") }
                    for path in deletions.keptForGrace { print("keep    \(path) (grace)") }
                    print(Self.deletionSummary(deletions, done: false))
                }
                return
            }
            let report = try publisher.publish()
            print("published to \(publisher.destination): \(report.plan.uploads.count) uploaded (\(Self.bytes(report.plan.uploadBytes))), \(report.plan.present.count) already there, \(report.verified) read back")
            if delete {
                let deletions = try publisher.deletionPlan(keepingDroppedVersions: deleteAfterVersions ?? 0)
                try publisher.delete(deletions)
                print(Self.deletionSummary(deletions, done: true))
            }
            guard let checkURL, let url = URL(string: checkURL) else { return }
            let check = await PublishedCatalogCheck(baseURL: url, expected: try publisher.objects()).run()
            let problems = check.problems
            print("checked \(url.absoluteString): catalog.json \(check.catalogIsCurrent ? "current" : "NOT current")\(check.catalogCacheControl.map { " (Cache-Control: \($0))" } ?? ""), \(check.checked) file(s), \(check.missing.count) missing")
            for problem in problems { print("stale: \(problem)") }
            if !problems.isEmpty {
                throw BuildError(.publishStaleEdge, "\(problems.count) problem(s) through \(url.absoluteString); an edge serves an older state (it clears within catalog.json's max-age), or an origin did not receive the upload",
                                 file: url.absoluteString)
            }
        }
    }

    /// `deleted 12 file(s) (3.1 MiB) no version references; kept 4 file(s) of versions 2 for the grace`.
    static func deletionSummary(_ plan: CatalogPublisher.DeletionPlan, done: Bool) -> String {
        var line = "\(done ? "deleted" : "would delete") \(plan.deletions.count) file(s) (\(bytes(plan.deletionBytes))) no version references"
        if !plan.keptForGrace.isEmpty {
            line += "; kept \(plan.keptForGrace.count) file(s) of version(s) \(plan.graceVersions.map(String.init).joined(separator: ", ")) for the grace"
        }
        return line
    }

    static func bytes(_ count: Int64) -> String {
        ByteCount.format(count)
    }
}
