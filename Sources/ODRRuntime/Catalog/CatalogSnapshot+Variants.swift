import ODRFormat

extension CatalogSnapshot {
    /// The device's choice of variants this snapshot resolves paths and tags for.
    public var variants: VariantPreferences { lookup.variants }

    /// Checks that every axis and value of the device's choice of variants is one this version
    /// declares.
    ///
    /// The runtime itself skips what a catalog does not declare, so one configuration serves
    /// catalogs with different axes; a tool that takes a choice from a person (`odr fetch
    /// --variant`) calls this so that a typo is an error rather than a silent fallback.
    ///
    /// ```swift
    /// let snapshot = try await manager.loadCatalog()
    /// try snapshot.requireDeclaredVariants()   // "resoluton=2x" -> invalid-argument
    /// ```
    ///
    /// - Throws: ``ResourceError`` `invalid-argument` naming the undeclared axis or value and
    ///   listing the axes and values the version declares.
    public func requireDeclaredVariants() throws(ResourceError) {
        let axes = manifest.variantAxes
        let declared = axes.isEmpty ? "it declares no variant axes"
            : "it declares " + axes.map { "\($0.name) (\($0.values.joined(separator: ", ")))" }.joined(separator: "; ")
        for (name, values) in variants.values.sorted(by: { $0.key < $1.key }) {
            guard let axis = axes.first(where: { $0.name == name }) else {
                throw ResourceError(.invalidArgument, "The catalog (version \(version)) has no variant axis '\(name)': \(declared). Choose values of those axes, or drop the choice for '\(name)'.",
                                    url: catalogURL)
            }
            if let value = values.first(where: { !axis.values.contains($0) }) {
                throw ResourceError(.invalidArgument, "The catalog (version \(version)) has no value '\(value)' on the variant axis '\(name)': \(declared). Choose among \(axis.values.joined(separator: ", ")).",
                                    url: catalogURL)
            }
        }
    }
}
