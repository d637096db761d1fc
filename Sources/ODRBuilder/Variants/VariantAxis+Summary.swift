import ODRFormat

extension Array where Element == VariantAxis {
    /// The axes for reports: `resolution (1x, 2x); texture (astc, etc2)`.
    var summary: String {
        map { "\($0.name) (\($0.values.joined(separator: ", ")))" }.joined(separator: "; ")
    }
}
