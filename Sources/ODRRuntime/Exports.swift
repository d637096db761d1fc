// What a game needs from the format module comes with `import ODRRuntime`: the types the runtime's
// API takes and returns (`VariantPreferences`, `PublicSigningKey`, `TagRecord`, `FileRecord`, ...)
// are declared in ODRFormat, which a package depending only on the `ODRRuntime` product should not
// have to import by name.
@_exported import ODRFormat
