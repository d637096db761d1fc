import Foundation
import ODRBuilder
import ODRFormat
import Testing

struct VariantResolverTests {
    static let rules = """
        {"tags": {"all": ["**"]},
         "variants": [
           {"axis": "resolution", "values": ["1x", "2x", "3x"], "marker": "@", "default": "1x", "files": ["**/*.png", "**/*.ktx2"]},
           {"axis": "texture", "values": ["astc", "etc2"], "marker": ".", "files": ["**/*.ktx2"]}
         ]}
        """

    func resolver(_ json: String = rules) throws -> VariantResolver {
        VariantResolver(rules: try TagRules.parse(Data(json.utf8)).variants)
    }

    @Test func parsesTheVariantsArrayInDeclaredOrder() throws {
        let rules = try TagRules.parse(Data(Self.rules.utf8))
        #expect(rules.variants.map(\.axis) == ["resolution", "texture"])
        #expect(rules.variants.map(\.marker) == ["@", "."])
        #expect(rules.variants[0].defaultValue == "1x")
        #expect(rules.variants[1].defaultValue == nil)
        #expect(rules.variants.map(\.manifestAxis) == [
            VariantAxis(name: "resolution", values: ["1x", "2x", "3x"]), VariantAxis(name: "texture", values: ["astc", "etc2"]),
        ])
        #expect(rules.variants[1].applies(to: "Textures/tree.ktx2"))
        #expect(!rules.variants[1].applies(to: "Textures/tree.png"))
    }

    @Test(arguments: [
        ("Textures/tree@2x.png", "Textures/tree.png", ["resolution": "2x"]),
        ("Textures/tree.astc.ktx2", "Textures/tree.ktx2", ["texture": "astc"]),
        ("Textures/tree@2x.astc.ktx2", "Textures/tree.ktx2", ["resolution": "2x", "texture": "astc"]),
        ("Textures/tree.astc@2x.ktx2", "Textures/tree.ktx2", ["resolution": "2x", "texture": "astc"]),
        ("Textures/tree.png", "Textures/tree.png", [:]),
        // A marker outside the axis's files, or whose axis was read already, is part of the name.
        ("Docs/a@b.txt", "Docs/a@b.txt", [:]),
        ("Textures/my.tree.png", "Textures/my.tree.png", [:]),
        ("Textures/a@b@2x.png", "Textures/a@b.png", ["resolution": "2x"]),
        // The value comes before the final extension; a leading marker starts the name.
        ("Textures/@2x.png", "Textures/@2x.png", [:]),
        ("tree@3x.png", "tree.png", ["resolution": "3x"]),
    ])
    func readsLogicalPathAndVariantFromTheName(path: String, logical: String, variant: [String: String]) throws {
        let name = try resolver().name(of: path)
        #expect(name.logicalPath == logical)
        #expect(name.variant == variant)
    }

    @Test(arguments: [
        (["T/tree@4x.png"], BuildError.Code.unknownVariantValue, "T/tree@4x.png", ["'4x' is not a value of 'resolution'", "declared: 1x, 2x, 3x"]),
        (["T/tree.s3tc.ktx2"], .unknownVariantValue, "T/tree.s3tc.ktx2", ["'s3tc' is not a value of 'texture'"]),
        (["T/tree@.png"], .unknownVariantValue, "T/tree@.png", ["'' is not a value of 'resolution'"]),
        (["T/tree@1x@2x.png"], .repeatedVariantAxis, "T/tree@1x@2x.png", ["'resolution'", "'1x' and '2x'"]),
        (["T/tree.astc.etc2.ktx2"], .repeatedVariantAxis, "T/tree.astc.etc2.ktx2", ["'texture'"]),
        (["T/tree.ktx2", "T/tree.astc.ktx2"], .missingVariantDefault, "T/tree.ktx2", ["'T/tree.astc.ktx2'", "default"]),
        (["T/tree.png", "T/tree@1x.png"], .duplicateVariant, "T/tree@1x.png", ["'T/tree.png' and 'T/tree@1x.png'", "resolution=1x"]),
        (["T/tree.astc@2x.ktx2", "T/tree@2x.astc.ktx2"], .duplicateVariant, "T/tree@2x.astc.ktx2", ["'T/tree.astc@2x.ktx2'"]),
    ])
    func misnamedFilesAreErrorsNamingThem(paths: [String], code: BuildError.Code, file: String, phrases: [String]) throws {
        let resolver = try resolver()
        #expect { try resolver.resolve(paths) } throws: { error in
            guard let error = error as? BuildError else { return false }
            return error.code == code && error.file == file && phrases.allSatisfy { error.message.contains($0) }
        }
    }

    @Test func anUnmarkedFileTakesTheDefaultOnlyBesideMarkedSiblings() throws {
        let names = try resolver().resolve([
            "T/tree.png", "T/tree@2x.png", "T/grass.png", "T/rock@3x.png", "T/bark.ktx2", "T/bark@2x.ktx2",
        ])
        #expect(names["T/tree.png"] == .init(logicalPath: "T/tree.png", variant: ["resolution": "1x"]))
        #expect(names["T/tree@2x.png"] == .init(logicalPath: "T/tree.png", variant: ["resolution": "2x"]))
        #expect(names["T/grass.png"] == .init(logicalPath: "T/grass.png"))
        #expect(names["T/rock@3x.png"] == .init(logicalPath: "T/rock.png", variant: ["resolution": "3x"]))
        #expect(names["T/bark.ktx2"]?.variant == ["resolution": "1x"])
    }

    struct RulesCase: Sendable, CustomStringConvertible {
        var variants: String
        var code: BuildError.Code
        var key: String
        var description: String { "\(code) \(key)" }
    }

    @Test(arguments: [
        RulesCase(variants: #"[{"axis": "r", "values": ["1x", "../x"], "marker": "@"}]"#, code: .invalidVariantName, key: "variants[0].values[1]"),
        RulesCase(variants: #"[{"axis": "r", "values": ["1x", "a/b"], "marker": "@"}]"#, code: .invalidVariantName, key: "variants[0].values[1]"),
        RulesCase(variants: #"[{"axis": "r", "values": [""], "marker": "@"}]"#, code: .invalidVariantName, key: "variants[0].values[0]"),
        RulesCase(variants: #"[{"axis": "r", "values": [".."], "marker": "@"}]"#, code: .invalidVariantName, key: "variants[0].values[0]"),
        RulesCase(variants: #"[{"axis": "r/s", "values": ["1x"], "marker": "@"}]"#, code: .invalidVariantName, key: "variants[0].axis"),
        RulesCase(variants: #"[{"axis": "r", "values": ["1x", "1x"], "marker": "@"}]"#, code: .invalidValue, key: "variants[0].values[1]"),
        RulesCase(variants: #"[{"axis": "r", "values": [], "marker": "@"}]"#, code: .invalidValue, key: "variants[0].values"),
        RulesCase(variants: #"[{"axis": "r", "values": ["1x"], "marker": "@", "default": "2x"}]"#, code: .invalidValue, key: "variants[0].default"),
        RulesCase(variants: #"[{"axis": "r", "values": ["1x"], "marker": "@@"}]"#, code: .invalidValue, key: "variants[0].marker"),
        RulesCase(variants: #"[{"axis": "r", "values": ["1x"], "marker": "x"}]"#, code: .invalidValue, key: "variants[0].marker"),
        RulesCase(variants: #"[{"axis": "r", "values": ["1x"], "marker": "/"}]"#, code: .invalidValue, key: "variants[0].marker"),
        RulesCase(variants: #"[{"axis": "r", "values": ["1x"]}]"#, code: .missingKey, key: "variants[0].marker"),
        RulesCase(variants: #"[{"axis": "r", "values": ["1x"], "marker": "@", "colour": 1}]"#, code: .unknownKey, key: "variants[0].colour"),
        RulesCase(variants: #"[{"axis": "r", "values": ["1x"], "marker": "@", "files": ["/abs"]}]"#, code: .invalidGlob, key: "variants[0].files[0]"),
        RulesCase(variants: #"[{"axis": "r", "values": ["1x"], "marker": "@"}, {"axis": "r", "values": ["2x"], "marker": "."}]"#, code: .invalidValue, key: "variants[1].axis"),
        RulesCase(variants: #"[{"axis": "r", "values": ["v1.5"], "marker": "@"}, {"axis": "t", "values": ["astc"], "marker": "."}]"#, code: .invalidValue, key: "variants[0].values[0]"),
        RulesCase(variants: #"[{"axis": "r", "values": ["hd"], "marker": "@"}, {"axis": "t", "values": ["hd"], "marker": "@"}]"#, code: .invalidValue, key: "variants[1].values[0]"),
        RulesCase(variants: #"{"axis": "r"}"#, code: .invalidValue, key: "variants"),
    ])
    func badVariantDeclarationsAreErrorsNamingTheKey(_ rulesCase: RulesCase) throws {
        let json = #"{"tags": {"a": ["A"]}, "variants": "# + rulesCase.variants + "}"
        #expect { try TagRules.parse(Data(json.utf8)) } throws: { error in
            guard let error = error as? BuildError else { return false }
            return error.code == rulesCase.code && error.key == rulesCase.key
        }
    }
}
