import ODRFormat

/// One variant axis as the rules file declares it: its values, how file names mark them, and the
/// files it applies to.
///
/// A file's variant value is written at the end of its base name, before its final extension,
/// after the axis's marker: with the marker `@`, `Textures/tree@2x.png` is the `2x` variant of the
/// logical path `Textures/tree.png`; with the marker `.`, `Textures/tree.astc.ktx2` is the `astc`
/// variant of `Textures/tree.ktx2`. ``VariantResolver`` reads names with these rules.
///
/// ```json
/// "variants": [
///   { "axis": "resolution", "values": ["1x", "2x"], "marker": "@", "default": "1x", "files": ["**/*.png"] }
/// ]
/// ```
public struct VariantRule: Sendable, Equatable {
    /// The axis's name, for example `resolution`.
    public var axis: String
    /// The axis's values in declared order (the order a device without a preference falls back in).
    public var values: [String]
    /// The character that introduces a value in a file name (`@` in `tree@2x.png`).
    public var marker: Character
    /// The value an unmarked file takes when its logical path also has marked variants; `nil` makes
    /// such a file a build error.
    public var defaultValue: String?
    /// The files the axis applies to, matched against their paths in the assets folder; empty for
    /// every file.
    public var files: [GlobPattern]

    /// Creates a rule.
    public init(axis: String, values: [String], marker: Character, defaultValue: String? = nil, files: [GlobPattern] = []) {
        self.axis = axis
        self.values = values
        self.marker = marker
        self.defaultValue = defaultValue
        self.files = files
    }

    /// Whether file names at `path` may carry a value of this axis.
    public func applies(to path: String) -> Bool {
        files.isEmpty || files.contains { $0.matches(path) }
    }

    /// The axis as a version manifest declares it.
    public var manifestAxis: VariantAxis { VariantAxis(name: axis, values: values) }

    /// Why `marker` cannot mark variant values, or `nil` when it can: a marker is one character
    /// that is neither a letter, a digit, white space nor a path separator.
    static func problem(inMarker marker: String) -> String? {
        guard marker.count == 1, let character = marker.first else {
            return "a marker is exactly one character, such as \"@\" or \".\""
        }
        if character.isLetter || character.isNumber || character.isWhitespace || character == "/" || character == "\\" {
            return "a marker cannot be a letter, a digit, white space or a path separator; use a character such as \"@\", \".\" or \"_\""
        }
        return nil
    }
}
