/// Squarified treemap layout (Bruls, Huizing and van Wijk, 2000): rectangles whose areas are
/// proportional to the weights, laid out in rows that keep them as close to squares as possible.
struct Treemap {
    /// A rectangle of the layout.
    struct Rect: Equatable {
        var x: Double
        var y: Double
        var width: Double
        var height: Double
    }

    /// Lays out `weights` (any order; non-positive weights get an empty rectangle) inside `bounds`.
    /// Returns one rectangle per weight, in the order given.
    static func layout(_ weights: [Double], in bounds: Rect) -> [Rect] {
        var result = [Rect](repeating: Rect(x: bounds.x, y: bounds.y, width: 0, height: 0), count: weights.count)
        let order = weights.indices.filter { weights[$0] > 0 }.sorted { weights[$0] > weights[$1] }
        let total = order.reduce(0.0) { $0 + weights[$1] }
        guard total > 0, bounds.width > 0, bounds.height > 0 else { return result }
        let scale = bounds.width * bounds.height / total
        var free = bounds
        var row: [Int] = []
        var rowArea = 0.0

        func worst(_ areas: [Double], sum: Double, side: Double) -> Double {
            guard let largest = areas.max(), let smallest = areas.min(), sum > 0, smallest > 0 else { return .infinity }
            let side2 = side * side, sum2 = sum * sum
            return max(side2 * largest / sum2, sum2 / (side2 * smallest))
        }
        func place() {
            guard !row.isEmpty else { return }
            if free.width >= free.height {
                // A column on the left.
                let width = free.height > 0 ? rowArea / free.height : 0
                var y = free.y
                for index in row {
                    let height = width > 0 ? weights[index] * scale / width : 0
                    result[index] = Rect(x: free.x, y: y, width: width, height: height)
                    y += height
                }
                free.x += width
                free.width = max(0, free.width - width)
            } else {
                // A row along the top.
                let height = free.width > 0 ? rowArea / free.width : 0
                var x = free.x
                for index in row {
                    let width = height > 0 ? weights[index] * scale / height : 0
                    result[index] = Rect(x: x, y: free.y, width: width, height: height)
                    x += width
                }
                free.y += height
                free.height = max(0, free.height - height)
            }
            row = []
            rowArea = 0
        }
        for index in order {
            let area = weights[index] * scale
            let side = min(free.width, free.height)
            let current = row.map { weights[$0] * scale }
            if row.isEmpty || worst(current + [area], sum: rowArea + area, side: side) <= worst(current, sum: rowArea, side: side) {
                row.append(index)
                rowArea += area
            } else {
                place()
                row = [index]
                rowArea = area
            }
        }
        place()
        return result
    }
}
