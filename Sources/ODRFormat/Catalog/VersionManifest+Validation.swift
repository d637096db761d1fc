extension VersionManifest {
    /// Checks every rule of the format: ranges, paths, uniqueness and references.
    ///
    /// - Throws: ``FormatError`` naming the first offending field.
    public func validate() throws(FormatError) {
        guard Self.isWholeFormatVersion(formatVersion) else { throw Self.unsupported(formatVersion) }
        guard formatVersion >= Self.formatVersion(forAxes: variantAxes) else {
            throw FormatError(.invalidValue, "A manifest with variant axes must have format version 2, so that older runtimes refuse it; found \(formatVersion).", field: "formatVersion")
        }
        let files = self.files
        if formatVersion < Self.chunkedFormatVersion, let i = files.firstIndex(where: { !$0.chunks.isEmpty }) {
            throw FormatError(.invalidValue, "A manifest with chunked files must have format version \(Self.chunkedFormatVersion), so that older runtimes refuse it; found \(formatVersion) with chunks in '\(files[i].path)'.", field: "files[\(i)].chunks")
        }
        let axes = try validateAxes()
        guard !catalogID.isEmpty else {
            throw FormatError(.invalidValue, "The manifest's catalog id is empty.", field: "catalogID")
        }
        guard version >= 1 else {
            throw FormatError(.invalidValue, "Version numbers start at 1; found \(version).", field: "version")
        }

        var packsByID: [String: PackRecord] = [:]
        for (i, pack) in packs.enumerated() {
            let field = "packs[\(i)]"
            guard HexDigest.isSHA256(pack.id) else {
                throw FormatError(.invalidValue, "A pack id must be 64 lowercase hex digits; found '\(pack.id)'.", field: "\(field).id")
            }
            guard packsByID.updateValue(pack, forKey: pack.id) == nil else {
                throw FormatError(.duplicate, "Pack \(pack.id) is listed twice.", field: "\(field).id")
            }
            try requireNonNegative(pack.archiveBytes, "\(field).archiveBytes")
            try requireNonNegative(pack.installedBytes, "\(field).installedBytes")
            try requireNonNegative(Int64(pack.entryCount), "\(field).entryCount")
            guard !pack.tags.isEmpty else {
                throw FormatError(.invalidValue, "Pack \(pack.id) has an empty tag set.", field: "\(field).tags")
            }
            for (axis, value) in pack.variant where axes[axis]?.contains(value) != true {
                let problem = axes[axis] == nil ? "the axis '\(axis)', which the manifest does not declare" : "'\(value)', which is not a value of the axis '\(axis)'"
                throw FormatError(.danglingReference, "Pack \(pack.id) has the variant \(problem).", field: "\(field).variant")
            }
        }

        // Every sum of distinct packs' sizes (a tag's, a request's, a store's) then fits in an Int64.
        for (key, sizes) in [("archiveBytes", packs.lazy.map(\.archiveBytes)), ("installedBytes", packs.lazy.map(\.installedBytes))]
        where sizes.checkedSum() == nil {
            throw FormatError(.invalidValue, "The packs' \(key) add up to more than \(Int64.max) bytes.", field: "packs")
        }

        var tagNames = Set<String>()
        for (i, tag) in tags.enumerated() {
            let field = "tags[\(i)]"
            if let problem = TagRecord.problem(inName: tag.name) {
                throw FormatError(.invalidValue, "Invalid tag: \(problem).", field: "\(field).name")
            }
            guard tagNames.insert(tag.name).inserted else {
                throw FormatError(.duplicate, "Tag '\(tag.name)' is listed twice.", field: "\(field).name")
            }
            guard (0...1).contains(tag.preservationPriority) else {
                throw FormatError(
                    .invalidValue,
                    "Tag '\(tag.name)' has preservation priority \(tag.preservationPriority); it must be between 0 and 1.",
                    field: "\(field).preservationPriority")
            }
            try requireNonNegative(tag.downloadBytes, "\(field).downloadBytes")
            try requireNonNegative(tag.installedBytes, "\(field).installedBytes")
            var listed = Set<String>()
            for (j, id) in tag.packs.enumerated() {
                // Once each: a pack listed twice would count twice in every sum over the tag.
                guard listed.insert(id).inserted else {
                    throw FormatError(.duplicate, "Tag '\(tag.name)' lists pack \(id) twice.", field: "\(field).packs[\(j)]")
                }
                guard let pack = packsByID[id] else {
                    throw FormatError(.danglingReference, "Tag '\(tag.name)' needs pack \(id), which the manifest does not list.", field: "\(field).packs[\(j)]")
                }
                guard pack.tags.contains(tag.name) else {
                    throw FormatError(.danglingReference, "Tag '\(tag.name)' lists pack \(id), whose tag set does not contain it.", field: "\(field).packs[\(j)]")
                }
            }
        }
        // The packs tagged with each tag, in manifest order (one pass, not one per tag: a catalog
        // of 10,000 tags and as many packs would otherwise take 10^8 steps).
        var packsTagged: [String: [PackRecord]] = [:]
        for (i, pack) in packs.enumerated() {
            for (j, name) in pack.tags.enumerated() {
                guard tagNames.contains(name) else {
                    throw FormatError(.danglingReference, "Pack \(pack.id) is tagged '\(name)', which the manifest does not define.", field: "packs[\(i)].tags[\(j)]")
                }
                packsTagged[name, default: []].append(pack)
            }
        }
        for tag in tags {
            let needed = Set(tag.packs)
            if let missing = packsTagged[tag.name]?.first(where: { !needed.contains($0.id) }) {
                throw FormatError(.danglingReference, "Pack \(missing.id) is tagged '\(tag.name)' but the tag does not list it.", field: "tags")
            }
        }
        for (key, list) in [("initialInstallTags", initialInstallTags), ("prefetchOrder", prefetchOrder)] {
            for (i, name) in list.enumerated() where !tagNames.contains(name) {
                throw FormatError(.danglingReference, "'\(name)' is not a tag of this manifest.", field: "\(key)[\(i)]")
            }
        }

        var paths: [String: Int] = [:]  // path -> position of its first file
        var entries: [String: FileRecord] = [:]  // "pack/entry" -> first file using it
        for (i, file) in files.enumerated() {
            let field = "files[\(i)]"
            if let problem = RelativePath.problem(in: file.path) {
                throw FormatError(.invalidPath, "The file path '\(file.path)' is not allowed: \(problem).", field: "\(field).path")
            }
            guard let pack = packsByID[file.pack] else {
                throw FormatError(.danglingReference, "'\(file.path)' is in pack \(file.pack), which the manifest does not list.", field: "\(field).pack")
            }
            guard file.variant == pack.variant else {
                throw FormatError(.invalidValue, "'\(file.path)' has the variant '\(file.variant.variantDescription)' but its pack has '\(pack.variant.variantDescription)'; a file's variant is its pack's.", field: "\(field).variant")
            }
            if let firstPosition = paths[file.path] {
                try checkVariantSibling(file, of: files[firstPosition], packs: packsByID, field: field)
            } else {
                paths[file.path] = i
            }
            if let problem = RelativePath.problem(in: file.entry) {
                throw FormatError(.invalidPath, "The entry name '\(file.entry)' is not allowed: \(problem).", field: "\(field).entry")
            }
            guard HexDigest.isSHA256(file.sha256) else {
                throw FormatError(.invalidValue, "A file's sha256 must be 64 lowercase hex digits.", field: "\(field).sha256")
            }
            try requireNonNegative(file.size, "\(field).size")
            try requireNonNegative(file.storedSize, "\(field).storedSize")
            try requireNonNegative(file.headerOffset, "\(field).headerOffset")
            // Subtracting, not adding: both are at most Int64.max, and a sum could overflow.
            guard file.headerOffset <= pack.archiveBytes, file.storedSize <= pack.archiveBytes - file.headerOffset else {
                throw FormatError(.invalidValue, "'\(file.path)' lies beyond the end of its pack (\(pack.archiveBytes) bytes).", field: "\(field).headerOffset")
            }
            if file.method == .stored, file.storedSize != file.size {
                throw FormatError(.invalidValue, "'\(file.path)' is stored uncompressed, so its stored size must equal its size.", field: "\(field).storedSize")
            }
            try FileChunk.validate(file.chunks, size: file.size, storedSize: file.storedSize, method: file.method, path: file.path, field: field)
            let key = file.pack + "/" + file.entry
            if let first = entries[key] {
                guard first.sha256 == file.sha256, first.size == file.size, first.storedSize == file.storedSize,
                      first.headerOffset == file.headerOffset, first.method == file.method, first.chunks == file.chunks else {
                    throw FormatError(.duplicate, "'\(file.path)' and '\(first.path)' share entry '\(file.entry)' but disagree about its content.", field: "\(field).entry")
                }
            } else {
                entries[key] = file
            }
        }
        try checkNames(of: files, firstFileAtPath: paths)
    }

    /// Checks that every name fits the folders it lands in. The version's logical paths form one
    /// tree, so none may be a folder of another (`d` beside `d/e`). A pack is installed as one
    /// folder holding each entry under its name and every other path as a hard link to its entry,
    /// so in one pack every name, entry or path, must denote one content: a path that is also an
    /// entry name of its pack must have that entry (no swapped or chained entries), and no name may
    /// be a folder of another. O(n log n) for n files.
    private func checkNames(of files: [FileRecord], firstFileAtPath paths: [String: Int]) throws(FormatError) {
        if let (folder, inside) = RelativePath.firstNesting(in: paths.keys) {
            throw FormatError(
                .invalidPath,
                "The path '\(folder)' is a file, but '\(inside)' needs a folder of that name; a version's paths must fit in one tree of folders and files.",
                field: "files[\(paths[inside] ?? 0)].path")
        }
        // Per pack: each name (entry or path) with the position of a file that has it.
        var namesByPack: [String: [String: Int]] = [:]
        // (A lookup and an insert in one statement would copy the pack's dictionary on every file.)
        for (i, file) in files.enumerated() where namesByPack[file.pack]?[file.entry] == nil {
            namesByPack[file.pack, default: [:]][file.entry] = i
        }
        for (i, file) in files.enumerated() where file.path != file.entry {
            if let other = namesByPack[file.pack]?[file.path], files[other].entry == file.path {
                throw FormatError(
                    .duplicate,
                    "'\(file.path)' has the entry '\(file.entry)', but its pack also has an entry named '\(file.path)' (of '\(files[other].path)'); in one pack a path that is an entry's name must have that entry.",
                    field: "files[\(i)].entry")
            }
            namesByPack[file.pack, default: [:]][file.path] = i
        }
        for names in namesByPack.values {
            if let (folder, inside) = RelativePath.firstNesting(in: names.keys) {
                throw FormatError(
                    .invalidPath,
                    "In pack \(files[names[folder] ?? 0].pack), '\(folder)' is a file, but '\(inside)' needs a folder of that name.",
                    field: "files[\(names[inside] ?? 0)].path")
            }
        }
    }

    /// The declared axes' values by axis name, after checking names, values and uniqueness.
    private func validateAxes() throws(FormatError) -> [String: Set<String>] {
        var axes: [String: Set<String>] = [:]
        for (i, axis) in variantAxes.enumerated() {
            let field = "variantAxes[\(i)]"
            if let problem = VariantAxis.problem(inName: axis.name, kind: "variant axis name") {
                throw FormatError(.invalidValue, "Invalid variant axis: \(problem).", field: "\(field).name")
            }
            guard axes[axis.name] == nil else {
                throw FormatError(.duplicate, "The variant axis '\(axis.name)' is declared twice.", field: "\(field).name")
            }
            guard !axis.values.isEmpty else {
                throw FormatError(.invalidValue, "The variant axis '\(axis.name)' has no values.", field: "\(field).values")
            }
            var values = Set<String>()
            for (j, value) in axis.values.enumerated() {
                if let problem = VariantAxis.problem(inName: value) {
                    throw FormatError(.invalidValue, "Invalid value of the variant axis '\(axis.name)': \(problem).", field: "\(field).values[\(j)]")
                }
                guard values.insert(value).inserted else {
                    throw FormatError(.duplicate, "The variant axis '\(axis.name)' lists '\(value)' twice.", field: "\(field).values[\(j)]")
                }
            }
            axes[axis.name] = values
        }
        return axes
    }

    /// Checks a file whose logical path an earlier file (`first`) already has: they must be variants
    /// of one asset, so a device can take either: different variants on the same axes, same tags.
    private func checkVariantSibling(_ file: FileRecord, of first: FileRecord, packs: [String: PackRecord], field: String) throws(FormatError) {
        guard file.variant != first.variant else {
            let which = file.variant.isEmpty ? "" : " with the variant '\(file.variant.variantDescription)'"
            throw FormatError(.duplicate, "The path '\(file.path)' is listed twice\(which).", field: "\(field).path")
        }
        guard Set(file.variant.keys) == Set(first.variant.keys) else {
            throw FormatError(
                .invalidValue,
                "The variants '\(first.variant.variantDescription)' and '\(file.variant.variantDescription)' of '\(file.path)' depend on different axes; every variant of one logical path names the same axes.",
                field: "\(field).variant")
        }
        guard packs[file.pack]?.tags == packs[first.pack]?.tags else {
            throw FormatError(.invalidValue, "The variants of '\(file.path)' have different tags; every variant of one logical path has the same tags.", field: "\(field).pack")
        }
    }

    private func requireNonNegative(_ value: Int64, _ field: String) throws(FormatError) {
        guard value >= 0 else {
            throw FormatError(.invalidValue, "\(field) is negative (\(value)); sizes and counts cannot be.", field: field)
        }
    }
}
