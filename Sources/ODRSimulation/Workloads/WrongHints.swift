/// What a wrong hint names (``Workload/script(catalog:device:days:seed:maxRequests:hintAccuracy:wrongHints:)``).
///
/// A game's wrong hint is rarely a random tag: it is the choice the player did not make. `neighbour`
/// models that, per workload; `random` is the earlier model, a tag drawn uniformly from the whole
/// catalog, kept to measure how the runtime copes with hints no better than chance.
public enum WrongHints: String, Sendable, CaseIterable, Codable {
    /// A plausible alternative: in `levels` a replay of a finished level when the player goes on, or
    /// the next new level when they replay; in `openworld` another region next to the player's; in
    /// `travel` another place near the current one.
    case neighbour
    /// A tag drawn uniformly among all the others.
    case random
}
