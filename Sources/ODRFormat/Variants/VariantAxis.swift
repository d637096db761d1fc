/// One way in which files may differ by device, for example `resolution` (`1x`, `2x`) or `texture`
/// (`astc`, `etc2`), as a version manifest declares it.
///
/// Files that differ only by their variant share one logical path; each device downloads the packs
/// of the values it chooses (see ``VariantPreferences``). The values are in the order the catalog's
/// author declared them, which is also the order a device that states no preference falls back in.
public struct VariantAxis: Codable, Sendable, Equatable {
    /// The axis's name, for example `resolution`.
    public var name: String
    /// The axis's values, most preferred first when a device states no preference.
    public var values: [String]

    public init(name: String, values: [String]) {
        self.name = name
        self.values = values
    }

    /// Why `name` cannot be an axis name or a variant value, or `nil` when it can.
    ///
    /// Both follow the rule for tag names (1 to 128 letters, digits, `.`, `_` and `-`), so that they
    /// are safe in file names, URLs, command lines and `axis=value` arguments; a value can never hold
    /// a path separator.
    public static func problem(inName name: String, kind: String = "variant value") -> String? {
        if name.isEmpty { return "a \(kind) is empty; use 1 to 128 letters, digits, '.', '_' and '-'" }
        if name == "." || name == ".." { return "the \(kind) '\(name)' is a path component; use 1 to 128 letters, digits, '.', '_' and '-' that are not '.' or '..'" }
        guard TagRecord.problem(inName: name) == nil else {
            return "the \(kind) '\(name.prefix(32))' may only contain 1 to 128 letters, digits, '.', '_' and '-'"
        }
        return nil
    }
}

/// The variant of a pack or a file: a value for each axis it depends on, by axis name.
///
/// An empty variant means the pack or file is the same for every device: it is *common*.
public typealias Variant = [String: String]

extension Dictionary where Key == String, Value == String {
    /// The variant as text, axes sorted by name: `resolution=2x,texture=astc`; empty when common.
    ///
    /// Used to order files that share a logical path, and in messages and reports.
    public var variantDescription: String {
        sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }
}

/// A device's choice of variant values: for each axis, the values it accepts, best first.
///
/// For an axis it names, a device accepts only the values listed, in that order: `["2x", "1x"]`
/// takes a file's `2x` variant, falls back to `1x` when a file has no `2x`, and never takes `3x`.
/// For an axis it does not name, it accepts every value in the order the manifest declares them.
/// Values a catalog does not declare are skipped, so one configuration serves catalogs with
/// different axes.
///
/// ```swift
/// let device = VariantPreferences(["resolution": ["2x", "1x"], "texture": ["astc"]])
/// let index = ManifestIndex(manifest, variants: device)
/// let tree = index.file(atPath: "Textures/tree.png")  // the 2x file, or the 1x one
/// ```
public struct VariantPreferences: Sendable, Equatable, Hashable {
    /// The accepted values by axis name, best first.
    public var values: [String: [String]]

    /// A device that states no preference: every axis falls back in the manifest's declared order.
    public init() { values = [:] }

    /// A device that accepts, for each axis named, the listed values in that order.
    public init(_ values: [String: [String]]) { self.values = values }

    /// Whether this device states no preference at all.
    public var isEmpty: Bool { values.isEmpty }

    /// The values this device accepts on `axis`, best first.
    public func ranking(of axis: VariantAxis) -> [String] {
        guard let chosen = values[axis.name] else { return axis.values }
        return chosen.filter(axis.values.contains)
    }

    /// Parses `axis=value[,value...]` arguments, as `odr fetch --variant resolution=2x,1x` takes them.
    ///
    /// An axis named twice accepts the values of both arguments, in order.
    ///
    /// - Throws: ``FormatError`` `invalid-value` naming the argument that is not `axis=value`, or
    ///   whose axis or value is not a valid name.
    public static func parse(_ arguments: [String]) throws(FormatError) -> VariantPreferences {
        var values: [String: [String]] = [:]
        for argument in arguments {
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                throw FormatError(.invalidValue, "'\(argument)' is not a variant choice; write axis=value, for example resolution=2x, or resolution=2x,1x for a fallback.")
            }
            let axis = String(parts[0])
            if let problem = VariantAxis.problem(inName: axis, kind: "variant axis") {
                throw FormatError(.invalidValue, "'\(argument)' is not a variant choice: \(problem).")
            }
            let list = parts[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            for value in list {
                if let problem = VariantAxis.problem(inName: value) {
                    throw FormatError(.invalidValue, "'\(argument)' is not a variant choice: \(problem).")
                }
            }
            values[axis, default: []].append(contentsOf: list)
        }
        return VariantPreferences(values)
    }
}
